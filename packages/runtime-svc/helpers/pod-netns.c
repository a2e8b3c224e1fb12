/*
 * A pod's network namespace, made before anything runs in it, with its loopback interface up.
 * scripts/setup.sh builds it into helpers/bin/pod-netns.
 *
 * Usage:
 *   pod-netns NETNS_FILE
 *       Unshares a network namespace, sets `lo` up in it (what the CNI loopback plugin would do)
 *       and bind-mounts it onto NETNS_FILE (an existing file), which keeps it alive. One process,
 *       none left behind: `unshare --net=FILE true` forks and execs twice for the same namespace,
 *       and the loopback plugin is a process of its own.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>

#include "loopback-up.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: pod-netns NETNS_FILE\n");
    return EXIT_USAGE;
  }
  if (unshare(CLONE_NEWNET) < 0) {
    fprintf(stderr, "unshare(CLONE_NEWNET): %s\n", strerror(errno));
    return EXIT_FAILED;
  }
  if (loopback_up() < 0) return EXIT_FAILED;
  if (mount("/proc/self/ns/net", argv[1], NULL, MS_BIND, NULL) < 0) {
    fprintf(stderr, "bind-mounting the network namespace onto %s: %s\n", argv[1], strerror(errno));
    return EXIT_FAILED;
  }
  return 0;
}
