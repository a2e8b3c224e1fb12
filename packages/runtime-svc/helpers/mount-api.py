#!/usr/bin/python3
"""The kernel's mount API (Linux 5.12+), which util-linux 2.38's mount and Node lack.

Usage:
  mount-api.py rdonly PATH
      Makes the mount at PATH and every mount below it read-only (mount_setattr(2) with
      AT_RECURSIVE and MOUNT_ATTR_RDONLY); util-linux 2.38 ignores `ro=recursive`.
  mount-api.py idmap USERNS SOURCE TARGET [SOURCE TARGET ...]
      Mounts a recursive copy of each SOURCE at TARGET (an existing file or directory), id-mapped
      with the mappings of the user namespace file USERNS (e.g. /proc/PID/ns/user): open_tree(2),
      mount_setattr(2) with MOUNT_ATTR_IDMAP, move_mount(2).
"""

import ctypes
import os
import sys

# The same numbers on every architecture: syscalls from 424 on were numbered alike.
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442

AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
AT_SYMLINK_NOFOLLOW = 0x100
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_IDMAP = 0x100000


class MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class MountApiError(Exception):
    pass


def syscall(name, number, *args):
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        raise MountApiError("%s: %s" % (name, os.strerror(ctypes.get_errno())))
    return result


def setattr_fd(dirfd, path, flags, attr):
    syscall(
        "mount_setattr %s" % path.decode(errors="replace"),
        SYS_MOUNT_SETATTR,
        ctypes.c_long(dirfd),
        ctypes.c_char_p(path),
        ctypes.c_long(flags),
        ctypes.byref(attr),
        ctypes.c_long(ctypes.sizeof(attr)),
    )


def rdonly(path):
    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    setattr_fd(AT_FDCWD, os.fsencode(path), AT_RECURSIVE | AT_SYMLINK_NOFOLLOW, attr)


def idmap(userns, pairs):
    ns_fd = os.open(userns, os.O_RDONLY | os.O_CLOEXEC)
    try:
        for source, target in pairs:
            tree = syscall(
                "open_tree %s" % source,
                SYS_OPEN_TREE,
                ctypes.c_long(AT_FDCWD),
                ctypes.c_char_p(os.fsencode(source)),
                ctypes.c_long(OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE),
            )
            try:
                attr = MountAttr(MOUNT_ATTR_IDMAP, 0, 0, ns_fd)
                setattr_fd(tree, b"", AT_EMPTY_PATH | AT_RECURSIVE, attr)
                syscall(
                    "move_mount %s" % target,
                    SYS_MOVE_MOUNT,
                    ctypes.c_long(tree),
                    ctypes.c_char_p(b""),
                    ctypes.c_long(AT_FDCWD),
                    ctypes.c_char_p(os.fsencode(target)),
                    ctypes.c_long(MOVE_MOUNT_F_EMPTY_PATH),
                )
            finally:
                os.close(tree)
    finally:
        os.close(ns_fd)


def main():
    args = sys.argv[1:]
    try:
        if len(args) == 2 and args[0] == "rdonly":
            rdonly(args[1])
        elif len(args) >= 4 and args[0] == "idmap" and len(args) % 2 == 0:
            idmap(args[1], list(zip(args[2::2], args[3::2])))
        else:
            sys.stderr.write(__doc__)
            return 2
    except (MountApiError, OSError) as err:
        sys.stderr.write("%s\n" % err)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
