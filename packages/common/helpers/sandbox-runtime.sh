#!/bin/sh
# conmon runs this in place of a sandbox-kind runtime (runsc), with the runtime's path first:
#   sandbox-runtime.sh <runtime> <global flags...> create --bundle <dir> --pid-file <file> ... <id>
#
# A container that joins its pod's sandbox gets the standard I/O of `runsc start`, not of
# `runsc create`, and runsc reports the sandbox's pid as the container's, which conmon cannot wait
# for. So after `runsc create` this leaves a holder behind, and writes the holder's pid where conmon
# reads the container's:
#  - the holder keeps conmon's stdin, stdout and stderr, which runtime-svc hands to `runsc start`
#    by opening /proc/<holder>/fd/0, 1 and 2;
#  - once runtime-svc has started the container it writes a line into <bundle>/start-gate; the
#    holder then waits for the container (`runsc wait`) and exits with its status, which conmon
#    records as the container's exit code.
# An exec: runsc takes a terminal from the process spec and has no --tty flag, which conmon passes
# to an exec with a terminal, so it is dropped; and the pid of the process inside the sandbox is
# written to <pid file>.inner. Any other command is the runtime's own.
set -eu
runtime=$1
shift

command=""
for arg; do
  case $arg in
    -*) ;;
    *) command=$arg; break ;;
  esac
done
if [ "$command" = exec ]; then
  pid_file=""
  previous=""
  for arg; do
    case $previous in --pid-file) pid_file=$arg ;; esac
    case $arg in --pid-file=*) pid_file=${arg#*=} ;; esac
    previous=$arg
  done
  # The exec'd process's pid inside the sandbox goes beside the pid file: killing `runsc exec`
  # on the host does not end it (SIGKILL cannot be forwarded), `runsc kill --pid` does.
  count=$#
  position=0
  for arg; do
    shift
    position=$((position + 1))
    case $arg in --tty | -t) continue ;; esac
    if [ "$position" -eq "$count" ] && [ -n "$pid_file" ]; then set -- "$@" "--internal-pid-file=$pid_file.inner"; fi
    set -- "$@" "$arg"
  done
  exec "$runtime" "$@"
fi
[ "$command" = create ] || exec "$runtime" "$@"

bundle=""
pid_file=""
id=""
previous=""
for arg; do
  case $previous in
    --bundle | -b) bundle=$arg ;;
    --pid-file) pid_file=$arg ;;
  esac
  case $arg in
    --bundle=*) bundle=${arg#*=} ;;
    --pid-file=*) pid_file=${arg#*=} ;;
  esac
  previous=$arg
  id=$arg
done
if [ -z "$bundle" ] || [ -z "$pid_file" ]; then
  echo "sandbox-runtime.sh: create needs --bundle and --pid-file" >&2
  exit 2
fi

"$runtime" "$@"

# Keep only the global flags (those before the command) in "$@".
total=$#
for arg; do
  [ "$arg" = create ] && break
  set -- "$@" "$arg"
done
shift "$total"

gate=$bundle/start-gate
rm -f "$gate"
mkfifo -m 600 "$gate"
# An asynchronous list gets /dev/null as stdin unless told otherwise.
exec 3<&0
(
  exec 3<&-
  # The holder's own fds 0-2 must stay conmon's all along, as runtime-svc reopens them meanwhile:
  # a shell applies a command's redirections to itself while the command runs, so the wait for
  # the gate runs in a subshell of its own. Read-write, so that opening never blocks and
  # runtime-svc's non-blocking open always finds a reader.
  (exec <>"$gate" >/dev/null 2>&1; head -n 1)
  result=$("$runtime" "$@" wait "$id" 2>/dev/null || true)
  status=$(printf '%s' "$result" | sed -n 's/.*"exitStatus":\([0-9]*\).*/\1/p')
  exit "${status:-255}"
) <&3 3<&- &
echo "$!" >"$pid_file"
