/*
 * A child process that makes namespaces for its parent: it does its work, reports on a pipe, and
 * stays (so its namespaces stay reachable through /proc/PID/ns) until the parent releases it.
 * The parent keeps what the child cannot have once it has left the host's user namespace: the
 * right to write its id maps and to mount in the host's mount namespace.
 */
#ifndef SKIFF_NS_CHILD_H
#define SKIFF_NS_CHILD_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct ns_child {
  pid_t pid;
  int report;  /* read end: what the child reports */
  int release; /* write end: closed to let the child exit */
};

/* Forks; the child runs WORK(ARG, report fd), which writes its report, then waits to be released. 0, or -1 (said on stderr). */
static int ns_child_start(struct ns_child *c, void (*work)(void *arg, int report), void *arg) {
  int report[2], release[2];
  if (pipe2(report, O_CLOEXEC) < 0 || pipe2(release, O_CLOEXEC) < 0) {
    perror("pipe");
    return -1;
  }
  c->pid = fork();
  if (c->pid < 0) {
    perror("fork");
    return -1;
  }
  if (c->pid == 0) {
    close(report[0]);
    close(release[1]);
    work(arg, report[1]);
    char byte;
    while (read(release[0], &byte, 1) < 0 && errno == EINTR) {
    }
    _exit(0);
  }
  close(report[1]);
  close(release[0]);
  c->report = report[0];
  c->release = release[1];
  return 0;
}

/* Reads the child's report of SIZE bytes: 0, or -1 when it exited before it reported. */
static int ns_child_read(struct ns_child *c, void *buf, size_t size) {
  ssize_t got;
  do got = read(c->report, buf, size);
  while (got < 0 && errno == EINTR);
  return got == (ssize_t)size ? 0 : -1;
}

/* Lets the child exit and reaps it. */
static void ns_child_finish(struct ns_child *c) {
  close(c->release);
  close(c->report);
  while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

#endif
