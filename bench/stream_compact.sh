#!/usr/bin/env bash
# Compaction beside a fast streaming writer: a 1.6 GB table of 1,800 small files (2 partitions x
# 900 files of ~0.9 MB), a `lakehealth stream` writer committing every 100 ms (10 commits/s) in
# another process, and `lakehealth compact` with its defaults started 10 s after the writer. Per
# trial: how long the compaction took, the writer's commit latency p50/p90/p99 in the 10 s
# before it and while it ran, their ratios, and the pace it ended at (its JSON `pace`). Then
# the same table compacted right after a batch load stopped (no writer: full speed) beside
# Python deltalake's optimize.compact() on an identical copy. Every row is checked after each
# run by Python deltalake (rows, distinct ids).
# Usage: [TRIALS=3] bench/stream_compact.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-stream}
export LAKEHEALTH_CONFIG=/dev/null
if [ ! -f "$work/base/_delta_log/00000000000000000000.json" ]; then
  rm -rf "$work"; mkdir -p "$work"
  "$ex" gen "$work/base" 900 36000 2
fi
du -sh "$work/base" >&2
out="$work/results.jsonl"; : > "$out"
count_rows() {
  "$py" -c "import sys; from deltalake import DeltaTable; t=DeltaTable(sys.argv[1]).to_pyarrow_table(columns=['event_id']); ids=t.column('event_id').to_pylist(); print(len(ids), len(set(ids)), len(DeltaTable(sys.argv[1]).file_uris()))" "$1"
}

for trial in $(seq "${TRIALS:-3}"); do
  t="$work/stream-$trial"
  rm -rf "$t"; cp -r "$work/base" "$t"; sync
  "$bin" stream "$t" --interval 100ms --rows 500 --query-id bench --batches 900 \
    > "$work/stream-$trial.writer.jsonl" 2>/dev/null &
  spid=$!
  sleep 10
  c0=$(date +%s%3N)
  "$bin" compact "$t" --json > "$work/stream-$trial.compact.json" 2> "$work/stream-$trial.compact.err"
  c1=$(date +%s%3N)
  wait $spid
  before=$("$py" bench/latency.py "$work/stream-$trial.writer.jsonl" $((c0 - 10000)) "$c0")
  during=$("$py" bench/latency.py "$work/stream-$trial.writer.jsonl" "$c0" "$c1")
  read -r rows distinct files < <(count_rows "$t")
  written=$("$py" -c "import json,sys; print(sum(json.loads(l)['rows'] for l in open(sys.argv[1]) if l.startswith('{')))" "$work/stream-$trial.writer.jsonl")
  base_rows=$((900 * 36000 * 2))
  "$py" - "$work/stream-$trial.compact.json" "$trial" "$c0" "$c1" "$before" "$during" "$rows" "$distinct" "$((base_rows + written))" "$files" <<'PY' | tee -a "$out"
import json, sys
s = json.load(open(sys.argv[1]))
trial, c0, c1 = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
before, during = json.loads(sys.argv[5]), json.loads(sys.argv[6])
print(json.dumps({"scenario": "stream", "trial": trial, "seconds": (c1 - c0) / 1000,
                  "files_removed": s["files_removed"], "commits": len(s["commits"]),
                  "pace": (s.get("pace") or {}).get("why"),
                  "pace_bytes_per_second": (s.get("pace") or {}).get("bytes_per_second"),
                  "before": before, "during": during,
                  "p50_ratio": during["p50_ms"] / before["p50_ms"],
                  "p90_ratio": during["p90_ms"] / before["p90_ms"],
                  "p99_ratio": during["p99_ms"] / before["p99_ms"],
                  "rows": int(sys.argv[7]), "distinct_ids": int(sys.argv[8]), "rows_expected": int(sys.argv[9]),
                  "files_after": int(sys.argv[10])}))
PY
done

# A batch load that just stopped: the base table's last commit is its load; its copy is
# written a few seconds before each tool runs (a fresh append, then nothing).
for trial in $(seq "${TRIALS:-3}"); do
  for tool in lakehealth python; do
    t="$work/batch-$tool"
    rm -rf "$t"; cp -r "$work/base" "$t"; sync
    # The load's tail: 30 appends 100 ms apart, ending 2 s before the compaction.
    "$bin" stream "$t" --interval 100ms --rows 500 --query-id load --batches 30 > /dev/null 2>&1
    sleep 2
    c0=$(date +%s%3N)
    if [ "$tool" = lakehealth ]; then
      "$bin" compact "$t" --json > "$work/batch-$tool.json" 2> "$work/batch-$tool.err"
    else
      "$py" bench/py_optimize.py "$t" $((128 * 1024 * 1024)) > "$work/batch-$tool.json"
    fi
    c1=$(date +%s%3N)
    read -r rows distinct files < <(count_rows "$t")
    echo "{\"scenario\": \"batch\", \"trial\": $trial, \"tool\": \"$tool\", \"seconds\": $(( c1 - c0 ))e-3, \"rows\": $rows, \"distinct_ids\": $distinct, \"files_after\": $files, \"throttle\": $("$py" -c "import json,sys; print(json.dumps(next((l for l in open(sys.argv[1]) if l.startswith('parallelism:')), None)))" "$work/batch-$tool.err" 2>/dev/null || echo null)}" | tee -a "$out"
  done
done

"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
st = [r for r in rows if r["scenario"] == "stream"]
if st:
    med = lambda k: statistics.median(r[k] for r in st)
    took = ", ".join("%.1f" % r["seconds"] for r in st)
    p90s = ", ".join("%.2f" % r["p90_ratio"] for r in st)
    p99s = ", ".join("%.2f" % r["p99_ratio"] for r in st)
    exact = all(r["rows"] == r["distinct_ids"] == r["rows_expected"] for r in st)
    print(f"beside a 10 commits/s writer, {len(st)} trial(s): compact took {took} s (median {med('seconds'):.1f} s); "
          f"writer p90 during / 10 s before: {p90s} (median {med('p90_ratio'):.2f}); p99: {p99s} (median {med('p99_ratio'):.2f}); "
          f"p50 median {med('p50_ratio'):.2f}; rows exact: {exact}")
b = [r for r in rows if r["scenario"] == "batch"]
if b:
    lh = [r["seconds"] for r in b if r["tool"] == "lakehealth"]
    py = [r["seconds"] for r in b if r["tool"] == "python"]
    per = ", ".join("%.2f" % (a / p) for a, p in zip(lh, py))
    print(f"after a batch load that stopped 2 s earlier: lakehealth {statistics.median(lh):.1f} s (whole process), "
          f"python optimize.compact() {statistics.median(py):.1f} s (in-process), ratio {statistics.median(lh) / statistics.median(py):.2f} (per trial {per})")
PY
