#ifndef NEARBY_CNEARBYSYSTEM_H
#define NEARBY_CNEARBYSYSTEM_H
// Linux system calls that Glibc's Swift overlay does not export (epoll, eventfd) and thin
// wrappers for variadic or packed-struct APIs that Swift cannot call directly.
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// epoll's struct is packed on x86_64; these wrappers use an unpacked one.
typedef struct {
  uint32_t events;
  uint64_t data;
} nearby_epoll_event;

extern const uint32_t NEARBY_EPOLLIN;
extern const uint32_t NEARBY_EPOLLOUT;
extern const uint32_t NEARBY_EPOLLERR;
extern const uint32_t NEARBY_EPOLLHUP;
extern const uint32_t NEARBY_EPOLLRDHUP;
extern const int NEARBY_EPOLL_CTL_ADD;
extern const int NEARBY_EPOLL_CTL_MOD;
extern const int NEARBY_EPOLL_CTL_DEL;

/// epoll_create1(EPOLL_CLOEXEC)
int nearby_epoll_create(void);
int nearby_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
int nearby_epoll_wait(int epfd, nearby_epoll_event *events, int max_events, int timeout_ms);

/// eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)
int nearby_eventfd(void);
/// Adds 1 to the counter (wakes the loop). Returns 0 or -1 with errno.
int nearby_eventfd_signal(int fd);
/// Resets the counter. Returns 0 or -1 with errno.
int nearby_eventfd_drain(int fd);

/// timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)
int nearby_timerfd(void);
/// Arms the timer to fire at `deadline` (CLOCK_MONOTONIC nanoseconds; one in the past fires
/// at once), or disarms it when `deadline` is 0. Returns 0 or -1 with errno. (Read the fd
/// with nearby_eventfd_drain, which reads its 8-byte counter the same way.)
int nearby_timerfd_arm(int fd, uint64_t deadline);

/// ioctl(fd, TIOCGWINSZ): the terminal size. Returns 0 or -1 with errno.
int nearby_terminal_size(int fd, uint16_t *rows, uint16_t *columns);

/// fcntl(fd, F_SETFL, flags | O_NONBLOCK)
int nearby_set_nonblocking(int fd);
/// fcntl(fd, F_SETFD, FD_CLOEXEC)
int nearby_set_cloexec(int fd);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC.
int nearby_accept(int fd, void *address, uint32_t *length);

/// Names the calling thread (at most 15 bytes are kept).
int nearby_set_thread_name(const char *name);

/// Asks the kernel to SIGKILL this process when its parent exits.
int nearby_die_with_parent(void);

/// Write-behind for a file being received: starts writing `length` bytes at `offset` to the
/// disk (sync_file_range SYNC_FILE_RANGE_WRITE) and, when `wait_length` is above 0, first
/// waits until the range at `wait_offset` has been written (so that at most about two ranges
/// are dirty, and the final fsync has little left). A file system without writeback (tmpfs)
/// returns at once. Returns 0 or -1 with errno.
int nearby_write_behind(int fd, int64_t offset, int64_t length, int64_t wait_offset, int64_t wait_length);

/// The number of open file descriptors of this process (counts /proc/self/fd).
int nearby_open_fd_count(void);

/// Pins every thread of this process to CPU `cpu`; threads created afterwards inherit it
/// (benchmarks: two ends that share one CPU). Returns 0, or -1 with errno.
int nearby_pin_process(int cpu);

/// Gives every thread of this process the CPUs it had before the first nearby_pin_process.
int nearby_unpin_process(void);

/// The CPU the calling thread runs on (sched_getcpu), or -1.
int nearby_current_cpu(void);
/// How many CPUs the calling thread may run on (sched_getaffinity); -1 on failure.
int nearby_allowed_cpus(void);

/// Pins the calling thread alone to CPU `cpu` (benchmarks: two ends kept on separate CPUs).
/// Returns 0, or -1 with errno.
int nearby_pin_thread(int cpu);

/// The resident set size of this process in bytes (from /proc/self/statm), or -1.
long long nearby_resident_bytes(void);

/// Blocks `signals` (a zero-terminated list) in the calling thread (and so in threads it
/// creates later) and returns a signalfd that reads them, or -1 with errno. A thread that
/// does not block them (libdispatch's main thread under Swift's async main) may still get
/// them: a handler then forwards them to `nearby_signalfd_read` through a pipe. Signals
/// ignored when this is called stay ignored.
int nearby_signalfd(const int *signals);
/// Reads one signal from a signalfd, or one forwarded by the handler (blocking). Returns
/// its number, or -1 with errno.
int nearby_signalfd_read(int fd);
/// Catches `signals` (a zero-terminated list; those ignored now, like SIGINT in a background
/// job, stay ignored) with a handler that writes each signal's number to a pipe, and returns
/// the pipe's read end, or -1 with errno. Once per process. Unlike signalfd this works when
/// some thread has the signals unblocked: libdispatch parks the main thread of an async
/// `main` in sigsuspend with an empty mask.
int nearby_signal_pipe(const int *signals);
/// Reads one signal from that pipe (blocking). Returns its number, or -1 at end or error.
int nearby_signal_pipe_read(int fd);
/// Unblocks every signal in the calling thread.
void nearby_unblock_all_signals(void);

/// Saves the settings of the terminal on `input` and puts it in raw mode: no echo, no line
/// editing, no signals from Ctrl-C/Ctrl-Z (they arrive as bytes); output processing stays.
/// From then on the settings are restored (and `output` gets SGR reset, autowrap on,
/// cursor visible) at exit and on fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP,
/// SIGABRT), before the previous handlers run. Returns 0 or -1 with errno.
int nearby_terminal_enter_raw(int input, int output);
/// Restores the saved terminal settings now (idempotent; async-signal-safe).
void nearby_terminal_restore(void);
/// Restores the terminal, stops the process group (SIGTSTP) and, once continued, enters
/// raw mode again. Returns 0 or -1 with errno.
int nearby_terminal_suspend(void);

// Namespaces and mounts for the private-LAN harness (NearbyLab). Each returns 0 or -1 with
// errno unless it says otherwise.

extern const int NEARBY_CLONE_NEWNET;
extern const int NEARBY_CLONE_NEWNS;
extern const int NEARBY_CLONE_NEWUSER;
/// posix_spawnattr flag that makes the child a session leader (setsid), a GNU extension.
extern const short NEARBY_POSIX_SPAWN_SETSID;
/// posix_spawn_file_actions_addclosefrom_np(actions, lowest): the child closes every
/// descriptor from `lowest` up (glibc 2.34). `actions` is a posix_spawn_file_actions_t.
int nearby_spawn_actions_close_from(void *actions, int lowest);

/// unshare(flags): the calling thread (and what it executes) gets new namespaces.
int nearby_unshare(int flags);
/// setns(fd, nstype): the calling thread joins the namespace `fd` refers to.
int nearby_setns(int fd, int nstype);
/// mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL): no mount event propagates out of (or
/// into) this mount namespace.
int nearby_make_mounts_private(void);
/// mount("tmpfs" named `source`, `target`, "tmpfs", 0, `options`).
int nearby_mount_tmpfs(const char *source, const char *target, const char *options);
/// mount(`source`, `target`, NULL, MS_BIND, NULL). `source` is used as given (a
/// /proc/self/fd/N path works).
int nearby_bind_mount(const char *source, const char *target);
/// Detaches /sys and mounts a sysfs of the current network namespace there (what
/// `ip netns exec` does).
int nearby_remount_sysfs(void);
/// Writes `text` to `file` from a short-lived thread that first joins the network namespace
/// at `netns_path` (for /proc/sys/net files of another namespace). Waits for that thread.
int nearby_write_in_netns(const char *netns_path, const char *file, const char *text);
/// Creates socket(domain, type, 0) from a short-lived thread that first joins the network
/// namespace at `netns_path`: the socket belongs to that namespace. Returns the descriptor
/// (close-on-exec) or -1 with errno.
int nearby_socket_in_netns(const char *netns_path, int domain, int type);
/// Forks a child that tries unshare(flags) and exits. Returns 1 when it worked, 0 when it
/// was refused, -1 with errno when the child could not be started or waited for.
int nearby_probe_unshare(int flags);
/// pipe2(fds, O_CLOEXEC): both ends close on exec, atomically (no child started meanwhile by
/// another thread can inherit them).
int nearby_pipe_cloexec(int fds[2]);
/// Maps uid/gid 0 of a new user namespace (made by this thread) to `uid`/`gid` outside.
int nearby_map_root(unsigned int uid, unsigned int gid);

#ifdef __cplusplus
}
#endif
#endif
