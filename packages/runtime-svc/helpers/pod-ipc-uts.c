/*
 * A pod's IPC and UTS namespaces, made without a process to hold them (a pod without a pause).
 * scripts/setup.sh builds it into helpers/bin/pod-ipc-uts.
 *
 * Usage:
 *   pod-ipc-uts USERNS_FILE HOSTNAME KIND FILE [KIND FILE]
 *       KIND is ipc or uts. A child joins the pod's user namespace (USERNS_FILE, a bind-mounted
 *       namespace; "" for none), so that the namespaces it makes belong to it, unshares the
 *       KINDs in one unshare(2) and sets HOSTNAME in the new UTS namespace ("" leaves the name it
 *       inherited). This process, which stays in the host's user and mount namespaces (a process
 *       in a child user namespace could not mount there), creates each FILE (it must not exist)
 *       and bind-mounts the child's namespace onto it, which keeps it alive; then the child exits.
 *       No process stays behind. All or nothing: on a failure the mounts already made are undone
 *       and the files made are removed.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ns-child.h"
#include "ns-files.h"

enum { EXIT_FAILED = 1, EXIT_USAGE = 2 };
enum { MAX_PINS = 2, HOSTNAME_MAX = 64 };

static int kind_flag(const char *kind) {
  if (strcmp(kind, "ipc") == 0) return CLONE_NEWIPC;
  if (strcmp(kind, "uts") == 0) return CLONE_NEWUTS;
  return 0;
}

struct request {
  const char *userns_file;
  int flags;
  const char *name;
};

/* The child: joins the user namespace, unshares, sets the hostname; reports 0, or a step number and its errno. */
static void child(void *arg, int report) {
  const struct request *r = arg;
  int answer[2] = {0, 0};
  if (r->userns_file != NULL) {
    int fd = open(r->userns_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || setns(fd, CLONE_NEWUSER) < 0) answer[0] = 1, answer[1] = errno;
    if (fd >= 0) close(fd);
  }
  if (answer[0] == 0 && unshare(r->flags) < 0) answer[0] = 2, answer[1] = errno;
  if (answer[0] == 0 && r->name != NULL && sethostname(r->name, strlen(r->name)) < 0) answer[0] = 3, answer[1] = errno;
  if (write(report, answer, sizeof answer) != sizeof answer) _exit(1);
}

int main(int argc, char **argv) {
  int pins = (argc - 3) / 2;
  if (argc < 5 || (argc - 3) % 2 != 0 || pins > MAX_PINS) {
    fprintf(stderr, "usage: pod-ipc-uts USERNS_FILE HOSTNAME KIND FILE [KIND FILE] (\"\" for no user namespace, no hostname)\n");
    return EXIT_USAGE;
  }
  struct request r = {argv[1][0] == '\0' ? NULL : argv[1], 0, argv[2][0] == '\0' ? NULL : argv[2]};
  if (r.name != NULL && strlen(r.name) > HOSTNAME_MAX) {
    fprintf(stderr, "pod-ipc-uts: the hostname is longer than %d bytes\n", HOSTNAME_MAX);
    return EXIT_USAGE;
  }
  for (int i = 0; i < pins; i++) {
    int flag = kind_flag(argv[3 + 2 * i]);
    if (flag == 0 || (r.flags & flag) != 0) {
      fprintf(stderr, "pod-ipc-uts: \"%s\" is not ipc or uts, or is named twice\n", argv[3 + 2 * i]);
      return EXIT_USAGE;
    }
    r.flags |= flag;
  }
  if (r.name != NULL && (r.flags & CLONE_NEWUTS) == 0) {
    fprintf(stderr, "pod-ipc-uts: a hostname needs a uts namespace\n");
    return EXIT_USAGE;
  }

  struct ns_child c;
  if (ns_child_start(&c, child, &r) < 0) return EXIT_FAILED;
  static const char *const STEPS[] = {"", "joining the user namespace", "unshare", "sethostname"};
  int status = EXIT_FAILED;
  int answer[2];
  int made = 0;
  if (ns_child_read(&c, answer, sizeof answer) < 0) {
    fprintf(stderr, "the namespace child exited before it unshared\n");
  } else if (answer[0] != 0) {
    fprintf(stderr, "%s%s%s: %s\n", STEPS[answer[0] < 4 ? answer[0] : 0], answer[0] == 1 ? " " : "", answer[0] == 1 ? r.userns_file : "", strerror(answer[1]));
  } else {
    status = 0;
    char path[64];
    for (; made < pins; made++) {
      snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)c.pid, argv[3 + 2 * made]);
      if (bind_onto_new_file(path, argv[3 + 2 * made], argv[4 + 2 * made]) < 0) {
        status = EXIT_FAILED;
        break;
      }
    }
  }
  if (status != 0) unbind_files(argv + 4, 2, made);
  ns_child_finish(&c);
  return status;
}
