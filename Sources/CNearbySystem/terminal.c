// Raw mode for the terminal chat, and putting the terminal back however the process ends.
#define _GNU_SOURCE
#include "CNearbySystem.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved_settings;
static int input_fd = -1;
static int output_fd = -1;
static volatile sig_atomic_t raw_active = 0;
static int handlers_installed = 0;
static struct sigaction previous_actions[NSIG];
static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, 0};
// SGR reset, bracketed paste off, autowrap on, cursor visible.
static const char reset_sequence[] = "\033[0m\033[?2004l\033[?7h\033[?25h";

static int apply_raw(void) {
  struct termios raw = saved_settings;
  raw.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INLCR | IGNCR | INPCK | ISTRIP | IXON);
  raw.c_lflag &= ~(tcflag_t)(ECHO | ICANON | ISIG | IEXTEN);
  raw.c_cflag |= CS8;
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  int result;
  do {
    result = tcsetattr(input_fd, TCSADRAIN, &raw);
  } while (result != 0 && errno == EINTR);
  if (result == 0) raw_active = 1;
  return result;
}

// Only async-signal-safe calls: this also runs in signal handlers.
static void restore(int when) {
  if (!raw_active) return;
  raw_active = 0;
  tcsetattr(input_fd, when, &saved_settings);
  ssize_t ignored = write(output_fd, reset_sequence, sizeof reset_sequence - 1);
  (void)ignored;
}

static void restore_at_exit(void) { restore(TCSADRAIN); }

static void on_fatal_signal(int signal, siginfo_t *info, void *context) {
  (void)context;
  restore(TCSANOW);
  sigaction(signal, &previous_actions[signal], NULL);
  // Sent by kill, raise or abort: send it again, to the previous handler, once this one
  // returns. A fault (si_code > 0) happens again when the instruction is retried.
  if (info == NULL || info->si_code <= 0) raise(signal);
}

static void install_handlers(void) {
  if (handlers_installed) return;
  handlers_installed = 1;
  atexit(restore_at_exit);
  for (const int *signal = fatal_signals; *signal; signal++) {
    struct sigaction action = {0};
    action.sa_sigaction = on_fatal_signal;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    sigaction(*signal, &action, &previous_actions[*signal]);
  }
}

int nearby_terminal_enter_raw(int input, int output) {
  if (raw_active) return 0;
  if (tcgetattr(input, &saved_settings) != 0) return -1;
  input_fd = input;
  output_fd = output;
  install_handlers();
  return apply_raw();
}

void nearby_terminal_restore(void) { restore(TCSADRAIN); }

int nearby_terminal_suspend(void) {
  if (!raw_active) return -1;
  restore(TCSADRAIN);
  kill(0, SIGTSTP);  // stops the process group here until it is continued
  return apply_raw();
}
