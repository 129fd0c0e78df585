#define _GNU_SOURCE
#include "CNearbySystem.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

const int NEARBY_CLONE_NEWNET = CLONE_NEWNET;
const int NEARBY_CLONE_NEWNS = CLONE_NEWNS;
const int NEARBY_CLONE_NEWUSER = CLONE_NEWUSER;
const short NEARBY_POSIX_SPAWN_SETSID = POSIX_SPAWN_SETSID;

int nearby_unshare(int flags) { return unshare(flags); }

int nearby_setns(int fd, int nstype) { return setns(fd, nstype); }

int nearby_make_mounts_private(void) { return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL); }

int nearby_mount_tmpfs(const char *source, const char *target, const char *options) {
  return mount(source, target, "tmpfs", 0, options);
}

int nearby_bind_mount(const char *source, const char *target) { return mount(source, target, NULL, MS_BIND, NULL); }

int nearby_remount_sysfs(void) {
  if (umount2("/sys", MNT_DETACH) != 0 && errno != EINVAL) return -1;
  return mount("sysfs", "/sys", "sysfs", 0, NULL);
}

static int write_all(int fd, const char *text) {
  size_t length = strlen(text), done = 0;
  while (done < length) {
    ssize_t written = write(fd, text + done, length - done);
    if (written < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    done += (size_t)written;
  }
  return 0;
}

// A thread's network namespace is its own: joining one in a helper thread leaves the
// process's other threads where they are, and the helper's work (an open file, a socket)
// happens in the joined namespace.
struct netns_job {
  const char *netns_path;
  const char *file;
  const char *text;
  int domain, type;
  int result;
  int error;
};

static int join_netns(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int result = setns(fd, CLONE_NEWNET);
  int saved = errno;
  close(fd);
  errno = saved;
  return result;
}

static void *write_job(void *context) {
  struct netns_job *job = context;
  job->result = -1;
  if (join_netns(job->netns_path) != 0) {
    job->error = errno;
    return NULL;
  }
  int fd = open(job->file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    job->error = errno;
    return NULL;
  }
  job->result = write_all(fd, job->text);
  job->error = errno;
  close(fd);
  return NULL;
}

static void *socket_job(void *context) {
  struct netns_job *job = context;
  job->result = -1;
  if (join_netns(job->netns_path) != 0) {
    job->error = errno;
    return NULL;
  }
  job->result = socket(job->domain, job->type | SOCK_CLOEXEC, 0);
  job->error = errno;
  return NULL;
}

static int run_job(void *(*body)(void *), struct netns_job *job) {
  pthread_t thread;
  int created = pthread_create(&thread, NULL, body, job);
  if (created != 0) {
    errno = created;
    return -1;
  }
  pthread_join(thread, NULL);
  errno = job->error;
  return job->result;
}

int nearby_write_in_netns(const char *netns_path, const char *file, const char *text) {
  struct netns_job job = {.netns_path = netns_path, .file = file, .text = text};
  return run_job(write_job, &job);
}

int nearby_socket_in_netns(const char *netns_path, int domain, int type) {
  struct netns_job job = {.netns_path = netns_path, .domain = domain, .type = type};
  return run_job(socket_job, &job);
}

int nearby_probe_unshare(int flags) {
  // Only async-signal-safe calls in the child of a possibly multithreaded process.
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(unshare(flags) == 0 ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int result = write_all(fd, text);
  int saved = errno;
  close(fd);
  errno = saved;
  return result;
}

int nearby_map_root(unsigned int uid, unsigned int gid) {
  char line[64];
  snprintf(line, sizeof line, "0 %u 1\n", uid);
  if (write_file("/proc/thread-self/uid_map", line) != 0) return -1;
  // gid_map may only be written once setgroups is denied (unprivileged user namespaces).
  if (write_file("/proc/thread-self/setgroups", "deny") != 0 && errno != ENOENT) return -1;
  snprintf(line, sizeof line, "0 %u 1\n", gid);
  return write_file("/proc/thread-self/gid_map", line);
}

int nearby_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
