#!/usr/bin/env bash
# Compaction on S3 with object-store latency, side by side in one run: a local S3 server (moto)
# behind a proxy that adds DELAY_MS (default 20) to every request and counts them; identical
# copies of a generated table of FILES_PER_PARTITION x PARTITIONS small files; lakehealth
# compact (defaults) vs Python deltalake's optimize.compact() (open + compact, in-process).
# Every run's rows are read back by Python deltalake and must equal the source's.
# Usage: [ROUNDS=3] [DELAY_MS=20] [FILES_PER_PARTITION=100] [PARTITIONS=4] bench/s3.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || { echo "needs the test harness's venv (run the tests once) or PYTHON=" >&2; exit 1; }
moto="$(dirname "$py")/moto_server"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-s3}
export LAKEHEALTH_CONFIG=/dev/null
target=$((128 * 1024 * 1024))
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mport=$(free_port); pport=$(free_port)
"$moto" -H 127.0.0.1 -p "$mport" > "$work.moto.log" 2>&1 &
mpid=$!
"$py" bench/s3_delay_proxy.py "$pport" "$mport" "${DELAY_MS:-20}" &
ppid=$!
trap 'kill $mpid $ppid 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -s "http://127.0.0.1:$mport/" >/dev/null && curl -s "http://127.0.0.1:$pport/__proxy/stats" >/dev/null && break; sleep 0.2; done

rm -rf "$work"; mkdir -p "$work"
"$ex" gen "$work/base" "${FILES_PER_PARTITION:-100}" "${ROWS:-4000}" "${PARTITIONS:-4}" >&2
du -sh "$work/base" >&2
opts_json=$(printf '{"AWS_ENDPOINT_URL":"http://127.0.0.1:%s","AWS_ACCESS_KEY_ID":"testing","AWS_SECRET_ACCESS_KEY":"testing","AWS_REGION":"us-east-1","AWS_ALLOW_HTTP":"true","conditional_put":"etag"}' "$pport")
direct_json=${opts_json/$pport/$mport}
cli_opts=()
for kv in "AWS_ENDPOINT_URL=http://127.0.0.1:$pport" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true conditional_put=etag; do
  cli_opts+=(-o "$kv"); done
rows() { LH_STORAGE_OPTIONS="$direct_json" "$py" -c '
import json, os, sys
from deltalake import DeltaTable
t = DeltaTable(sys.argv[1], storage_options=json.loads(os.environ["LH_STORAGE_OPTIONS"])).to_pyarrow_table()
import pyarrow.compute as pc
print(t.num_rows, pc.sum(t.column("reading")).as_py(), flush=True)
os._exit(0)  # pyarrow and the deltalake runtime can abort on interpreter teardown' "$1"; }
# The writer that made the table stopped: wait until it is not "active" (a few of its intervals).
sleep 5
out="$work/results.jsonl"; : > "$out"
for round in $(seq "${ROUNDS:-3}"); do
  for tool in lakehealth python; do
    uri="s3://bench$round/$tool"
    "$py" bench/s3_copy.py "http://127.0.0.1:$mport" "$work/base" "bench$round" "$tool"
    want=$(rows "$uri")
    if [ "$tool" = lakehealth ]; then
      # The requests of opening and planning alone (a dry run), so the proxy's count of the real
      # run minus these is the job's, an independent check of the plan's estimate.
      curl -s -X POST "http://127.0.0.1:$pport/__proxy/reset" > /dev/null
      "$bin" compact "$uri" --target 128MiB --dry-run --json "${cli_opts[@]}" > "$work/plan.json"
      planning=$(curl -s "http://127.0.0.1:$pport/__proxy/stats")
    fi
    curl -s -X POST "http://127.0.0.1:$pport/__proxy/reset" > /dev/null
    t0=$(date +%s.%N)
    if [ "$tool" = lakehealth ]; then
      "$bin" compact "$uri" --target 128MiB --json "${cli_opts[@]}" > "$work/lh.json"
      secs=$(echo "$(date +%s.%N) - $t0" | bc)
      extra=$("$py" -c "
import json
s = json.load(open('$work/lh.json'))
total = lambda c: c['get'] + c['put'] + c['list'] + c['delete']
print(json.dumps({'files_removed': s['files_removed'], 'files_added': s['files_added'], 'commits': len(s['commits']),
  'planning_requests': json.loads('$planning')['total'], 'estimate': total(s['estimate']), 'actual': total(s['actual']),
  'estimate_usd': s['estimate']['usd'], 'actual_usd': s['actual']['usd']}))")
    else
      r=$(LH_STORAGE_OPTIONS="$opts_json" "$py" bench/py_optimize.py "$uri" "$target")
      secs=$("$py" -c "import json,sys; r=json.loads(sys.argv[1]); print(r['seconds'] + r['open_seconds'])" "$r")
      extra=$r
    fi
    stats=$(curl -s "http://127.0.0.1:$pport/__proxy/stats")
    got=$(rows "$uri")
    [ "$got" = "$want" ] || { echo "round $round $tool: rows/ids $got, want $want" >&2; exit 1; }
    "$py" -c "import json,sys; e=json.loads(sys.argv[3]); e.pop('tool', None); e['compact_seconds'] = e.pop('seconds', None); print(json.dumps(dict(round=$round, tool='$tool', seconds=float(sys.argv[1]), requests=json.loads(sys.argv[2]), rows='$got', **e)))" "$secs" "$stats" "$extra" | tee -a "$out"
  done
done

"$py" - "$out" "${DELAY_MS:-20}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["tool"], []).append(r)
med = lambda t, f: statistics.median(f(r) for r in by[t])
lh, py = med("lakehealth", lambda r: r["seconds"]), med("python", lambda r: r["seconds"])
lq, pq = med("lakehealth", lambda r: r["requests"]["total"]), med("python", lambda r: r["requests"]["total"])
per = ", ".join(f"{a['seconds']/b['seconds']:.2f}" for a, b in zip(by["lakehealth"], by["python"]))
for r in by["lakehealth"]:
    proxy = r["requests"]["total"] - r["planning_requests"]
    print(f"round {r['round']}: estimate {r['estimate']} requests (${r['estimate_usd']:.5f}), counted by lakehealth {r['actual']} (${r['actual_usd']:.5f}), "
          f"by the proxy {proxy} (the run's {r['requests']['total']} minus the dry run's {r['planning_requests']}): estimate/proxy {r['estimate']/proxy:.3f}")
print(f"S3 (moto) + {sys.argv[2]} ms per request, medians of {len(by['python'])} round(s): lakehealth compact {lh:.2f}s, "
      f"python deltalake open+optimize.compact() {py:.2f}s: ratio {lh/py:.2f} (per round: {per}); "
      f"requests {lq:.0f} vs {pq:.0f} ({lq/pq:.2f}x); by method lakehealth {by['lakehealth'][0]['requests']}, python {by['python'][0]['requests']}")
PY
