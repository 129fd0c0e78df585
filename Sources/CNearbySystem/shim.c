#define _GNU_SOURCE
#include "CNearbySystem.h"

#include <dirent.h>
#include <spawn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

const uint32_t NEARBY_EPOLLIN = EPOLLIN;
const uint32_t NEARBY_EPOLLOUT = EPOLLOUT;
const uint32_t NEARBY_EPOLLERR = EPOLLERR;
const uint32_t NEARBY_EPOLLHUP = EPOLLHUP;
const uint32_t NEARBY_EPOLLRDHUP = EPOLLRDHUP;
const int NEARBY_EPOLL_CTL_ADD = EPOLL_CTL_ADD;
const int NEARBY_EPOLL_CTL_MOD = EPOLL_CTL_MOD;
const int NEARBY_EPOLL_CTL_DEL = EPOLL_CTL_DEL;

int nearby_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int nearby_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
  struct epoll_event event = {.events = events, .data = {.u64 = data}};
  return epoll_ctl(epfd, op, fd, &event);
}

int nearby_epoll_wait(int epfd, nearby_epoll_event *events, int max_events, int timeout_ms) {
  struct epoll_event raw[256];
  if (max_events > 256) max_events = 256;
  int count = epoll_wait(epfd, raw, max_events, timeout_ms);
  for (int i = 0; i < count; i++) {
    events[i].events = raw[i].events;
    events[i].data = raw[i].data.u64;
  }
  return count;
}

int nearby_eventfd(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int nearby_timerfd(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); }

int nearby_timerfd_arm(int fd, uint64_t deadline) {
  struct itimerspec spec = {0};
  if (deadline != 0) {
    spec.it_value.tv_sec = (time_t)(deadline / 1000000000u);
    spec.it_value.tv_nsec = (long)(deadline % 1000000000u);
  }
  return timerfd_settime(fd, deadline != 0 ? TFD_TIMER_ABSTIME : 0, &spec, NULL);
}

int nearby_eventfd_signal(int fd) {
  uint64_t one = 1;
  ssize_t written;
  do {
    written = write(fd, &one, sizeof one);
  } while (written < 0 && errno == EINTR);
  // EAGAIN means the counter is already huge: the loop will wake anyway.
  return (written < 0 && errno != EAGAIN) ? -1 : 0;
}

int nearby_eventfd_drain(int fd) {
  uint64_t value;
  ssize_t got;
  do {
    got = read(fd, &value, sizeof value);
  } while (got < 0 && errno == EINTR);
  return (got < 0 && errno != EAGAIN) ? -1 : 0;
}

int nearby_terminal_size(int fd, uint16_t *rows, uint16_t *columns) {
  struct winsize size;
  if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
  *rows = size.ws_row;
  *columns = size.ws_col;
  return 0;
}

int nearby_set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return -1;
  return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int nearby_set_cloexec(int fd) { return fcntl(fd, F_SETFD, FD_CLOEXEC); }

int nearby_accept(int fd, void *address, uint32_t *length) {
  socklen_t len = *length;
  int result = accept4(fd, (struct sockaddr *)address, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  *length = len;
  return result;
}

int nearby_open_fd_count(void) {
  DIR *dir = opendir("/proc/self/fd");
  if (!dir) return -1;
  int count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] != '.') count++;
  }
  closedir(dir);
  return count - 1;  // the directory stream's own descriptor
}

// The CPUs the process might use before nearby_pin_process, for nearby_unpin_process.
static cpu_set_t unpinned_cpus;
static int has_unpinned_cpus = 0;

// Sets `cpus` on every thread listed in /proc/self/task. Threads that end meanwhile are skipped.
static int set_affinity_of_all_threads(const cpu_set_t *cpus) {
  DIR *dir = opendir("/proc/self/task");
  if (!dir) return -1;
  int result = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] == '.') continue;
    pid_t tid = (pid_t)atoi(entry->d_name);
    if (sched_setaffinity(tid, sizeof(cpu_set_t), cpus) != 0 && errno != ESRCH) result = -1;
  }
  closedir(dir);
  return result;
}

int nearby_pin_process(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    errno = EINVAL;
    return -1;
  }
  if (!has_unpinned_cpus) {
    if (sched_getaffinity(0, sizeof(cpu_set_t), &unpinned_cpus) != 0) return -1;
    has_unpinned_cpus = 1;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return set_affinity_of_all_threads(&one);
}

int nearby_current_cpu(void) { return sched_getcpu(); }

int nearby_allowed_cpus(void) {
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof(cpu_set_t), &cpus) != 0) return -1;
  return CPU_COUNT(&cpus);
}

int nearby_pin_thread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) {
    errno = EINVAL;
    return -1;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof(cpu_set_t), &one);
}

int nearby_unpin_process(void) {
  if (!has_unpinned_cpus) return 0;
  return set_affinity_of_all_threads(&unpinned_cpus);
}

int nearby_write_behind(int fd, int64_t offset, int64_t length, int64_t wait_offset, int64_t wait_length) {
  if (wait_length > 0) {
    unsigned int flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER;
    if (sync_file_range(fd, wait_offset, wait_length, flags) != 0) return -1;
  }
  return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

long long nearby_resident_bytes(void) {
  FILE *file = fopen("/proc/self/statm", "r");
  if (!file) return -1;
  long long size, resident;
  int matched = fscanf(file, "%lld %lld", &size, &resident);
  fclose(file);
  if (matched != 2) return -1;
  return resident * sysconf(_SC_PAGESIZE);
}

int nearby_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }

// Under Swift's async main, libdispatch parks the main thread in sigsuspend with an empty
// mask (dispatch_main), so the kernel delivers process signals there instead of leaving them
// pending for the signalfd: SIGWINCH was dropped and SIGTERM killed the process outright. A
// handler forwards what arrives that way through a pipe that the signalfd reader also reads.
static int forwarded_signals[2] = {-1, -1};

static void forward_signal(int signal) {
  int saved_errno = errno;
  unsigned char byte = (unsigned char)signal;
  ssize_t ignored = write(forwarded_signals[1], &byte, 1);
  (void)ignored;
  errno = saved_errno;
}

int nearby_signalfd(const int *signals) {
  sigset_t set;
  sigemptyset(&set);
  for (const int *s = signals; *s; s++) sigaddset(&set, *s);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) return -1;
  if (forwarded_signals[0] < 0 && pipe2(forwarded_signals, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
  for (const int *s = signals; *s; s++) {
    struct sigaction current;
    // A signal ignored by whoever started us (nohup) stays ignored.
    if (sigaction(*s, NULL, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    struct sigaction action = {0};
    action.sa_handler = forward_signal;
    action.sa_flags = SA_RESTART;
    sigfillset(&action.sa_mask);
    sigaction(*s, &action, NULL);
  }
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int nearby_signalfd_read(int fd) {
  for (;;) {
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = forwarded_signals[0], .events = POLLIN}};
    int ready = poll(fds, forwarded_signals[0] < 0 ? 1 : 2, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (fds[0].revents & (POLLERR | POLLNVAL)) return -1;
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo info;
      ssize_t got = read(fd, &info, sizeof info);
      if (got == (ssize_t)sizeof info) return (int)info.ssi_signo;
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      return -1;
    }
    if (fds[1].revents & POLLIN) {
      unsigned char byte;
      ssize_t got = read(forwarded_signals[0], &byte, 1);
      if (got == 1) return byte;
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      return -1;
    }
  }
}

static int nearby_signal_pipe_writer = -1;

static void nearby_signal_handler(int signo) {
  int saved = errno;
  unsigned char byte = (unsigned char)signo;
  ssize_t ignored = write(nearby_signal_pipe_writer, &byte, 1);  // full pipe: drop it
  (void)ignored;
  errno = saved;
}

int nearby_signal_pipe(const int *signals) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  if (fcntl(fds[1], F_SETFL, O_NONBLOCK) != 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  nearby_signal_pipe_writer = fds[1];
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = nearby_signal_handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigset_t set;
  sigemptyset(&set);
  for (const int *s = signals; *s; s++) {
    struct sigaction current;
    if (sigaction(*s, NULL, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaction(*s, &action, NULL);
    sigaddset(&set, *s);
  }
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  return fds[0];
}

int nearby_signal_pipe_read(int fd) {
  unsigned char byte;
  ssize_t got;
  do {
    got = read(fd, &byte, 1);
  } while (got < 0 && errno == EINTR);
  return got == 1 ? (int)byte : -1;
}

void nearby_unblock_all_signals(void) {
  sigset_t set;
  sigemptyset(&set);
  pthread_sigmask(SIG_SETMASK, &set, NULL);
}

#include <sys/prctl.h>
int nearby_die_with_parent(void) { return prctl(PR_SET_PDEATHSIG, SIGKILL); }

int nearby_spawn_actions_close_from(void *actions, int lowest) {
  return posix_spawn_file_actions_addclosefrom_np((posix_spawn_file_actions_t *)actions, lowest);
}
