#!/usr/bin/env bash
# Record GET requests per second: the emulator's NCMB dialect next to a real PocketBase, same machine, same load
# tool (wrk), same record, same concurrency. Release build of mbaas required:
#
#   swift build -c release --product mbaas
#   Benchmarks/emulator-vs-pocketbase.sh [DURATION_SECONDS] [CONNECTIONS] [THREADS]
#
# Starts both servers on loopback (PocketBase through .ci/pocketbase.sh, installed from PyPI), creates one record of
# the same content in each (title, 200-character body, number), then runs wrk against one record's GET URL:
#   NCMB dialect: GET /2013-09-01/classes/Bench/{id}, signed once (the signature stays valid for the 15-minute
#                 timestamp tolerance; the dialect still verifies it on every request)
#   PocketBase:   GET /api/collections/bench/records/{id} (public view rule)
# Prints one line per server with requests/s and the ratio. Stops both servers on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION="${1:-10}"; CONNECTIONS="${2:-32}"; THREADS="${3:-2}"
MBAAS=.build/release/mbaas
[ -x "$MBAAS" ] || { echo "build first: swift build -c release --product mbaas" >&2; exit 2; }
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 2; }

tmp=$(mktemp -d)
cleanup() {
  [ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  .ci/pocketbase.sh stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

BODY=$(python3 -c 'print("x" * 200)')
APP=bench-application-key-0123456789; CLIENT=bench-client-key-0123456789

# 1. The NCMB dialect (in memory).
"$MBAAS" serve --dialect ncmb --application-key "$APP" --client-key "$CLIENT" --format json >"$tmp/serve.json" 2>"$tmp/serve.err" &
serve_pid=$!
for _ in $(seq 50); do [ -s "$tmp/serve.json" ] && break; sleep 0.1; done
base=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["baseURL"])' "$tmp/serve.json")
url=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["backendURL"])' "$tmp/serve.json")
id=$("$MBAAS" objects create "$url" Bench "{\"title\":\"bench\",\"body\":\"$BODY\",\"n\":42}" --format json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
get="$base/2013-09-01/classes/Bench/$id"
stamp=$(python3 -c 'import datetime; print(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"))')
sig=$("$MBAAS" ncmb signature --method GET --url "$get" --application-key "$APP" --client-key "$CLIENT" --timestamp "$stamp" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["signature"])')
curl -fsS "$get" -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig" >/dev/null
ncmb_rps=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$get" \
  -H "X-NCMB-Application-Key: $APP" -H "X-NCMB-Timestamp: $stamp" -H "X-NCMB-Signature: $sig" \
  | tee "$tmp/ncmb.wrk" | awk '/Requests\/sec/ {print $2}')
grep -q "Non-2xx" "$tmp/ncmb.wrk" && { echo "NCMB dialect answered errors:" >&2; cat "$tmp/ncmb.wrk" >&2; exit 1; }
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=

# 2. PocketBase.
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
  -d "{\"title\":\"bench\",\"body\":\"$BODY\",\"n\":42}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
pb_get="$pb_base/api/collections/bench/records/$pb_id"
curl -fsS "$pb_get" >/dev/null
pb_rps=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"${DURATION}s" "$pb_get" | tee "$tmp/pb.wrk" | awk '/Requests\/sec/ {print $2}')
grep -q "Non-2xx" "$tmp/pb.wrk" && { echo "PocketBase answered errors:" >&2; cat "$tmp/pb.wrk" >&2; exit 1; }

echo "ncmb dialect  GET record: ${ncmb_rps} req/s  (wrk -t$THREADS -c$CONNECTIONS -d${DURATION}s)"
echo "pocketbase    GET record: ${pb_rps} req/s  (PocketBase $(.tools/venv/bin/pocketbase --version | awk '{print $3}'))"
python3 -c "import sys; print(f'ratio ncmb/pocketbase: {float(sys.argv[1])/float(sys.argv[2]):.2f}')" "$ncmb_rps" "$pb_rps"
