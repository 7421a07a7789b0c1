#!/usr/bin/env bash
# Starts `voxrt serve` on a free port, waits until it is ready, runs realtime_load.py against it,
# stops the server with SIGTERM and exits with the driver's status.
#
#   tools/load/run_against_voxrt.sh VOXRT MODEL_DIR [SERVE_ARGS...] -- [DRIVER_ARGS...]
#
# VOXRT: the command that runs voxrt, split on spaces, so a launcher prefix works:
#   tools/load/run_against_voxrt.sh /tmp/voxrt MODEL -- --audio a.wav --sessions 8
#   tools/load/run_against_voxrt.sh ".carry/run voxrt" MODEL --max-sessions 256 -- --audio a.wav --sessions 200
# If VOXRT is set in the environment it is used instead, and the first argument is still taken
# (pass "" or anything there).
# SERVE_ARGS go to `voxrt serve` after --model MODEL_DIR --port 0 --no-access-log.
# Environment: PYTHON (python3), READY_TIMEOUT (seconds, 900), STOP_TIMEOUT (seconds, 60),
# SERVER_LOG (the server's stderr; default a temporary file, its path printed at the end).
set -u

if [ $# -lt 2 ]; then
  sed -n '2,/^set -u$/{/^set -u$/d;s/^# \{0,1\}//;p;}' "$0" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
read -r -a voxrt <<<"${VOXRT:-$1}"
model=$2
shift 2
serve_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do serve_args+=("$1"); shift; done
[ $# -gt 0 ] && shift  # the --
driver_args=("$@")
[ ${#voxrt[@]} -gt 0 ] || { echo "run_against_voxrt: no voxrt command" >&2; exit 2; }

python=${PYTHON:-python3}
ready_timeout=${READY_TIMEOUT:-900}
stop_timeout=${STOP_TIMEOUT:-60}
# The driver's arguments and audio checked before a model is loaded for nothing.
"$python" "$here/realtime_load.py" --dry-run "${driver_args[@]}" || exit $?
log=${SERVER_LOG:-$(mktemp /tmp/voxrt-serve.XXXXXX.log)}
: >"$log"

# The server (and its launcher, if any) in a process group of its own, so that SIGTERM reaches
# voxrt even when the launcher does not pass signals on.
set -m
"${voxrt[@]}" serve --model "$model" --port 0 --no-access-log "${serve_args[@]}" 2>"$log" &
server_pid=$!
set +m
group_alive() { kill -0 -- "-$server_pid" 2>/dev/null; }

stop_server() {  # SIGTERM, then wait for the whole group (the server drains), SIGKILL past the timeout
  group_alive || return 0
  kill -TERM -- "-$server_pid" 2>/dev/null
  local waited=0
  while group_alive && [ "$waited" -lt $((stop_timeout * 10)) ]; do sleep 0.1; waited=$((waited + 1)); done
  if group_alive; then
    echo "run_against_voxrt: the server did not stop within ${stop_timeout} s of SIGTERM: killed" >&2
    kill -KILL -- "-$server_pid" 2>/dev/null
  fi
}
trap 'stop_server; exit 130' INT
trap 'stop_server; exit 143' TERM
trap 'stop_server' EXIT

echo "run_against_voxrt: ${voxrt[*]} serve --model $model --port 0 --no-access-log ${serve_args[*]} (log: $log)" >&2
url=
deadline=$((SECONDS + ready_timeout))
while :; do
  if [ -z "$url" ]; then
    addr=$(sed -n 's|^voxrt: serving http://\([^ ]*\).*|\1|p' "$log" | head -n 1)
    if [ -n "$addr" ]; then
      host=${addr%:*} port=${addr##*:}
      case $host in 0.0.0.0 | "[::]" | "") host=127.0.0.1 ;; esac
      url="ws://$host:$port"
    fi
  fi
  [ -n "$url" ] && grep -q '^voxrt: ready' "$log" && break
  if ! kill -0 "$server_pid" 2>/dev/null; then
    wait "$server_pid"
    echo "run_against_voxrt: the server exited (status $?) before it was ready; its log:" >&2
    tail -n 40 "$log" >&2
    exit 2
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "run_against_voxrt: the server was not ready within ${ready_timeout} s; its log:" >&2
    tail -n 40 "$log" >&2
    exit 2
  fi
  sleep 0.2
done
echo "run_against_voxrt: ready at $url" >&2

"$python" "$here/realtime_load.py" --url "$url" "${driver_args[@]}"
rc=$?

if ! kill -0 "$server_pid" 2>/dev/null; then
  wait "$server_pid"
  echo "run_against_voxrt: the server had already exited (status $?) when the driver ended; its log:" >&2
  tail -n 40 "$log" >&2
else
  stop_server
  wait "$server_pid" 2>/dev/null
  status=$?
  [ "$status" -eq 0 ] || echo "run_against_voxrt: the server (or its launcher) exited with status $status after SIGTERM" >&2
fi
trap - EXIT
echo "run_against_voxrt: driver exit status $rc; server log: $log" >&2
exit "$rc"
