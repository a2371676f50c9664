#!/usr/bin/env bash
# Opening a 1,000,000-file table on S3 with object-store latency: a local S3 server (moto) behind
# a proxy adding DELAY_MS (default 20) to every request and counting them; the log of
# bench/open_1m.sh's table uploaded once; `lakehealth report s3://... --json` vs Python deltalake
# (open_1m.py's job), same run. Usage: [RUNS=3] [DELAY_MS=20] bench/open_s3.sh [FILES] [PARTITIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-1000000}
parts=${2:-1000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
export LAKEHEALTH_CONFIG=/dev/null
cargo build --release --bin lakehealth --example bench_open >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || { echo "needs the test harness's venv (run the tests once) or PYTHON=" >&2; exit 1; }
moto="$(dirname "$py")/moto_server"
dir=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-open-v2-$files-$parts}
if [ ! -f "$dir/_delta_log/_last_checkpoint" ]; then
  rm -rf "$dir"
  "$CARGO_TARGET_DIR/release/examples/bench_open" gen "$dir" "$files" "$parts" >&2
fi
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port); pport=$(free_port)
"$moto" -H 127.0.0.1 -p "$mport" > /dev/null 2>&1 &
mpid=$!
"$py" bench/s3_delay_proxy.py "$pport" "$mport" "${DELAY_MS:-20}" &
ppid=$!
out=$(mktemp)
trap 'kill $mpid $ppid 2>/dev/null || true; rm -f "$out"' EXIT
for _ in $(seq 50); do curl -s "http://127.0.0.1:$mport/" >/dev/null && curl -s "http://127.0.0.1:$pport/__proxy/stats" >/dev/null && break; sleep 0.2; done
"$py" bench/s3_copy.py "http://127.0.0.1:$mport" "$dir" bench t
uri="s3://bench/t"
export AWS_ENDPOINT_URL="http://127.0.0.1:$pport" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true
opts_json=$(printf '{"AWS_ENDPOINT_URL":"http://127.0.0.1:%s","AWS_ACCESS_KEY_ID":"testing","AWS_SECRET_ACCESS_KEY":"testing","AWS_REGION":"us-east-1","AWS_ALLOW_HTTP":"true"}' "$pport")
for _ in $(seq "${RUNS:-3}"); do
  curl -s -X POST "http://127.0.0.1:$pport/__proxy/reset" > /dev/null
  r=$("$py" bench/measure_report.py "$bin" report "$uri" --json -o "AWS_ENDPOINT_URL=http://127.0.0.1:$pport" -o AWS_ALLOW_HTTP=true)
  echo "${r%\}}, \"requests\": $(curl -s "http://127.0.0.1:$pport/__proxy/stats")}" | tee -a "$out"
  curl -s -X POST "http://127.0.0.1:$pport/__proxy/reset" > /dev/null
  r=$(LH_STORAGE_OPTIONS="$opts_json" "$py" bench/open_1m.py "$uri")
  echo "${r%\}}, \"requests\": $(curl -s "http://127.0.0.1:$pport/__proxy/stats")}" | tee -a "$out"
done
"$py" - "$out" "${DELAY_MS:-20}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["tool"], []).append(r)
lh, py = by["lakehealth"], by["python-deltalake"]
assert lh[0]["files"] == py[0]["files"] and lh[0]["bytes"] == py[0]["bytes"], (lh[0], py[0])
t = lambda rs: statistics.median(r["seconds"] for r in rs)
q = lambda rs: statistics.median(r["requests"]["total"] for r in rs)
print(f"S3 (moto) + {sys.argv[2]} ms a request, {lh[0]['files']} files, medians of {len(lh)}: "
      f"lakehealth report {t(lh):.2f} s, {q(lh):.0f} requests; python deltalake {t(py):.2f} s, {q(py):.0f} requests; "
      f"time ratio {t(lh)/t(py):.3f}, requests {q(lh)/q(py):.2f}x")
PY
