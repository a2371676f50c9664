#!/usr/bin/env bash
# The janitor on an Iceberg table beside a streaming appender: pyiceberg 0.12 appends one small
# file to each of 2 partitions every PERIOD s (default 0.5: 2 commits/s) for SECONDS (default
# 120) through a sqlite SQL catalog, while `lakehealth watch --catalog` runs (min_small_files =
# 20, interval = 5s). The writer runs first alone, then beside the janitor. Reports, from the
# janitor's JSON lines and the table's snapshots: files per partition at every cycle's end
# (max), bytes compaction added per byte the writer added (write amplification), replace
# snapshots, the writer's commit latency p50/p90/p99 (alone and beside the janitor) and its
# retries, the manifests of the final snapshot, and every row exactly once (read back by
# pyiceberg).
# Usage: [ICE_SECONDS=120] [ICE_PERIOD=0.5] bench/iceberg_janitor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
secs=${ICE_SECONDS:-120}
period=${ICE_PERIOD:-0.5}
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-iceberg-janitor}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work"
printf 'min_small_files = 20\ninterval = "5s"\n' > "$work/policy.toml"

for mode in alone janitor; do
  t="$work/$mode"
  "$py" bench/iceberg_writer.py "$t" "$period" 0 --create > /dev/null
  jpid=""
  if [ "$mode" = janitor ]; then
    "$bin" watch "$t/events" --json --policy "$work/policy.toml" \
      --catalog "sqlite:///$t/catalog.db" --history "$work/$mode.history" \
      --log-file "$work/$mode.log" > "$work/$mode.out" 2> "$work/$mode.err" &
    jpid=$!
  fi
  "$py" bench/iceberg_writer.py "$t" "$period" "$secs" > "$work/$mode.writer.jsonl"
  if [ -n "$jpid" ]; then
    sleep 12  # two more cycles after the last append
    kill -TERM "$jpid"; wait "$jpid" || true
  fi
done

"$py" - "$work" <<'PY'
import json, sys
from pyiceberg.catalog.sql import SqlCatalog
work = sys.argv[1]
def lat(path):
    ls = [json.loads(l) for l in open(path) if l.startswith("{")]
    xs = sorted(l["latency_ms"] for l in ls)
    q = lambda p: round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)
    return {"commits": len(xs), "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99),
            "retries": sum(l["retries"] for l in ls), "rows_total": ls[-1]["rows_total"]}
out = {m: {"writer": lat(f"{work}/{m}.writer.jsonl")} for m in ["alone", "janitor"]}
lines = [json.loads(l) for l in open(f"{work}/janitor.out") if l.startswith("{")]
cycles, cur = [], {}
for l in lines:
    if l["type"] == "decision":
        cur["/".join(f"{k}={v}" for k, v in l["partition"].items())] = l["files"]
    if l["type"] == "cycle":
        if cur:
            cycles.append(max(cur.values()))
        cur = {}
results = [l for l in lines if l["type"] == "result"]
cat = SqlCatalog("lh", uri=f"sqlite:///{work}/janitor/catalog.db", warehouse=f"file://{work}/janitor")
t = cat.load_table("db.events")
writer_bytes = comp_bytes = replaces = 0
for s in t.metadata.snapshots:
    summ = s.summary.additional_properties if s.summary else {}
    added = int(summ.get("added-files-size", 0))
    if s.summary and s.summary.operation.value == "replace":
        replaces += 1; comp_bytes += added
    else:
        writer_bytes += added
ids = t.scan().to_arrow().column("id").to_pylist()
files = {}
for f in t.inspect.files().to_pylist():
    p = f["partition"]["category"]
    files[p] = files.get(p, 0) + 1
out["janitor"].update({
    "replace_snapshots": replaces,
    "results": {o: sum(1 for r in results if r["outcome"] == o) for o in {r["outcome"] for r in results}},
    "max_files_per_partition_at_cycle_end": max(cycles) if cycles else None,
    "cycles": len(cycles),
    "write_amplification": round(comp_bytes / writer_bytes, 2) if writer_bytes else None,
    "rows": len(ids), "rows_written": out["janitor"]["writer"]["rows_total"],
    "distinct_ids": len(set(ids)),
    "files_per_partition_final": files,
    "manifests_final": len(t.current_snapshot().manifests(t.io)),
    "snapshots_final": len(t.metadata.snapshots),
    "writer_alone_adds_per_partition": out["janitor"]["writer"]["commits"],
})
a, j = out["alone"]["writer"], out["janitor"]["writer"]
out["p50_ratio"] = round(j["p50_ms"] / a["p50_ms"], 2)
out["p90_ratio"] = round(j["p90_ms"] / a["p90_ms"], 2)
out["p99_ratio"] = round(j["p99_ms"] / a["p99_ms"], 2)
print(json.dumps(out, indent=1))
PY
