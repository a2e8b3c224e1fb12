/*
 * Pins namespaces of one running process (a pod's pause) on files: a bind mount of each nsfs file
 * keeps the namespace alive and lets containers join it by path, never through the process's pid,
 * which another process may hold once this one has exited.
 * scripts/setup.sh builds it into helpers/bin/pin-namespaces.
 *
 * Usage:
 *   pin-namespaces PID START_TIME KIND FILE [KIND FILE ...]
 *       KIND is ipc, uts, pid, net or user. The process is held by a pidfd while its namespace
 *       files and its start time (field 22 of /proc/PID/stat, clock ticks since boot) are read;
 *       the pidfd still naming a live process afterwards proves that PID was that process all
 *       along, and the start time proves it is the one the caller started. Each FILE is created
 *       (it must not exist yet) and the namespace bind-mounted onto it. All or nothing: on a
 *       failure the mounts already made are undone and the files made are removed.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage; 4 PID is not that process
 * (it has exited, is a zombie, or the pid belongs to another process now).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ns-files.h"

/* The same numbers on every architecture: system calls from 424 on were numbered alike. */
#define SYS_PIDFD_SEND_SIGNAL 424
#define SYS_PIDFD_OPEN 434

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_NOT_THAT_PROCESS = 4 };
enum { MAX_PINS = 8 };

static const char *const KINDS[] = {"ipc", "uts", "pid", "net", "user"};

static int known_kind(const char *kind) {
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
    if (strcmp(kind, KINDS[i]) == 0) return 1;
  }
  return 0;
}

static int parse_number(const char *text, unsigned long long max, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || *text == '\0' || *end != '\0' || value > max) return -1;
  *out = value;
  return 0;
}

/* The state letter and start time of /proc/PID/stat; -1 when it cannot be read. */
static int read_stat(int pid, char *state, unsigned long long *start_time) {
  char path[64];
  char buf[4096];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t got = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (got <= 0) return -1;
  buf[got] = '\0';
  /* The command name (field 2) may hold spaces and parentheses: fields go on after the last ')'. */
  char *at = strrchr(buf, ')');
  if (at == NULL || at[1] != ' ') return -1;
  at += 2;
  *state = *at;
  /* Field 3 is the state; the start time is field 22, 19 fields further on. */
  for (int field = 3; field < 22; field++) {
    at = strchr(at, ' ');
    if (at == NULL) return -1;
    at++;
  }
  char *end;
  errno = 0;
  *start_time = strtoull(at, &end, 10);
  if (errno != 0 || end == at) return -1;
  return 0;
}

int main(int argc, char **argv) {
  unsigned long long pid_number, expected_start;
  int pins = (argc - 3) / 2;
  if (argc < 5 || (argc - 3) % 2 != 0 || pins > MAX_PINS || parse_number(argv[1], INT_MAX, &pid_number) < 0 || pid_number == 0 ||
      parse_number(argv[2], ULLONG_MAX, &expected_start) < 0) {
    fprintf(stderr, "usage: pin-namespaces PID START_TIME KIND FILE [KIND FILE ...] (at most %d)\n", MAX_PINS);
    return EXIT_USAGE;
  }
  for (int i = 0; i < pins; i++) {
    if (!known_kind(argv[3 + 2 * i])) {
      fprintf(stderr, "pin-namespaces: unknown namespace kind \"%s\" (ipc, uts, pid, net or user)\n", argv[3 + 2 * i]);
      return EXIT_USAGE;
    }
  }
  int pid = (int)pid_number;

  int pidfd = (int)syscall(SYS_PIDFD_OPEN, pid, 0);
  if (pidfd < 0) {
    if (errno == ESRCH) {
      fprintf(stderr, "process %d is not running\n", pid);
      return EXIT_NOT_THAT_PROCESS;
    }
    fprintf(stderr, "pidfd_open(%d): %s\n", pid, strerror(errno));
    return EXIT_FAILED;
  }
  int ns[MAX_PINS];
  int opened = 0;
  int open_errno = 0;
  const char *open_failed = NULL;
  char path[64];
  for (; opened < pins; opened++) {
    snprintf(path, sizeof path, "/proc/%d/ns/%s", pid, argv[3 + 2 * opened]);
    ns[opened] = open(path, O_RDONLY | O_CLOEXEC);
    if (ns[opened] < 0) {
      open_errno = errno;
      open_failed = argv[3 + 2 * opened];
      break;
    }
  }
  char state = '?';
  unsigned long long start_time = 0;
  int stat_read = read_stat(pid, &state, &start_time) == 0;
  /* Alive (or a zombie not yet reaped) now: the pid was this process's through every read above. */
  int alive = syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, 0, NULL, 0) == 0;
  close(pidfd);

  int status = 0;
  if (!alive || (stat_read && (state == 'Z' || state == 'X'))) {
    fprintf(stderr, "process %d exited before its namespaces were pinned\n", pid);
    status = EXIT_NOT_THAT_PROCESS;
  } else if (!stat_read) {
    fprintf(stderr, "reading /proc/%d/stat: %s\n", pid, strerror(errno));
    status = EXIT_FAILED;
  } else if (start_time != expected_start) {
    fprintf(stderr, "pid %d is another process now (started at tick %llu, not %llu)\n", pid, start_time, expected_start);
    status = EXIT_NOT_THAT_PROCESS;
  } else if (open_failed != NULL) {
    fprintf(stderr, "opening /proc/%d/ns/%s: %s\n", pid, open_failed, strerror(open_errno));
    status = EXIT_FAILED;
  }

  int made = 0;
  for (; status == 0 && made < pins; made++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", ns[made]);
    if (bind_onto_new_file(path, argv[3 + 2 * made], argv[4 + 2 * made]) < 0) {
      status = EXIT_FAILED;
      break;
    }
  }
  if (status != 0) unbind_files(argv + 4, 2, made);
  for (int i = 0; i < opened; i++) close(ns[i]);
  return status;
}
