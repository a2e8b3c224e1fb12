/*
 * A pod's user namespace and the network namespace it owns, made before anything runs in them.
 * scripts/setup.sh builds it into helpers/bin/pod-userns.
 *
 * Usage:
 *   pod-userns USERNS_FILE NETNS_FILE HOST_UID HOST_GID SIZE
 *       A child unshares a new user namespace and a network namespace (one unshare(2), so the
 *       user namespace owns the network namespace) and sets `lo` up in it; this process writes
 *       the child's uid and gid maps ("0 HOST_UID SIZE", "0 HOST_GID SIZE") and bind-mounts its
 *       namespace files onto USERNS_FILE and NETNS_FILE (existing files), which keep both
 *       namespaces alive; then the child exits. No process stays behind. All or nothing: on a failure the bind mounts
 *       already made are undone.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage; 3 the kernel lacks user
 * namespaces or has them turned off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "loopback-up.h"
#include "ns-child.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3 };

static int parse_id(const char *text, unsigned long *out) {
  char *end;
  errno = 0;
  unsigned long value = strtoul(text, &end, 10);
  if (errno != 0 || *text == '\0' || *end != '\0' || value > 0xffffffffUL) return -1;
  *out = value;
  return 0;
}

static int write_map(pid_t pid, const char *which, unsigned long host, unsigned long size) {
  char path[64];
  char map[64];
  snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, which);
  int len = snprintf(map, sizeof map, "0 %lu %lu\n", host, size);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, map, (size_t)len) != len) {
    fprintf(stderr, "writing %s (%.*s): %s\n", path, len - 1, map, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

static int bind_ns(pid_t pid, const char *kind, const char *target) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, kind);
  if (mount(path, target, NULL, MS_BIND, NULL) < 0) {
    fprintf(stderr, "bind-mounting %s onto %s: %s\n", path, target, strerror(errno));
    return -1;
  }
  return 0;
}

/*
 * The child: unshares, sets `lo` up (root of the new user namespace, it may), reports the errno
 * (0 for success; -1 when lo could not be set up, said on stderr).
 */
static void child(void *arg, int report) {
  (void)arg;
  int err = unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0 ? errno : 0;
  if (err == 0 && loopback_up() < 0) err = -1;
  if (write(report, &err, sizeof err) != sizeof err) _exit(1);
}

int main(int argc, char **argv) {
  unsigned long uid, gid, size;
  if (argc != 6 || parse_id(argv[3], &uid) < 0 || parse_id(argv[4], &gid) < 0 || parse_id(argv[5], &size) < 0 || size == 0) {
    fprintf(stderr, "usage: pod-userns USERNS_FILE NETNS_FILE HOST_UID HOST_GID SIZE\n");
    return EXIT_USAGE;
  }
  const char *userns_file = argv[1];
  const char *netns_file = argv[2];
  struct ns_child c;
  if (ns_child_start(&c, child, NULL) < 0) return EXIT_FAILED;
  pid_t pid = c.pid;

  int status = EXIT_FAILED;
  int err;
  int users_bound = 0;
  if (ns_child_read(&c, &err, sizeof err) < 0) {
    fprintf(stderr, "the namespace child exited before it unshared\n");
  } else if (err == -1) {
    /* The child said why. */
  } else if (err != 0) {
    if (err == EINVAL || err == ENOSYS) {
      fprintf(stderr, "the kernel lacks user namespaces (CONFIG_USER_NS): unshare(CLONE_NEWUSER|CLONE_NEWNET): %s\n", strerror(err));
      status = EXIT_UNSUPPORTED;
    } else if (err == ENOSPC || err == EPERM) {
      fprintf(stderr, "the kernel refuses a new user namespace (is user.max_user_namespaces 0, or are user namespaces restricted?): unshare(CLONE_NEWUSER|CLONE_NEWNET): %s\n", strerror(err));
      status = EXIT_UNSUPPORTED;
    } else {
      fprintf(stderr, "unshare(CLONE_NEWUSER|CLONE_NEWNET): %s\n", strerror(err));
    }
  } else if (write_map(pid, "uid_map", uid, size) == 0 && write_map(pid, "gid_map", gid, size) == 0 && bind_ns(pid, "user", userns_file) == 0) {
    users_bound = 1;
    if (bind_ns(pid, "net", netns_file) == 0) status = 0;
  }
  if (status != 0 && users_bound && umount2(userns_file, MNT_DETACH) < 0) {
    fprintf(stderr, "cleanup: umount %s: %s\n", userns_file, strerror(errno));
  }
  ns_child_finish(&c);
  return status;
}
