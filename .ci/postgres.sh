#!/usr/bin/env bash
# Starts and stops a throwaway PostgreSQL cluster on loopback for the live tests.
#
#   .ci/postgres.sh start            create a cluster in a temporary folder and start it; prints the state file
#   .ci/postgres.sh stop             stop it and delete the folder (safe when nothing runs)
#   .ci/postgres.sh status           print the state file (password hidden), exit 1 when no server runs
#   .ci/postgres.sh env              print `export MBAAS_POSTGRES_URL=...` for `eval`
#   .ci/postgres.sh run -- CMD ...   start a fresh cluster, run CMD with MBAAS_POSTGRES_URL exported, stop and
#                                    delete the cluster afterwards (also on failure); exits with CMD's status
#
# The server comes from Debian's `postgresql` package (binaries in /usr/lib/postgresql/*/bin; `.ci/run` installs it
# when missing). `initdb` makes the cluster in a new temporary folder; the server listens on 127.0.0.1 only, on a
# free port, with its unix socket in that folder; the superuser `mbaas` has a random password (scram-sha-256 on TCP).
# Run as root, the server runs as the `postgres` user (`runuser -u postgres --`), as PostgreSQL refuses root.
# The state file (`.tools/postgres.env` unless POSTGRES_STATE names another) holds POSTGRES_PID, POSTGRES_PORT,
# POSTGRES_DIR and MBAAS_POSTGRES_URL=postgres://mbaas:PASSWORD@127.0.0.1:PORT/mbaas.
#
# Environment: POSTGRES_STATE, POSTGRES_WAIT (seconds, default 30), POSTGRES_BIN (the folder of initdb and pg_ctl).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"
STATE="${POSTGRES_STATE:-$TOOLS/postgres.env}"
WAIT="${POSTGRES_WAIT:-30}"

log() { printf 'postgres.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

bindir() {
  if [ -n "${POSTGRES_BIN:-}" ]; then echo "$POSTGRES_BIN"; return 0; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$d" ] && [ -x "$d/initdb" ] || die "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)"
  echo "$d"
}

# Runs a command as the cluster's owner: the `postgres` user when this script runs as root, else the caller.
as_owner() {
  if [ "$(id -u)" = "0" ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

running() {
  [ -f "$STATE" ] || return 1
  local pid dir port
  pid=$(sed -n 's/^POSTGRES_PID=//p' "$STATE")
  dir=$(sed -n 's/^POSTGRES_DIR=//p' "$STATE")
  port=$(sed -n 's/^POSTGRES_PORT=//p' "$STATE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && "$(bindir)/pg_isready" -q -h "$dir" -p "$port" 2>/dev/null
}

start() {
  if running; then
    log "already running ($STATE)"
    echo "$STATE"
    return 0
  fi
  [ -f "$STATE" ] && stop >/dev/null 2>&1 || true
  local bin base data port pass pwfile pid url
  bin=$(bindir)
  base=$(mktemp -d "${TMPDIR:-/tmp}/mbaas-postgres.XXXXXX")
  chmod 755 "$base"
  data="$base/data"
  port=$(free_port)
  pass=$(python3 -c 'import secrets, string; a=string.ascii_letters+string.digits; print("".join(secrets.choice(a) for _ in range(24)))')
  pwfile="$base/pw"
  printf '%s\n' "$pass" >"$pwfile"
  if [ "$(id -u)" = "0" ]; then chown -R postgres "$base"; fi
  chmod 600 "$pwfile"
  as_owner "$bin/initdb" -D "$data" -U mbaas --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$base/initdb.log" 2>&1 \
    || as_owner "$bin/initdb" -D "$data" -U mbaas --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
      -E UTF8 --locale=C >"$base/initdb.log" 2>&1 \
    || { cat "$base/initdb.log" >&2; rm -rf "$base"; die "initdb failed"; }
  rm -f "$pwfile"
  as_owner "$bin/pg_ctl" -D "$data" -l "$base/server.log" -w -t "$WAIT" \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $base -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$base/server.log" >&2 2>/dev/null; rm -rf "$base"; die "the server did not start on 127.0.0.1:$port"; }
  pid=$(head -n 1 "$data/postmaster.pid")
  as_owner "$bin/createdb" -h "$base" -p "$port" -U mbaas mbaas \
    || { stop_dir "$bin" "$data" "$base"; die "createdb failed"; }
  url="postgres://mbaas:$pass@127.0.0.1:$port/mbaas"
  mkdir -p "$(dirname "$STATE")"
  umask 077
  {
    echo "POSTGRES_PID=$pid"
    echo "POSTGRES_PORT=$port"
    echo "POSTGRES_DIR=$base"
    echo "MBAAS_POSTGRES_URL=$url"
  } >"$STATE"
  log "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') listening on 127.0.0.1:$port and $base (pid $pid)"
  echo "$STATE"
}

stop_dir() { # bin data base
  as_owner "$1/pg_ctl" -D "$2" -m fast -w -t 20 stop >/dev/null 2>&1 || true
  case "$3" in */mbaas-postgres.*) rm -rf "$3" ;; esac
}

stop() {
  if [ ! -f "$STATE" ]; then
    log "not running"
    return 0
  fi
  local pid dir
  pid=$(sed -n 's/^POSTGRES_PID=//p' "$STATE")
  dir=$(sed -n 's/^POSTGRES_DIR=//p' "$STATE")
  if [ -n "$dir" ] && [ -d "$dir/data" ]; then
    stop_dir "$(bindir)" "$dir/data" "$dir"
  fi
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  case "$dir" in */mbaas-postgres.*) rm -rf "$dir" ;; esac
  rm -f "$STATE"
  log "stopped"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) running && sed 's/:[^:@]*@/:***@/' "$STATE" || { log "not running"; exit 1; } ;;
  env)
    running || die "not running (start it with: $0 start)"
    echo "export MBAAS_POSTGRES_URL='$(sed -n 's/^MBAAS_POSTGRES_URL=//p' "$STATE")'"
    ;;
  run)
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || die "usage: $0 run -- COMMAND [ARGS...]"
    # A run gets its own state file so it never stops a cluster a developer started with `start`.
    export POSTGRES_STATE="$TOOLS/postgres-run-$$.env"
    STATE="$POSTGRES_STATE"
    trap 'stop >/dev/null 2>&1 || true' EXIT INT TERM
    start >/dev/null
    MBAAS_POSTGRES_URL=$(sed -n 's/^MBAAS_POSTGRES_URL=//p' "$STATE")
    export MBAAS_POSTGRES_URL
    set +e
    "$@"
    status=$?
    set -e
    exit "$status"
    ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
