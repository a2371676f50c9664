#!/usr/bin/env bash
# The janitor over a whole lakehouse (#28): DBS databases x TABLES tables under one root, each
# a sensor table with 60 small files in today's partition (due under the default policy).
# `lakehealth watch ROOT --once` (default policy: one queue, max_jobs slots) beside the peer, a
# Python loop that opens each table of an identical copy with deltalake and runs
# optimize.compact(). Then every table of both copies is read back by Python deltalake: rows,
# distinct ids and files per table. Also `report ROOT --json`'s time. One JSON line of results.
# Usage: [DBS=10] [TABLES=50] bench/lakehouse.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-lakehouse}
dbs=${DBS:-10}
tables=${TABLES:-50}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"
mkdir -p "$work"
"$ex" gen "$work/base" 60 500 1 >&2
for d in $(seq "$dbs"); do
  for t in $(seq "$tables"); do
    mkdir -p "$work/lh/db$d" "$work/py/db$d"
    cp -r "$work/base" "$work/lh/db$d/t$t"
    cp -r "$work/base" "$work/py/db$d/t$t"
  done
done
sync
ms() { date +%s%3N; }

r0=$(ms)
"$bin" report "$work/lh" --json > "$work/report.json"
r1=$(ms)

w0=$(ms)
"$bin" watch "$work/lh" --once --json --history "$work/history.jsonl" \
  --log-file "$work/watch.log" > "$work/watch.jsonl" 2> "$work/watch.err"
w1=$(ms)

p0=$(ms)
"$py" - "$work/py" <<'PY'
import pathlib, sys
from deltalake import DeltaTable
for log in sorted(pathlib.Path(sys.argv[1]).glob("*/*/_delta_log")):
    DeltaTable(str(log.parent)).optimize.compact()
PY
p1=$(ms)

"$py" - "$work" "$((r1 - r0))" "$((w1 - w0))" "$((p1 - p0))" <<'PY'
import json, pathlib, sys
from deltalake import DeltaTable
work, report_ms, watch_ms, py_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
base = DeltaTable(f"{work}/base")
base_rows = base.to_pyarrow_table(columns=["event_id"]).num_rows

def check(root):
    bad, files = [], []
    for log in sorted(pathlib.Path(root).glob("*/*/_delta_log")):
        t = DeltaTable(str(log.parent))
        ids = t.to_pyarrow_table(columns=["event_id"]).column("event_id").to_pylist()
        if len(ids) != base_rows or len(set(ids)) != base_rows:
            bad.append(str(log.parent))
        files.append(len(t.file_uris()))
    return bad, files

lh_bad, lh_files = check(f"{work}/lh")
py_bad, py_files = check(f"{work}/py")
lines = [json.loads(l) for l in open(f"{work}/watch.jsonl") if l.startswith("{")]
results = [l for l in lines if l.get("type") == "result"]
print(json.dumps({
    "tables": len(lh_files),
    "report_root_seconds": report_ms / 1000,
    "watch_once_seconds": watch_ms / 1000,
    "python_loop_seconds": py_ms / 1000,
    "ratio_vs_python": round(watch_ms / py_ms, 3),
    "compacted": sum(1 for r in results if r.get("outcome") == "compacted"),
    "queued_lines": sum(1 for l in lines if l.get("type") == "activity"
                        and str(l.get("message", "")).startswith("queued ")),
    "files_per_table_after": {"lakehealth_max": max(lh_files), "python_max": max(py_files)},
    "rows_exact": {"lakehealth": not lh_bad, "python": not py_bad},
    "bad_tables": lh_bad[:5] + py_bad[:5],
}))
PY
