#!/usr/bin/env bash
# The janitor at stream pace: a Python deltalake writer appends one ~20-row file per partition
# (2 partitions) every 0.5 s (2 commits/s) for SECONDS (default 240) while `lakehealth watch`
# runs with min_small_files = 20, interval = 5s, target 64 MiB (the default tiers and commit
# spacing). Reports, from the janitor's JSON lines and the log: files per partition at every
# cycle's end (max), bytes written by compaction per byte the writer wrote (write
# amplification), OPTIMIZE commits, the writer's commit latency p50/p90/p99 (and over the same
# span with no janitor, run first), and every row exactly once (read back by Python deltalake).
# JANITOR_PERIOD sets the writer's period (default 0.5 s), JANITOR_POLICY=default runs the
# janitor with its default policy instead (the "10 commits/s for 25 s" run:
# JANITOR_PERIOD=0.1 JANITOR_SECONDS=25 JANITOR_POLICY=default). JANITOR_WRITER=mixed writes
# the mixed stream instead (50-500 rows a commit into today's `day` partition, late rows for an
# older day every 10th commit; the issue's ten-minute run: JANITOR_WRITER=mixed
# JANITOR_PERIOD=0.2 JANITOR_SECONDS=600 JANITOR_POLICY=default), and the summary adds the hot
# partition's own peak.
# Usage: [JANITOR_SECONDS=240] [JANITOR_PERIOD=0.5] [JANITOR_POLICY=stream|default]
#        [JANITOR_WRITER=two|mixed] bench/janitor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
secs=${JANITOR_SECONDS:-240}
period=${JANITOR_PERIOD:-0.5}
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-janitor}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work"
if [ "${JANITOR_POLICY:-stream}" = default ]; then
  : > "$work/policy.toml"
else
  printf 'min_small_files = 20\ninterval = "5s"\ntarget_file_size = "64MiB"\n' > "$work/policy.toml"
fi

shape=()
[ "${JANITOR_WRITER:-two}" = mixed ] && shape=(--mixed)

for mode in alone janitor; do
  t="$work/$mode"
  "$py" bench/janitor_writer.py "$t" "$period" 0 --create "${shape[@]}" > "$work/$mode.created.json"
  jpid=""
  if [ "$mode" = janitor ]; then
    "$bin" watch "$t" --json --policy "$work/policy.toml" --history "$work/$mode.history" \
      --log-file "$work/$mode.log" > "$work/$mode.out" 2> "$work/$mode.err" &
    jpid=$!
  fi
  "$py" bench/janitor_writer.py "$t" "$period" "$secs" "${shape[@]}" > "$work/$mode.writer.jsonl"
  if [ -n "$jpid" ]; then
    sleep 12  # two more cycles after the last append
    kill -TERM "$jpid"; wait "$jpid" || true
  fi
done

"$py" - "$work" <<'PY'
import json, sys, os, glob
from deltalake import DeltaTable
work = sys.argv[1]
def lat(path):
    xs = sorted(json.loads(l)["latency_ms"] for l in open(path) if l.startswith("{"))
    q = lambda p: round(xs[min(len(xs) - 1, int(p * len(xs)))], 1)
    return {"commits": len(xs), "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99)}
out = {}
for mode in ["alone", "janitor"]:
    out[mode] = {"writer": lat(f"{work}/{mode}.writer.jsonl")}
lines = [json.loads(l) for l in open(f"{work}/janitor.out") if l.startswith("{")]
cycles = []
cur = {}
peak = {}  # each partition's most files at a cycle's end
for l in lines:
    if l["type"] == "decision":
        cur["/".join(f"{k}={v}" for k, v in l["partition"].items())] = l["files"]
    if l["type"] == "cycle":
        if cur:
            cycles.append(max(cur.values()))
            for p, n in cur.items():
                peak[p] = max(peak.get(p, 0), n)
        cur = {}
# The log: bytes the writer added, bytes compaction added, OPTIMIZE commits.
writer_bytes = comp_bytes = optimizes = 0
for f in sorted(glob.glob(f"{work}/janitor/_delta_log/*.json")):
    acts = [json.loads(l) for l in open(f)]
    info = next((a["commitInfo"] for a in acts if "commitInfo" in a), {})
    added = sum(a["add"]["size"] for a in acts if "add" in a)
    if info.get("operation") == "OPTIMIZE":
        optimizes += 1; comp_bytes += added
    else:
        writer_bytes += added
dt = DeltaTable(f"{work}/janitor")
rows = dt.to_pyarrow_table()
final = {}
for f in dt.file_uris():
    p = next(x for x in f.split("/") if "=" in x)
    final[p] = final.get(p, 0) + 1
last = [json.loads(l) for l in open(f"{work}/janitor.writer.jsonl") if l.startswith("{")][-1]
created = json.load(open(f"{work}/janitor.created.json"))["rows"]
ids = rows.column("id").to_pylist()
out["janitor"].update({
    "optimize_commits": optimizes,
    "max_files_per_partition_at_cycle_end": max(cycles) if cycles else None,
    "cycles": len(cycles),
    "write_amplification": round(comp_bytes / writer_bytes, 2) if writer_bytes else None,
    "rows": len(ids), "rows_written": created + last["rows_total"], "distinct_ids": len(set(ids)),
    "files_per_partition_end": {p: n for p, n in cur.items()} or None,
    "peak_files_per_partition_at_cycle_end": peak,
    "files_per_partition_final": final,
    # One file per partition per commit (and the first commit's).
    "writer_alone_adds_per_partition": out["janitor"]["writer"]["commits"] + 1,
})
a, j = out["alone"]["writer"], out["janitor"]["writer"]
out["p90_ratio"] = round(j["p90_ms"] / a["p90_ms"], 2)
out["p99_ratio"] = round(j["p99_ms"] / a["p99_ms"], 2)
print(json.dumps(out, indent=1))
PY
