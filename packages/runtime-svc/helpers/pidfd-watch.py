#!/usr/bin/python3
"""Reports the exits of processes that are not this program's children, through pidfds (Linux 5.3+),
which Node cannot open.

Reads commands on stdin, one a line:
  watch KEY PID STARTTIME   follow the process PID whose start time (field 22 of /proc/PID/stat)
                            is STARTTIME; a KEY watched already is replaced
  forget KEY                stop following it
Writes `exited KEY` on stdout, once, when the process has ended (at once if it had already ended,
or PID is now another process). Ends when stdin closes.
"""

import os
import select
import sys


def start_time(pid):
    """The start time of a live (not zombie) process, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rindex(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return fields[19].decode()


def main():
    stdin = sys.stdin.buffer.fileno()
    os.set_blocking(stdin, False)
    poller = select.poll()
    poller.register(stdin, select.POLLIN)
    key_of = {}
    fd_of = {}
    pending = b""

    def report(key):
        sys.stdout.write(f"exited {key}\n")
        sys.stdout.flush()

    def forget(key):
        fd = fd_of.pop(key, None)
        if fd is not None:
            del key_of[fd]
            poller.unregister(fd)
            os.close(fd)

    def watch(key, pid, started):
        forget(key)
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            report(key)
            return
        # Checked after opening: the pidfd names the process that had the pid then.
        if start_time(pid) != started:
            os.close(fd)
            report(key)
            return
        fd_of[key] = fd
        key_of[fd] = key
        poller.register(fd, select.POLLIN)

    while True:
        for fd, _ in poller.poll():
            if fd != stdin:
                key = key_of[fd]
                forget(key)
                report(key)
                continue
            try:
                chunk = os.read(stdin, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                return
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                parts = line.decode("utf-8", "replace").split()
                if len(parts) == 4 and parts[0] == "watch" and parts[2].isdigit():
                    watch(parts[1], int(parts[2]), parts[3])
                elif len(parts) == 2 and parts[0] == "forget":
                    forget(parts[1])


if __name__ == "__main__":
    main()
