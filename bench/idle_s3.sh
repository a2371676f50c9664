#!/usr/bin/env bash
# Watching an idle lakehouse on S3 (#28 item 3): DBS x TABLES Delta tables of 4 small files
# (none due) on a local S3 server (moto) behind a proxy that adds DELAY_MS (default 20) to every
# request and counts them; `lakehealth watch s3://lake` (default policy) for DURATION.
# Reports watching's requests per table per hour, by the janitor's own count (/metrics, after
# its first cycle) and by the proxy's (the whole run, first cycle included), the month's price
# at S3 Standard's rates, cycles and the process's peak RSS. One JSON line.
# Usage: [DBS=10] [TABLES=100] [DURATION=600s] [INTERVAL=10s] [DELAY_MS=20] bench/idle_s3.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || { echo "needs the test harness's venv (run the tests once) or PYTHON=" >&2; exit 1; }
moto="$(dirname "$py")/moto_server"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-idle-s3}
dbs=${DBS:-10}; tables=${TABLES:-100}; duration=${DURATION:-600s}; interval=${INTERVAL:-10s}
export LAKEHEALTH_CONFIG=/dev/null
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port); pport=$(free_port); port=$(free_port)
rm -rf "$work"; mkdir -p "$work"
"$moto" -H 127.0.0.1 -p "$mport" > "$work/moto.log" 2>&1 &
mpid=$!
"$py" bench/s3_delay_proxy.py "$pport" "$mport" "${DELAY_MS:-20}" &
ppid=$!
trap 'kill $mpid $ppid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -s "http://127.0.0.1:$mport/" >/dev/null && curl -s "http://127.0.0.1:$pport/__proxy/stats" >/dev/null && break; sleep 0.2; done
"$ex" gen "$work/base" 4 100 1 >&2
# Every table uploaded directly (no delay), by one process.
"$py" - "http://127.0.0.1:$mport" "$work/base" "$dbs" "$tables" <<'PY'
import os, sys
import boto3
endpoint, root, dbs, tables = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                  aws_secret_access_key="testing", region_name="us-east-1")
s3.create_bucket(Bucket="lake")
files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]
blobs = [(os.path.relpath(p, root), open(p, "rb").read()) for p in files]
for d in range(1, dbs + 1):
    for t in range(1, tables + 1):
        for rel, body in blobs:
            s3.put_object(Bucket="lake", Key=f"db{d}/t{t}/{rel}", Body=body)
PY
n=$((dbs * tables))
echo "$n tables uploaded" >&2
printf 'interval = "%s"\n' "$interval" > "$work/policy.toml"
curl -s -X POST "http://127.0.0.1:$pport/__proxy/reset" > /dev/null
"$bin" watch s3://lake --policy "$work/policy.toml" --history "$work/h.jsonl" \
  --log-file "$work/watch.log" --max-duration "$duration" --metrics-addr "127.0.0.1:$port" \
  -o "AWS_ENDPOINT_URL=http://127.0.0.1:$pport" -o AWS_ACCESS_KEY_ID=testing \
  -o AWS_SECRET_ACCESS_KEY=testing -o AWS_REGION=us-east-1 -o AWS_ALLOW_HTTP=true \
  -o conditional_put=etag > /dev/null 2> "$work/watch.err" &
pid=$!; peak=0; t0=$(date +%s)
while kill -0 "$pid" 2>/dev/null; do
  if curl -sf "http://127.0.0.1:$port/metrics" > "$work/m.tmp"; then
    mv "$work/m.tmp" "$work/metrics"; date +%s > "$work/at"
    if [ ! -f "$work/base.metrics" ] && grep -qE '^lakehealth_janitor_cycles_total [2-9]' "$work/metrics"; then
      cp "$work/metrics" "$work/base.metrics"; date +%s > "$work/base_at"
    fi
  fi
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  [ "${rss:-0}" -gt "$peak" ] && peak=$rss
  sleep 5
done
wait "$pid" || true
secs=$(( $(date +%s) - t0 ))
proxy=$(curl -s "http://127.0.0.1:$pport/__proxy/stats")
"$py" - "$work" "$n" "$peak" "$secs" "$proxy" "${DELAY_MS:-20}" <<'PY'
import json, re, sys
work, n, peak, secs, proxy, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5]), sys.argv[6]
def read(path):
    text = open(path).read()
    get = lambda pat: float(re.search('^' + pat, text, re.M).group(1))
    kinds = {k: int(get(r'lakehealth_janitor_watch_requests_total\{kind="%s"\} (\S+)' % k)) for k in ("get", "list")}
    return kinds, int(get(r"lakehealth_janitor_cycles_total (\S+)"))
kinds, cycles = read(work + "/metrics")
first, first_cycles = read(work + "/base.metrics")
t1, t0 = int(open(work + "/at").read()), int(open(work + "/base_at").read())
steady = {k: kinds[k] - first[k] for k in kinds}
per = sum(steady.values()) / n / max(1, t1 - t0) * 3600
share_get = steady["get"] / max(1, steady["get"] + steady["list"])
usd_month = per * n * 24 * 30 / 1000 * (0.0004 * share_get + 0.005 * (1 - share_get))
print(json.dumps(dict(tables=n, delay_ms=int(delay), seconds=secs, cycles=cycles, steady_cycles=cycles - first_cycles,
    janitor_requests=kinds, after_first_cycles=steady, steady_seconds=t1 - t0, per_table_hour=round(per, 1),
    proxy_requests=proxy, proxy_per_table_hour_whole_run=round(proxy["total"] / n / max(1, secs) * 3600, 1),
    usd_month_s3=round(usd_month, 2), peak_rss_mib=round(peak / 1024, 1))))
PY
