#!/usr/bin/python3
"""Makes the mount at PATH and every mount below it read-only: mount_setattr(2) with
AT_RECURSIVE and MOUNT_ATTR_RDONLY (Linux 5.12+). util-linux 2.38's mount cannot do this (it
ignores `ro=recursive`) and Node has no binding for the call.

Usage: mount-setattr.py PATH
"""

import ctypes
import os
import sys

# The same number on every architecture: syscalls from 424 on were numbered alike.
SYS_MOUNT_SETATTR = 442
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
AT_SYMLINK_NOFOLLOW = 0x100
MOUNT_ATTR_RDONLY = 0x1


class MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: mount-setattr.py PATH\n")
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = MountAttr(MOUNT_ATTR_RDONLY, 0, 0, 0)
    result = libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_long(AT_FDCWD),
        ctypes.c_char_p(os.fsencode(sys.argv[1])),
        ctypes.c_long(AT_RECURSIVE | AT_SYMLINK_NOFOLLOW),
        ctypes.byref(attr),
        ctypes.c_long(ctypes.sizeof(attr)),
    )
    if result != 0:
        err = ctypes.get_errno()
        sys.stderr.write("mount_setattr %s: %s\n" % (sys.argv[1], os.strerror(err)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
