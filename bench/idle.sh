#!/usr/bin/env bash
# Watching an idle lakehouse (#28 item 3): DBS x TABLES tables under one root, none due (a few
# small files each, written before the run), `lakehealth watch ROOT` for DURATION, twice: with
# the default policy (idle tables read at doubling intervals up to idle_poll_max, the root
# listed every discover_every) and with both set to the cycle's interval (every table read and
# the root listed every cycle: the janitor before this change). Reports watching's requests by
# kind and per table per hour (its /metrics, scraped until it stops), the price of a month of
# it at S3 Standard's rates, and the process's peak RSS. One JSON line per run.
# Usage: [DBS=10] [TABLES=1000] [DURATION=240s] [INTERVAL=10s] [RUNS="default every_cycle"] bench/idle.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-idle}
dbs=${DBS:-10}; tables=${TABLES:-1000}; duration=${DURATION:-240s}; interval=${INTERVAL:-10s}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work/lake"
"$ex" gen "$work/base" 4 100 1 >&2
for d in $(seq "$dbs"); do
  mkdir -p "$work/lake/db$d"
  # One cp per database: thousands of processes would take longer than the run.
  ( cd "$work/lake/db$d" && for t in $(seq "$tables"); do mkdir "t$t"; done \
    && for t in $(seq "$tables"); do echo "t$t"; done | xargs -P 2 -I{} cp -r "$work/base/." {} )
done
n=$((dbs * tables))
echo "$n tables" >&2
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run() {  # name, policy text
  local name=$1 port; port=$(free_port)
  printf '%s' "$2" > "$work/$name.toml"
  "$bin" watch "$work/lake" --policy "$work/$name.toml" --history "$work/$name.jsonl" \
    --log-file "$work/$name.log" --max-duration "$duration" \
    --metrics-addr "127.0.0.1:$port" > /dev/null 2> "$work/$name.err" &
  local pid=$! peak=0 rss
  while kill -0 "$pid" 2>/dev/null; do
    if curl -sf "http://127.0.0.1:$port/metrics" > "$work/$name.metrics.tmp"; then
      mv "$work/$name.metrics.tmp" "$work/$name.metrics"; date +%s > "$work/$name.at"
      # The steady state starts after the first cycle (which opens every table once).
      if [ ! -f "$work/$name.base" ] && grep -qE '^lakehealth_janitor_cycles_total [2-9]' "$work/$name.metrics"; then
        cp "$work/$name.metrics" "$work/$name.base"; date +%s > "$work/$name.base_at"
      fi
    fi
    rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    [ "${rss:-0}" -gt "$peak" ] && peak=$rss
    sleep 5
  done
  wait "$pid" || true
  "$py" - "$work/$name" "$name" "$n" "$peak" "$duration" <<'PY'
import json, re, sys
base = sys.argv[1]
def read(suffix):
    text = open(base + suffix).read()
    get = lambda pat: float(re.search('^' + pat, text, re.M).group(1))
    kinds = {k: int(get(r'lakehealth_janitor_watch_requests_total\{kind="%s"\} (\S+)' % k)) for k in ("get", "list", "put", "delete")}
    return kinds, int(get(r"lakehealth_janitor_cycles_total (\S+)"))
kinds, cycles = read(".metrics")
first, first_cycles = read(".base")
t1, t0 = int(open(base + ".at").read()), int(open(base + ".base_at").read())
tables = int(sys.argv[3])
steady = {k: kinds[k] - first[k] for k in kinds}
per = sum(steady.values()) / tables / max(1, t1 - t0) * 3600
kinds = dict(total=kinds, after_first_cycles=steady, steady_seconds=t1 - t0, steady_cycles=cycles - first_cycles)
# A month of it at S3 Standard's list prices: GET 0.0004, LIST 0.005 per 1,000.
share_get = steady["get"] / max(1, steady["get"] + steady["list"])
usd_month = per * tables * 24 * 30 / 1000 * (0.0004 * share_get + 0.005 * (1 - share_get))
print(json.dumps(dict(run=sys.argv[2], tables=tables, duration=sys.argv[5], cycles=cycles, requests=kinds,
                      per_table_hour=per, usd_month_s3=round(usd_month, 2), peak_rss_mib=round(int(sys.argv[4]) / 1024, 1))))
PY
}
runs=${RUNS:-default every_cycle}
for r in $runs; do
  case $r in
    default) run default "interval = \"$interval\"
" ;;
    every_cycle) run every_cycle "interval = \"$interval\"
idle_poll_max = \"$interval\"
discover_every = \"$interval\"
" ;;
  esac
done
