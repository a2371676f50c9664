#!/usr/bin/env bash
# Compaction benchmark, side by side in one run on identical copies of a generated table of
# 2,000 small files (~500 MB, 4 partitions): lakehealth compact vs Python deltalake's
# optimize.compact() vs the parquet-crate floor (same rows rewritten, no table format).
# Then the streaming writer's commit latency (p50/p99) without and with a compaction running.
# Usage: bench/compact.sh   (needs: pip install deltalake pyarrow)
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-compact}
target=$((128 * 1024 * 1024))
export LAKEHEALTH_CONFIG=/dev/null
if [ ! -f "$work/base/_delta_log/00000000000000000000.json" ]; then
  rm -rf "$work"; mkdir -p "$work"
  "$ex" gen "$work/base" 500 8000
fi
du -sh "$work/base" >&2
out="$work/results.jsonl"; : > "$out"
for tool in lakehealth python floor; do
  rm -rf "$work/$tool"; cp -r "$work/base" "$work/$tool"
done
sync
t0=$(date +%s.%N)
"$bin" compact "$work/lakehealth" --target 128MiB --json > "$work/lh.json"
t1=$(date +%s.%N)
python3 -c "import json,sys; s=json.load(open('$work/lh.json')); print(json.dumps({'tool':'lakehealth','seconds':$t1-$t0,'files_removed':s['files_removed'],'files_added':s['files_added'],'commits':len(s['commits'])}))" | tee -a "$out"
python3 bench/py_optimize.py "$work/python" "$target" | tee -a "$out"
"$ex" floor "$work/floor" "$work/floor-out" "$target" | tee -a "$out"

# Writer latency without and with a compaction running.
for mode in alone with_compaction; do
  rm -rf "$work/lat"; cp -r "$work/base" "$work/lat"
  "$bin" stream "$work/lat" --interval 250ms --rows 500 --query-id "lat-$mode" --batches 120 > "$work/lat-$mode.jsonl" 2>/dev/null &
  spid=$!
  if [ "$mode" = with_compaction ]; then
    sleep 2
    "$bin" compact "$work/lat" --target 128MiB > /dev/null 2>&1 || true
  fi
  wait $spid
  python3 bench/latency.py "$work/lat-$mode.jsonl" | sed "s/^{/{\"latency\": \"$mode\", /" | tee -a "$out"
done

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
t = {r["tool"]: r for r in rows if "tool" in r}
lat = {r["latency"]: r for r in rows if "latency" in r}
lh, py, fl = t["lakehealth"]["seconds"], t["python-deltalake"]["seconds"], t["parquet-floor"]["seconds"]
print(f"lakehealth {lh:.2f}s  python-deltalake {py:.2f}s  parquet floor {fl:.2f}s")
print(f"lakehealth/python = {lh/py:.2f}   lakehealth/floor = {lh/fl:.2f}")
print(f"outputs: lakehealth {t['lakehealth']['files_added']}, python {t['python-deltalake']['files_added']}, floor {t['parquet-floor']['outputs']}")
a, w = lat["alone"], lat["with_compaction"]
print(f"writer latency alone p50 {a['p50_ms']:.0f} ms p99 {a['p99_ms']:.0f} ms; with compaction p50 {w['p50_ms']:.0f} ms p99 {w['p99_ms']:.0f} ms; p99 ratio {w['p99_ms']/a['p99_ms']:.2f}")
PY
