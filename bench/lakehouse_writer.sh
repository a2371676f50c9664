#!/usr/bin/env bash
# A writer on one table of a lakehouse (#28): DBS x TABLES due tables (60 small files each, as
# bench/lakehouse.sh) plus one table a Python deltalake writer appends to every PERIOD seconds.
# First the writer alone for SECONDS (its latency baseline), then the same writer on a fresh
# copy while `lakehealth watch ROOT` (default policy) runs: the other tables are compacted while
# the writer's table is paced. Reports the writer's p50/p90/p99 commit latency both times, how
# many tables were compacted during the writer's run, and every compacted table's rows (Python
# deltalake). One JSON line.
# Usage: [DBS=10] [TABLES=50] [PERIOD=0.2] [RUN_SECONDS=60] bench/lakehouse_writer.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || { echo "needs the test harness's venv (run the tests once) or PYTHON=" >&2; exit 1; }
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-lakehouse-writer}
dbs=${DBS:-10}; tables=${TABLES:-50}; period=${PERIOD:-0.2}; secs=${RUN_SECONDS:-60}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work/lake"
"$ex" gen "$work/base" 60 500 1 >&2
for d in $(seq "$dbs"); do
  mkdir -p "$work/lake/db$d"
  ( cd "$work/lake/db$d" && for t in $(seq "$tables"); do mkdir "t$t"; done \
    && for t in $(seq "$tables"); do echo "t$t"; done | xargs -P 2 -I{} cp -r "$work/base/." {} )
done

# Baseline: the writer alone.
"$py" bench/janitor_writer.py "$work/alone" "$period" 0 --create > /dev/null
"$py" bench/janitor_writer.py "$work/alone" "$period" "$secs" > "$work/alone.writer.jsonl"

# The writer's table under the root, beside the janitor.
"$py" bench/janitor_writer.py "$work/lake/db1/stream" "$period" 0 --create > /dev/null
"$bin" watch "$work/lake" --json --history "$work/history.jsonl" --log-file "$work/watch.log" \
  > "$work/watch.out" 2> "$work/watch.err" &
jpid=$!
"$py" bench/janitor_writer.py "$work/lake/db1/stream" "$period" "$secs" > "$work/janitor.writer.jsonl"
kill -INT "$jpid"; wait "$jpid" || true

"$py" - "$work" "$dbs" "$tables" <<'PY'
import json, sys
from deltalake import DeltaTable
work, dbs, tables = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def lat(path):
    xs = sorted(json.loads(l)["latency_ms"] for l in open(path) if l.startswith("{"))
    q = lambda p: round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)
    return {"commits": len(xs), "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99)}
alone, beside = lat(f"{work}/alone.writer.jsonl"), lat(f"{work}/janitor.writer.jsonl")
lines = [json.loads(l) for l in open(f"{work}/watch.out") if l.startswith("{")]
done = {l["table"] for l in lines if l.get("type") == "result" and l.get("outcome") == "compacted"}
stream_jobs = sum(1 for l in lines if l.get("type") == "result" and l["table"].endswith("/db1/stream"))
base = DeltaTable(f"{work}/base").to_pyarrow_table().num_rows
bad = []
for d in range(1, dbs + 1):
    for t in range(1, tables + 1):
        dt = DeltaTable(f"{work}/lake/db{d}/t{t}")
        if dt.to_pyarrow_table().num_rows != base:
            bad.append(f"db{d}/t{t}")
others = sum(1 for t in done if not t.endswith("/db1/stream"))
print(json.dumps({"tables": dbs * tables, "compacted_during_the_writer": others,
  "writer_table_results": stream_jobs, "rows_wrong": bad, "writer_alone": alone, "writer_beside_watch": beside,
  "p90_ratio": round(beside["p90_ms"] / alone["p90_ms"], 2), "p99_ratio": round(beside["p99_ms"] / alone["p99_ms"], 2),
  "p50_ratio": round(beside["p50_ms"] / alone["p50_ms"], 2)}))
PY
