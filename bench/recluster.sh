#!/usr/bin/env bash
# Re-clustering beside a stream: a Python deltalake writer appends one file of RECLUSTER_ROWS
# rows (default 2000) per partition (2 partitions) every 0.5 s for RECLUSTER_SECONDS (default
# 300), each row with a random `sensor` (0..499), while `lakehealth watch` keeps the table's
# files sorted by sensor (`strategy = "sort"`, `columns = ["sensor"]`: each merged bin ordered,
# target 1 MiB, small below 512 KiB, min_small_files 20). Two runs, each on its own table:
#   merge      the small-file merges alone (their bins sorted, but the merged files overlap)
#   recluster  the same policy with max_depth = 4 (depth read at most every 20 s)
# Reports per run, from the log (read as plain JSON) and Python deltalake's statistics
# (get_add_actions, brute-force depth): the mean depth of `sensor` among each partition's files
# of at least 512 KiB and among all files, the share of files a lookup `sensor = 250` opens,
# files per partition, bytes the janitor's merges and its re-clustering wrote per byte the
# writer wrote (counted apart by their commits' lakehealth.trigger), the writer's commit
# latency p50/p90/p99, and every row exactly once.
# Usage: [RECLUSTER_SECONDS=300] [RECLUSTER_ROWS=2000] bench/recluster.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
secs=${RECLUSTER_SECONDS:-300}
rows=${RECLUSTER_ROWS:-2000}
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-recluster}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work"
base='min_small_files = 20
interval = "5s"
target_file_size = "1MiB"
small_file_size = "512KiB"
strategy = "sort"
columns = ["sensor"]
'
printf '%s' "$base" > "$work/merge.toml"
printf '%smax_depth = 4\ndepth_every = "20s"\n' "$base" > "$work/recluster.toml"

for mode in merge recluster; do
  t="$work/$mode"
  "$py" bench/janitor_writer.py "$t" 0.5 0 --create --sensor --rows "$rows" > "$work/$mode.created.json"
  "$bin" watch "$t" --json --policy "$work/$mode.toml" --history "$work/$mode.history" \
    --log-file "$work/$mode.log" > "$work/$mode.out" 2> "$work/$mode.err" &
  jpid=$!
  "$py" bench/janitor_writer.py "$t" 0.5 "$secs" --sensor --rows "$rows" > "$work/$mode.writer.jsonl"
  sleep 12  # two more cycles after the last append
  kill -TERM "$jpid"; wait "$jpid" || true
done

"$py" - "$work" "$rows" <<'PY'
import glob, json, sys
import pyarrow as pa
from deltalake import DeltaTable
work, rows_per = sys.argv[1], int(sys.argv[2])
SMALL = 512 * 1024

def lat(path):
    xs = sorted(json.loads(l)["latency_ms"] for l in open(path) if l.startswith("{"))
    q = lambda p: round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)
    return {"commits": len(xs), "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99)}

def depth(spans):
    """Mean over files of the deepest point in each file's range (as report --skipping)."""
    pts = sorted({p for s in spans for p in s})
    at = lambda v: sum(1 for lo, hi in spans if lo <= v <= hi)
    if not spans:
        return None
    return round(sum(max(at(p) for p in pts if lo <= p <= hi) for lo, hi in spans) / len(spans), 2)

out = {}
for mode in ["merge", "recluster"]:
    t = f"{work}/{mode}"
    writer_bytes, by = 0, {"janitor": 0, "janitor-recluster": 0}
    jobs = {"janitor": 0, "janitor-recluster": 0}
    for f in sorted(glob.glob(f"{t}/_delta_log/*.json")):
        acts = [json.loads(l) for l in open(f)]
        info = next((a["commitInfo"] for a in acts if "commitInfo" in a), {})
        added = sum(a["add"]["size"] for a in acts if "add" in a)
        trig = info.get("lakehealth.trigger")
        if info.get("operation") == "OPTIMIZE" and trig in by:
            by[trig] += added; jobs[trig] += 1
        elif info.get("operation") != "OPTIMIZE":
            writer_bytes += added
    dt = DeltaTable(t)
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    parts = {}
    for a in adds:
        parts.setdefault(a["partition.part"], []).append(a)
    per = {}
    for p, fs in sorted(parts.items()):
        big = [(a["min.sensor"], a["max.sensor"]) for a in fs if a["size_bytes"] >= SMALL]
        per[p] = {"files": len(fs), "large_files": len(big),
                  "depth_large": depth(big),
                  "depth_all": depth([(a["min.sensor"], a["max.sensor"]) for a in fs])}
    lookup = sum(1 for a in adds if a["min.sensor"] <= 250 <= a["max.sensor"])
    data = dt.to_pyarrow_table(columns=["id"])
    ids = data.column("id").to_pylist()
    created = json.load(open(f"{work}/{mode}.created.json"))["rows"]
    last = [json.loads(l) for l in open(f"{work}/{mode}.writer.jsonl") if l.startswith("{")][-1]
    out[mode] = {
        "writer": lat(f"{work}/{mode}.writer.jsonl"),
        "writer_mb": round(writer_bytes / 2**20, 1),
        "merge_jobs_commits": jobs["janitor"], "recluster_commits": jobs["janitor-recluster"],
        "merge_amplification": round(by["janitor"] / writer_bytes, 2),
        "recluster_amplification": round(by["janitor-recluster"] / writer_bytes, 2),
        "lookup_sensor_250_opens": f"{lookup} of {len(adds)}",
        "partitions": per,
        "rows": len(ids), "rows_written": created + last["rows_total"],
        "distinct_ids": len(set(ids)),
    }
m, r = out["merge"]["writer"], out["recluster"]["writer"]
out["recluster_vs_merge_p90"] = round(r["p90_ms"] / m["p90_ms"], 2)
out["recluster_vs_merge_p99"] = round(r["p99_ms"] / m["p99_ms"], 2)
print(json.dumps(out, indent=1), flush=True)
# deltalake's runtime threads can abort the interpreter's exit ("terminate called"): the
# numbers are out, leave at once.
import os
os._exit(0)
PY
