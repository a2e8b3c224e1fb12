/*
 * The kernel's mount API (Linux 5.12+), which util-linux 2.38's mount and Node lack.
 * scripts/setup.sh builds it into helpers/bin/mount-api.
 *
 * Usage:
 *   mount-api rdonly PATH
 *       Makes the mount at PATH and every mount below it read-only (mount_setattr(2) with
 *       AT_RECURSIVE and MOUNT_ATTR_RDONLY); util-linux 2.38 ignores `ro=recursive`.
 *   mount-api idmap USERNS SOURCE TARGET [SOURCE TARGET ...]
 *       Mounts a recursive copy of each SOURCE at TARGET (an existing file or directory),
 *       id-mapped with the mappings of the user namespace file USERNS: open_tree(2),
 *       mount_setattr(2) with MOUNT_ATTR_IDMAP, move_mount(2). All or nothing: on a failure the
 *       copies already made are unmounted again.
 *
 * Exit status: 0 done; 1 failed (the reason on stderr); 2 usage; 3 the kernel or the filesystem
 * lacks what is needed (the reason on stderr names it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
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
#define OPEN_TREE_CLONE_ 1
#define MOVE_MOUNT_F_EMPTY_PATH_ 0x4
#define MOUNT_ATTR_RDONLY_ 0x1
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

static int rdonly(const char *path) {
  struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_RDONLY_};
  if (syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path, AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, &attr, sizeof attr) < 0) {
    if (errno == ENOSYS) return lacks("mount_setattr(2) (Linux 5.12+), needed for recursive read-only mounts");
    return fail("mount_setattr", path);
  }
  return 0;
}

/* One id-mapped copy of `source` at `target`; answers an exit status. */
static int idmap_one(int userns, const char *source, const char *target) {
  int tree = (int)syscall(SYS_OPEN_TREE, AT_FDCWD, source, OPEN_TREE_CLONE_ | O_CLOEXEC | AT_RECURSIVE);
  if (tree < 0) {
    if (errno == ENOSYS) return lacks("open_tree(2) (Linux 5.2+), needed for id-mapped mounts");
    return fail("open_tree", source);
  }
  int status = 0;
  struct mount_attr_ attr = {.attr_set = MOUNT_ATTR_IDMAP_, .userns_fd = (uint64_t)userns};
  if (syscall(SYS_MOUNT_SETATTR, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) < 0) {
    if (errno == ENOSYS) {
      status = lacks("mount_setattr(2) (Linux 5.12+), needed for id-mapped mounts");
    } else if (errno == EINVAL) {
      fprintf(stderr, "the kernel cannot id-map the filesystem of %s (or a mount below it): mount_setattr MOUNT_ATTR_IDMAP: %s\n", source, strerror(errno));
      status = EXIT_UNSUPPORTED;
    } else {
      status = fail("mount_setattr MOUNT_ATTR_IDMAP", source);
    }
  } else if (syscall(SYS_MOVE_MOUNT, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH_) < 0) {
    status = errno == ENOSYS ? lacks("move_mount(2) (Linux 5.2+), needed for id-mapped mounts") : fail("move_mount", target);
  }
  close(tree);
  return status;
}

static int idmap(const char *userns_path, int pairs, char **paths) {
  int userns = open(userns_path, O_RDONLY | O_CLOEXEC);
  if (userns < 0) return fail("open", userns_path);
  int status = 0;
  int made = 0;
  for (; made < pairs; made++) {
    status = idmap_one(userns, paths[2 * made], paths[2 * made + 1]);
    if (status != 0) break;
  }
  if (status != 0) {
    for (int i = made - 1; i >= 0; i--) {
      if (umount2(paths[2 * i + 1], MNT_DETACH) < 0) fail("cleanup: umount", paths[2 * i + 1]);
    }
  }
  close(userns);
  return status;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "rdonly") == 0) return rdonly(argv[2]);
  if (argc >= 5 && argc % 2 == 1 && strcmp(argv[1], "idmap") == 0) return idmap(argv[2], (argc - 3) / 2, argv + 3);
  fprintf(stderr, "usage: mount-api rdonly PATH | mount-api idmap USERNS SOURCE TARGET [SOURCE TARGET ...]\n");
  return EXIT_USAGE;
}
