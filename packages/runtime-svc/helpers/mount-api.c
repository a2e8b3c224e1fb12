/*
 * The kernel's mount API (Linux 5.12+), which util-linux 2.38's mount and Node lack, for the mounts
 * of a pod with its own user namespace. Nothing it makes is ever a copy in the caller's mount table
 * of what it maps. scripts/setup.sh builds it into helpers/bin/mount-api.
 *
 * Usage:
 *   mount-api can-idmap USERNS SOURCE [SOURCE ...]
 *       Checks that each SOURCE, and every mount below it, can be id-mapped with the mappings of the
 *       user namespace file USERNS, as the OCI runtime will do in the container's mount namespace:
 *       a detached recursive copy (open_tree(2) OPEN_TREE_CLONE | AT_RECURSIVE) is id-mapped
 *       (mount_setattr(2) MOUNT_ATTR_IDMAP) and dropped, never attached to any mount table.
 *   mount-api idmapped-overlays USERNS COUNT LAYER... TARGET FLAGS DATA [TARGET FLAGS DATA ...]
 *       Mounts overlays whose lower layers are id-mapped copies of the COUNT LAYERs (directories),
 *       at each TARGET, with mount(2) FLAGS (a decimal number) and overlayfs options DATA, which
 *       name LAYERs as lower directories. In a private mount namespace of its own, this process
 *       mounts an id-mapped copy of each LAYER over the LAYER itself and each overlay at its TARGET,
 *       takes a detached copy of every overlay, goes back to the caller's mount namespace and
 *       attaches the copies at their TARGETs. An overlay keeps private references to its layers,
 *       so the id-mapped copies end with the private namespace when this process exits: the
 *       caller's mount table gains the overlays alone. All or nothing: on a failure the overlays
 *       already attached are detached again.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage; 3 the kernel or the filesystem
 * lacks what is needed (the reason on stderr names it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The same numbers on every architecture: system calls from 424 on were numbered alike. */
#define SYS_OPEN_TREE 428
#define SYS_MOVE_MOUNT 429
#define SYS_MOUNT_SETATTR 442

#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef UMOUNT_NOFOLLOW
#define UMOUNT_NOFOLLOW 0x8
#endif
#define OPEN_TREE_CLONE_ 1
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x4
#define MOUNT_ATTR_IDMAP_ 0x100000

enum { EXIT_FAILED = 1, EXIT_USAGE = 2, EXIT_UNSUPPORTED = 3 };

struct mount_attr_ {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

static int fail(const char *what, const char *path) {
  int err = errno;
  fprintf(stderr, "%s %s: %s\n", what, path, strerror(err));
  return EXIT_FAILED;
}

static int lacks(const char *what) {
  fprintf(stderr, "the kernel lacks %s\n", what);
  return EXIT_UNSUPPORTED;
}

/*
 * A detached copy of `source` (with the mounts below it when `recursive`), id-mapped with `userns`.
 * Answers its descriptor, or -1 with *status set.
 */
static int idmapped_tree(int userns, const char *source, int recursive, int *status) {
  unsigned int flags = OPEN_TREE_CLONE_ | O_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  int tree = (int)syscall(SYS_OPEN_TREE, AT_FDCWD, source, flags);
  if (tree < 0) {
    *status = errno == ENOSYS ? lacks("open_tree(2) (Linux 5.2+), needed for id-mapped mounts") : fail("open_tree", source);
    return -1;
  }
  struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_IDMAP_, .userns_fd = (uint64_t)userns};
  if (syscall(SYS_MOUNT_SETATTR, tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof attr) < 0) {
    if (errno == ENOSYS) {
      *status = lacks("mount_setattr(2) (Linux 5.12+), needed for id-mapped mounts");
    } else if (errno == EINVAL) {
      fprintf(stderr, "the kernel cannot id-map the filesystem of %s (or a mount below it): mount_setattr MOUNT_ATTR_IDMAP: %s\n", source, strerror(errno));
      *status = EXIT_UNSUPPORTED;
    } else {
      *status = fail("mount_setattr MOUNT_ATTR_IDMAP", source);
    }
    close(tree);
    return -1;
  }
  return tree;
}

static int attach(int tree, const char *target) {
  if (syscall(SYS_MOVE_MOUNT, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH_) < 0) {
    return errno == ENOSYS ? lacks("move_mount(2) (Linux 5.2+), needed for id-mapped mounts") : fail("move_mount", target);
  }
  return 0;
}

static int open_userns(const char *path, int *userns) {
  *userns = open(path, O_RDONLY | O_CLOEXEC);
  return *userns < 0 ? fail("open", path) : 0;
}

static int can_idmap(const char *userns_path, int count, char **sources) {
  int userns;
  int status = open_userns(userns_path, &userns);
  for (int i = 0; status == 0 && i < count; i++) {
    int tree = idmapped_tree(userns, sources[i], 1, &status);
    if (tree >= 0) close(tree);
  }
  if (userns >= 0) close(userns);
  return status;
}

static int parse_count(const char *text, long max, long *out) {
  char *end;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || *text == '\0' || *end != '\0' || value < 0 || value > max) return -1;
  *out = value;
  return 0;
}

/* The overlays, made in a private mount namespace: answers each one's detached copy in trees[]. */
static int overlays_in_private_namespace(int userns, long layers, char **layer, long overlays, char **spec, int *trees) {
  if (unshare(CLONE_NEWNS) < 0) return fail("unshare", "CLONE_NEWNS");
  /* Nothing made here may propagate to the caller's namespace. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) return fail("mount --make-rprivate", "/");
  int status = 0;
  for (long i = 0; i < layers; i++) {
    int tree = idmapped_tree(userns, layer[i], 0, &status);
    if (tree < 0) return status;
    status = attach(tree, layer[i]);
    close(tree);
    if (status != 0) return status;
  }
  for (long i = 0; i < overlays; i++) {
    const char *target = spec[3 * i];
    long flags;
    if (parse_count(spec[3 * i + 1], 0x7fffffffL, &flags) < 0) {
      fprintf(stderr, "mount flags %s of %s: not a number\n", spec[3 * i + 1], target);
      return EXIT_USAGE;
    }
    if (mount("overlay", target, "overlay", (unsigned long)flags, spec[3 * i + 2]) < 0) return fail("mount -t overlay", target);
    trees[i] = (int)syscall(SYS_OPEN_TREE, AT_FDCWD, target, OPEN_TREE_CLONE_ | O_CLOEXEC);
    if (trees[i] < 0) return fail("open_tree", target);
  }
  return 0;
}

static int idmapped_overlays(int argc, char **argv) {
  long layers;
  if (argc < 4 || parse_count(argv[3], argc, &layers) < 0 || (argc - 4 - layers) <= 0 || (argc - 4 - layers) % 3 != 0) return -1;
  char **layer = argv + 4;
  char **spec = layer + layers;
  long overlays = (argc - 4 - layers) / 3;
  int *trees = calloc((size_t)overlays, sizeof *trees);
  if (trees == NULL) return fail("calloc", "overlays");
  for (long i = 0; i < overlays; i++) trees[i] = -1;
  int callers = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (callers < 0) return fail("open", "/proc/self/ns/mnt");
  int userns;
  int status = open_userns(argv[2], &userns);
  if (status == 0) status = overlays_in_private_namespace(userns, layers, layer, overlays, spec, trees);
  /* Back in the caller's namespace (also after a failure, though nothing is attached then). */
  if (setns(callers, CLONE_NEWNS) < 0) {
    status = fail("setns", "the caller's mount namespace");
  } else {
    long attached = 0;
    for (; status == 0 && attached < overlays; attached++) {
      status = attach(trees[attached], spec[3 * attached]);
      if (status != 0) break;
    }
    if (status != 0) {
      for (long i = attached - 1; i >= 0; i--) {
        if (umount2(spec[3 * i], MNT_DETACH | UMOUNT_NOFOLLOW) < 0) fail("cleanup: umount", spec[3 * i]);
      }
    }
  }
  for (long i = 0; i < overlays; i++) {
    if (trees[i] >= 0) close(trees[i]);
  }
  free(trees);
  if (userns >= 0) close(userns);
  close(callers);
  return status;
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "can-idmap") == 0) return can_idmap(argv[2], argc - 3, argv + 3);
  if (argc >= 2 && strcmp(argv[1], "idmapped-overlays") == 0) {
    int status = idmapped_overlays(argc, argv);
    if (status >= 0) return status;
  }
  fprintf(stderr, "usage: mount-api can-idmap USERNS SOURCE... | mount-api idmapped-overlays USERNS COUNT LAYER... TARGET FLAGS DATA [TARGET FLAGS DATA ...]\n");
  return EXIT_USAGE;
}
