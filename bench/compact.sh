#!/usr/bin/env bash
# Compaction benchmark, side by side in one run on identical copies of a generated table of
# 2,000 small files (~500 MB, 4 partitions): lakehealth compact vs Python deltalake's
# optimize.compact() vs the parquet-crate floor (same rows rewritten, no table format).
# Then the streaming writer's commit latency (p50/p99) without and with a compaction running.
# Usage: bench/compact.sh   (Python deltalake + pyarrow: the test harness's venv when it exists,
# else python3 with them installed); LATENCY_ONLY=1 for the last part
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-compact}
target=$((128 * 1024 * 1024))
export LAKEHEALTH_CONFIG=/dev/null
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
if [ ! -f "$work/base/_delta_log/00000000000000000000.json" ]; then
  rm -rf "$work"; mkdir -p "$work"
  "$ex" gen "$work/base" 500 8000
fi
du -sh "$work/base" >&2
out="$work/results.jsonl"; : > "$out"
if [ "${LATENCY_ONLY:-0}" != 1 ]; then
for tool in lakehealth lakehealth-p2 python floor; do
  rm -rf "$work/$tool"; cp -r "$work/base" "$work/$tool"
done
sync
for p in 1 2; do
  dir="$work/lakehealth"; [ "$p" = 2 ] && dir="$work/lakehealth-p2"
  t0=$(date +%s.%N)
  "$bin" compact "$dir" --target 128MiB --parallelism "$p" --json > "$work/lh-p$p.json"
  t1=$(date +%s.%N)
  # seconds: the whole process (open, plan, rewrite, commits); execute_seconds: rewrite + commits.
  "$py" -c "import json; s=json.load(open('$work/lh-p$p.json')); print(json.dumps({'tool':'lakehealth-p$p','seconds':$t1-$t0,'execute_seconds':s['seconds'],'verify_seconds':s['verify_seconds'],'files_removed':s['files_removed'],'files_added':s['files_added'],'bytes_out':s['bytes_added'],'commits':len(s['commits'])}))" | tee -a "$out"
done
"$py" bench/py_optimize.py "$work/python" "$target" | tee -a "$out"
"$ex" floor "$work/floor" "$work/floor-out" "$target" | tee -a "$out"

fi

# Writer latency without and with a compaction running: one micro-batch every 100 ms; the
# "with" numbers count only the commits that landed while the compaction ran, the "alone"
# numbers a window of the same length before it.
rm -rf "$work/lat"; cp -r "$work/base" "$work/lat"
"$bin" stream "$work/lat" --interval 100ms --rows 500 --query-id lat --batches 400 > "$work/lat.jsonl" 2>/dev/null &
spid=$!
sleep 12
c0=$(date +%s%3N)
"$bin" compact "$work/lat" --target 128MiB > /dev/null 2>&1 || true
c1=$(date +%s%3N)
wait $spid
len=$((c1 - c0))
"$py" bench/latency.py "$work/lat.jsonl" $((c0 - len - 1000)) $((c0 - 1000)) | sed 's/^{/{"latency": "alone", /' | tee -a "$out"
"$py" bench/latency.py "$work/lat.jsonl" "$c0" "$c1" | sed 's/^{/{"latency": "with_compaction", /' | tee -a "$out"

[ "${LATENCY_ONLY:-0}" = 1 ] && exit 0
"$py" - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
t = {r["tool"]: r for r in rows if "tool" in r}
lat = {r["latency"]: r for r in rows if "latency" in r}
l1, l2 = t["lakehealth-p1"], t["lakehealth-p2"]
py, fl = t["python-deltalake"]["seconds"], t["parquet-floor"]["seconds"]
print(f"python-deltalake optimize.compact() {py:.2f}s (2 threads)   parquet floor {fl:.2f}s (1 thread)")
for name, l in (("lakehealth --parallelism 1", l1), ("lakehealth --parallelism 2", l2)):
    print(f"{name}: process {l['seconds']:.2f}s, rewrite+commits {l['execute_seconds']:.2f}s, {l['commits']} commits, "
          f"/python {l['seconds']/py:.2f} (execute {l['execute_seconds']/py:.2f}), /floor {l['seconds']/fl:.2f} (execute {l['execute_seconds']/fl:.2f})")
print(f"outputs: lakehealth {l1['files_added']} ({l1['bytes_out']/4/2**20:.0f} MiB avg), python {t['python-deltalake']['files_added']}, floor {t['parquet-floor']['outputs']}")
a, w = lat["alone"], lat["with_compaction"]
print(f"writer commit latency alone (n={a['n']}): p50 {a['p50_ms']:.0f} ms p95 {a['p95_ms']:.0f} ms p99 {a['p99_ms']:.0f} ms; "
      f"during compaction (n={w['n']}): p50 {w['p50_ms']:.0f} ms p95 {w['p95_ms']:.0f} ms p99 {w['p99_ms']:.0f} ms; "
      f"ratios p50 {w['p50_ms']/a['p50_ms']:.2f} p99 {w['p99_ms']/a['p99_ms']:.2f}")
PY
