# Shared by .ci/pocketbase.sh and .ci/postgres.sh (sourced, not run): logging, free ports, random passwords, the
# state file, stopping a process, and the `start|stop|status|env|run -- CMD` command line.
#
# The sourcing script sets NAME (its log prefix), KIND (the state files' prefix: .tools/KIND-run-PID.env for a run),
# STATE (its state file), STATE_VAR (the variable naming a run's own state file), URL_VAR (the variable the tests
# read) and HELP_LAST (the last line of its header comment), and defines start, stop and running; it may define
# extra_exports (prints `NAME=value` lines exported with the URL by `env` and `run`).

log() { printf '%s: %s\n' "$NAME" "$*" >&2; }
die() { log "error: $*"; exit 1; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

random_password() {
  python3 -c 'import secrets, string; a=string.ascii_letters+string.digits; print("".join(secrets.choice(a) for _ in range(24)))'
}

# The value of KEY in the state file.
state_get() { sed -n "s/^$1=//p" "$STATE"; }

# Sends TERM to a process, waits up to 5 s, then KILL (nothing when it is not running).
stop_pid() {
  local pid=$1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}

extra_exports() { :; }

server_main() {
  local cmd="${1:-}"
  [ $# -gt 0 ] && shift
  case "$cmd" in
    start) start ;;
    stop) stop ;;
    status) running && sed 's/:[^:@]*@/:***@/' "$STATE" || { log "not running"; exit 1; } ;;
    env)
      running || die "not running (start it with: $0 start)"
      echo "export $URL_VAR='$(state_get "$URL_VAR")'"
      extra_exports | while IFS= read -r line; do echo "export ${line%%=*}='${line#*=}'"; done
      ;;
    run)
      [ "${1:-}" = "--" ] && shift
      [ $# -gt 0 ] || die "usage: $0 run -- COMMAND [ARGS...]"
      # A run gets its own state file so it never stops a server a developer started with `start`.
      STATE="$TOOLS/$KIND-run-$$.env"
      export "$STATE_VAR=$STATE"
      trap 'stop >/dev/null 2>&1 || true' EXIT INT TERM
      start >/dev/null
      export "$URL_VAR=$(state_get "$URL_VAR")"
      local line
      while IFS= read -r line; do [ -n "$line" ] && export "$line"; done < <(extra_exports)
      set +e
      "$@"
      local status=$?
      set -e
      exit "$status"
      ;;
    *)
      sed -n "2,${HELP_LAST}p" "$0" | sed 's/^# \{0,1\}//'
      exit 2
      ;;
  esac
}
