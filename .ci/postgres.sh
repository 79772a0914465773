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

NAME=postgres.sh KIND=postgres STATE_VAR=POSTGRES_STATE URL_VAR=MBAAS_POSTGRES_URL HELP_LAST=10
# shellcheck source=server-lib.sh
. "$ROOT/.ci/server-lib.sh"

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

running() {
  [ -f "$STATE" ] || return 1
  local pid dir port
  pid=$(state_get POSTGRES_PID)
  dir=$(state_get POSTGRES_DIR)
  port=$(state_get POSTGRES_PORT)
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
  pass=$(random_password)
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
  pid=$(state_get POSTGRES_PID)
  dir=$(state_get POSTGRES_DIR)
  if [ -n "$dir" ] && [ -d "$dir/data" ]; then
    stop_dir "$(bindir)" "$dir/data" "$dir"
  fi
  stop_pid "$pid"
  case "$dir" in */mbaas-postgres.*) rm -rf "$dir" ;; esac
  rm -f "$STATE"
  log "stopped"
}

server_main "$@"
