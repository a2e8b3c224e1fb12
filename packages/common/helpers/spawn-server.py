#!/usr/bin/python3
"""
Runs commands on behalf of a Node daemon (packages/common/src/spawn-server.ts), so that the daemon
itself never forks: Node's child_process forks the whole daemon (copying the page tables of tens
of MiB) and holds its event loop until the child has exec'd, several milliseconds per command, so
commands started together queue behind each other there. This process is small and starts each
command with vfork (Python's subprocess), then follows it with a pidfd, all in one thread.

Requests, one JSON object a line on stdin:
  {"id": N, "file": PATH_OR_NAME, "args": [...], "env": {...}, "cwd": DIR | null, "input": BASE64 | null,
   "timeoutMs": MS (0: none), "drainMs": MS, "discardOutput": BOOL, "reportPipe": ENV_NAME | null}
Answers, one JSON object a line on stdout:
  {"id": N, "code": C | null, "signal": NAME | null, "stdout": BASE64, "stderr": BASE64, "timedOut": BOOL,
   "report": BASE64 (with reportPipe, once something was written there)}
  {"id": N, "error": MESSAGE, "errno": NAME}  (the command could not be started)

The semantics are runCommand's: stdin is the input (then closed) or /dev/null; stdout and stderr
are collected, or go to /dev/null with discardOutput; a command still running at timeoutMs is
killed with SIGKILL; output is read until both pipes close, or for drainMs after the command has
exited (a background process it left may hold them open).

With "reportPipe" the command also gets the write end of a pipe, its descriptor's number in the
environment variable so named (conmon's _OCI_SYNCPIPE): the first line written there (or all
that is written before it closes) is the answer's "report". A command that forks a process meant
to outlive it and reports once that process is ready (conmon's pid of the container) may exit
before it reports: its answer waits for the report, then drainMs for the output, within timeoutMs.

It also makes system calls Node lacks, in its own process (the daemon's mount namespace), at a
fraction of the cost of a command that makes them (mount(8), umount(8), logger(1)):
  {"id": N, "call": "mount", "source": S, "target": T, "fstype": F, "flags": MS_FLAGS, "data": D}
  {"id": N, "call": "umount", "target": T, "flags": MNT_FLAGS}
  {"id": N, "call": "send", "target": UNIX_DATAGRAM_SOCKET, "data": BASE64}  (never waits: EAGAIN)
Answers: {"id": N, "done": true}, or {"id": N, "error": MESSAGE, "errno": NAME}.

Once the daemon is gone (the end of input, or a request read after its death) this process exits
at once: it starts nothing more, and leaves the commands still running to finish on their own, as
a killed daemon's own children would.
"""
import base64
import errno
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

sel = selectors.DefaultSelector()
jobs = {}
DAEMON = os.getppid()
libc = None
datagrams = None


def now_ms():
    return time.monotonic() * 1000


def answer(message):
    data = (json.dumps(message, separators=(',', ':')) + '\n').encode()
    while data:
        try:
            written = os.write(1, data)
        except BlockingIOError:
            selectors.DefaultSelector().select(0.01)
            continue
        except BrokenPipeError:
            # The daemon is gone.
            os._exit(0)
        data = data[written:]


class Job:
    def __init__(self, request):
        self.id = request['id']
        self.out = []
        self.err = []
        self.streams = {}
        self.stdin_fd = None
        self.pending_input = b''
        self.exit = None
        self.timed_out = False
        timeout = request.get('timeoutMs') or 0
        self.deadline = now_ms() + timeout if timeout > 0 else None
        self.drain_ms = request.get('drainMs', 250)
        self.drain_deadline = None
        self.proc = None
        self.pid = None
        self.pidfd = None
        self.report_fd = None
        self.report_buffer = b''
        self.report = None

    def start(self, request):
        env = request.get('env')
        env = {str(k): str(v) for k, v in env.items()} if env is not None else None
        data = request.get('input')
        output = subprocess.DEVNULL if request.get('discardOutput') else subprocess.PIPE
        # subprocess starts it with vfork and gives it default signal handlers (posix_spawn would
        # leave glibc's internal signals ignored in it).
        report_write = None
        if request.get('reportPipe'):
            self.report_fd, report_write = os.pipe()
            env = dict(os.environ if env is None else env)
            env[str(request['reportPipe'])] = str(report_write)
        try:
            self.proc = subprocess.Popen([request['file'], *request.get('args', [])], stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
                                         stdout=output, stderr=output, env=env, cwd=request.get('cwd'), close_fds=True, restore_signals=True,
                                         pass_fds=() if report_write is None else (report_write,))
        except BaseException:
            self.close_report()
            raise
        finally:
            if report_write is not None:
                os.close(report_write)
        self.pid = self.proc.pid
        self.pidfd = os.pidfd_open(self.pid)
        sel.register(self.pidfd, selectors.EVENT_READ, ('exit', self))
        for stream, sink in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            if stream is None:
                continue
            fd = stream.fileno()
            os.set_blocking(fd, False)
            self.streams[fd] = (stream, sink)
            sel.register(fd, selectors.EVENT_READ, ('output', self))
        if self.report_fd is not None:
            os.set_blocking(self.report_fd, False)
            sel.register(self.report_fd, selectors.EVENT_READ, ('report', self))
        if data is not None:
            self.stdin_fd = self.proc.stdin.fileno()
            self.pending_input = base64.b64decode(data)
            os.set_blocking(self.stdin_fd, False)
            self.write_input()

    def write_input(self):
        try:
            while self.pending_input:
                written = os.write(self.stdin_fd, self.pending_input)
                self.pending_input = self.pending_input[written:]
        except BlockingIOError:
            if not self.stdin_registered():
                sel.register(self.stdin_fd, selectors.EVENT_WRITE, ('input', self))
            return
        except OSError:
            # The command exited or closed its stdin without reading everything.
            pass
        self.close_stdin()

    def stdin_registered(self):
        try:
            sel.get_key(self.stdin_fd)
            return True
        except KeyError:
            return False

    def close_stdin(self):
        if self.stdin_fd is None:
            return
        if self.stdin_registered():
            sel.unregister(self.stdin_fd)
        self.proc.stdin.close()
        self.stdin_fd = None

    def read_output(self, fd):
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b''
        if chunk:
            self.streams[fd][1].append(chunk)
            return
        self.close_stream(fd)
        self.finish_if_done()

    def close_stream(self, fd):
        sel.unregister(fd)
        self.streams.pop(fd)[0].close()

    def read_report(self):
        try:
            chunk = os.read(self.report_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b''
        self.report_buffer += chunk
        if chunk and b'\n' not in chunk:
            return
        if self.report_buffer:
            self.report = self.report_buffer.split(b'\n', 1)[0]
        self.close_report()
        if self.exit is not None:
            self.drain_deadline = now_ms() + self.drain_ms
        self.finish_if_done()

    def close_report(self):
        if self.report_fd is None:
            return
        try:
            sel.unregister(self.report_fd)
        except KeyError:
            pass
        os.close(self.report_fd)
        self.report_fd = None

    def reap(self):
        sel.unregister(self.pidfd)
        os.close(self.pidfd)
        self.pidfd = None
        code = self.proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = str(-code)
            self.exit = (None, name)
        else:
            self.exit = (code, None)
        if self.report_fd is None:
            self.drain_deadline = now_ms() + self.drain_ms
        self.finish_if_done()

    def finish_if_done(self, force=False):
        if self.exit is None or ((self.streams or self.report_fd is not None) and not force):
            return
        for fd in list(self.streams):
            self.close_stream(fd)
        self.close_stdin()
        self.close_report()
        del jobs[self.id]
        code, name = self.exit
        message = {'id': self.id, 'code': code, 'signal': name, 'stdout': base64.b64encode(b''.join(self.out)).decode(),
                   'stderr': base64.b64encode(b''.join(self.err)).decode(), 'timedOut': self.timed_out}
        if self.report is not None:
            message['report'] = base64.b64encode(self.report).decode()
        answer(message)

    def check_times(self, at):
        if self.exit is None and self.deadline is not None and at >= self.deadline and not self.timed_out:
            self.timed_out = True
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.exit is not None and self.drain_deadline is not None and at >= self.drain_deadline:
            self.finish_if_done(force=True)
        elif self.exit is not None and self.report_fd is not None and self.deadline is not None and at >= self.deadline:
            # Exited, and what it left running never reported.
            self.timed_out = True
            self.finish_if_done(force=True)

    def next_time(self):
        if self.exit is None:
            return None if self.timed_out else self.deadline
        return self.drain_deadline if self.drain_deadline is not None else self.deadline


def load_libc():
    """libc's mount and umount2 and ctypes' errno reader, loaded with the first of those calls."""
    global libc
    if libc is None:
        import ctypes
        lib = ctypes.CDLL(None, use_errno=True)
        lib.mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p)
        lib.umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
        libc = (lib, ctypes.get_errno)
    return libc


def checked(result, get_errno):
    if result != 0:
        code = get_errno()
        raise OSError(code, os.strerror(code))


def datagram_socket():
    global datagrams
    if datagrams is None:
        datagrams = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        # A receiver that is behind makes the send fail (EAGAIN) instead of holding every command.
        datagrams.setblocking(False)
    return datagrams


def system_call(request):
    call = request['call']
    target = request['target']
    if call == 'mount':
        lib, get_errno = load_libc()
        data = request.get('data')
        checked(lib.mount(os.fsencode(request['source']), os.fsencode(target), os.fsencode(request['fstype']), request['flags'],
                          os.fsencode(data) if data else None), get_errno)
    elif call == 'umount':
        lib, get_errno = load_libc()
        checked(lib.umount2(os.fsencode(target), request['flags']), get_errno)
    elif call == 'send':
        datagram_socket().sendto(base64.b64decode(request['data']), target)
    else:
        raise ValueError(f'no system call {call}')


def handle(line):
    # A request the daemon sent just before it died is not started: a command starts only while
    # the daemon lives, so its successor finds every command it left in its process group.
    if os.getppid() != DAEMON:
        os._exit(0)
    try:
        request = json.loads(line)
    except ValueError:
        return
    if 'call' in request:
        try:
            system_call(request)
        except OSError as err:
            name = errno.errorcode.get(err.errno or 0, 'EIO')
            answer({'id': request['id'], 'error': f"{request['call']} {request['target']}: {err.strerror or err}", 'errno': name})
            return
        except (ValueError, TypeError, KeyError) as err:
            answer({'id': request.get('id'), 'error': f'bad request: {err}', 'errno': 'EINVAL'})
            return
        answer({'id': request['id'], 'done': True})
        return
    job = Job(request)
    try:
        job.start(request)
    except (OSError, ValueError, TypeError, KeyError) as err:
        name = errno.errorcode.get(getattr(err, 'errno', None) or 0, 'EINVAL')
        answer({'id': job.id, 'error': f"spawn {request.get('file')} {name}", 'errno': name})
        return
    jobs[job.id] = job


def main():
    os.set_blocking(0, False)
    sel.register(0, selectors.EVENT_READ, ('control', None))
    buffered = b''
    while True:
        times = [t for t in (job.next_time() for job in jobs.values()) if t is not None]
        timeout = max(0, (min(times) - now_ms()) / 1000) if times else None
        for key, _ in sel.select(timeout):
            kind, job = key.data
            if kind == 'control':
                try:
                    chunk = os.read(0, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    # The daemon is gone: what still runs runs on, as its own children would have.
                    os._exit(0)
                buffered += chunk
                *lines, buffered = buffered.split(b'\n')
                for line in lines:
                    if line:
                        handle(line)
            elif job.id not in jobs:
                continue
            elif kind == 'output':
                job.read_output(key.fd)
            elif kind == 'input':
                job.write_input()
            elif kind == 'report':
                job.read_report()
            elif kind == 'exit':
                job.reap()
        at = now_ms()
        for job in list(jobs.values()):
            job.check_times(at)


if __name__ == '__main__':
    sys.exit(main())
