#!/usr/bin/python3
"""Relays between conmon's attach socket (SOCK_SEQPACKET) and stdio.

Usage: attach-relay.py DIR NAME   connects to DIR/NAME (DIR may be a symlink).

stdout carries frames: one type byte, a big-endian u32 length, then that many bytes. The first
frame is type 0 with no data, sent once connected; every packet from conmon follows as its own
frame, its first byte (conmon: 2 stdout, 3 stderr) as the type. Bytes read on stdin are sent to the socket
as they come; the end of stdin becomes shutdown(SHUT_WR), which conmon takes as stdin closed.
The relay exits when the socket ends, when stdout breaks, or when its parent dies.
"""

import ctypes
import os
import select
import signal
import socket
import struct
import sys

PR_SET_PDEATHSIG = 1
# conmon reads client packets into a 32 KiB buffer; its own packets are 1 + 8 KiB.
MAX_SEND = 32768
MAX_RECV = 65536


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # The parent may have died before prctl took effect.
    if os.getppid() == 1:
        sys.exit(1)


def connect(directory, name):
    # Through /proc/self/fd so the socket path never exceeds sun_path's 108 bytes.
    dir_fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect("/proc/self/fd/%d/%s" % (dir_fd, name))
    finally:
        os.close(dir_fd)
    return sock


def write_all(out, data):
    view = memoryview(data)
    while view:
        written = os.write(out, view)
        view = view[written:]


def relay(sock):
    out = sys.stdout.fileno()
    inp = sys.stdin.fileno()
    write_all(out, struct.pack(">BI", 0, 0))
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(inp, select.POLLIN)
    stdin_open = True
    while True:
        for fd, _events in poller.poll():
            if fd == sock.fileno():
                packet = sock.recv(MAX_RECV)
                if not packet:
                    return
                write_all(out, struct.pack(">BI", packet[0], len(packet) - 1) + packet[1:])
            elif fd == inp and stdin_open:
                data = os.read(inp, MAX_SEND)
                if data:
                    sock.sendall(data)
                else:
                    stdin_open = False
                    poller.unregister(inp)
                    sock.shutdown(socket.SHUT_WR)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: attach-relay.py DIR NAME\n")
        return 2
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    die_with_parent()
    try:
        sock = connect(sys.argv[1], sys.argv[2])
    except OSError as err:
        sys.stderr.write("cannot connect to %s/%s: %s\n" % (sys.argv[1], sys.argv[2], err.strerror or err))
        return 1
    try:
        relay(sock)
    except (BrokenPipeError, ConnectionResetError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
