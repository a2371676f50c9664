#!/usr/bin/env bash
# Ray executor benchmark on this machine: the same generated table (4 partitions of small files,
# so 4 bins) compacted by the local executor and through a local Ray head (2 CPUs), side by
# side on identical copies; then a table of tiny bins, where the rewrite is nothing and what is
# left is Ray's cost: job submission, and per bin the task's startup (Python worker, the
# worker process, opening the table) = task_seconds - worker_seconds from the driver's lines.
# Usage: bench/ray.sh   (needs the Ray venv the tests create: tests/py/requirements-ray.txt,
# else RAY_BIN=/path/to/venv/bin); one Ray head at a time, stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
raybin=${RAY_BIN:-$CARGO_TARGET_DIR/tmp/rayenv/bin}
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-ray}
export LAKEHEALTH_CONFIG=/dev/null
py="$raybin/python"
rm -rf "$work"; mkdir -p "$work"
"$ex" gen "$work/base" 100 8000 >&2      # 400 files, ~100 MB, 4 partitions
"$ex" gen "$work/tiny" 2 100 >&2         # 8 files of 100 rows: 4 bins of nothing
du -sh "$work/base" >&2

# The head: its own process group, stopped on exit whatever happens.
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
gcs=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
tmp=$(mktemp -d /tmp/lh-ray-bench.XXXX)
PATH="$raybin:$PATH" setsid "$raybin/ray" start --head --block --disable-usage-stats --num-cpus 2 \
  --node-ip-address 127.0.0.1 --dashboard-host 127.0.0.1 --dashboard-port "$port" --port "$gcs" \
  --temp-dir "$tmp" > "$work/ray-head.log" 2>&1 &
head_pid=$!
trap 'kill -TERM -$head_pid 2>/dev/null; sleep 5; kill -KILL -$head_pid 2>/dev/null; rm -rf "$tmp"' EXIT
addr="http://127.0.0.1:$port"
t0=$(date +%s.%N)
until curl -sf "$addr/api/jobs/" > /dev/null; do sleep 0.2; done
echo "{\"ray_head_start_seconds\": $(echo "$(date +%s.%N) - $t0" | bc)}"

out="$work/results.jsonl"; : > "$out"
run() { # name dir args...
  local name=$1 dir=$2; shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$bin" compact "$dir" --target 128MiB --json "$@" > "$work/$name.json" 2> "$work/$name.err"
  t1=$(date +%s.%N)
  "$py" -c "import json; s=json.load(open('$work/$name.json')); print(json.dumps({'run':'$name','wall_seconds':round($t1-$t0,2),'bins':len(s['commits']),'files_removed':s['files_removed'],'files_added':s['files_added'],'rows':s['rows']}))" | tee -a "$out"
}
for c in local-p2 ray-cold ray-warm tiny-local tiny-ray; do
  src=base; [[ $c == tiny-* ]] && src=tiny
  cp -r "$work/$src" "$work/$c"
done
run local-p2 "$work/local-p2" --parallelism 2
run ray-cold "$work/ray-cold" --executor ray --ray-address "$addr"   # uploads the worker binary
run ray-warm "$work/ray-warm" --executor ray --ray-address "$addr"
run tiny-local "$work/tiny-local" --parallelism 2
run tiny-ray "$work/tiny-ray" --executor ray --ray-address "$addr"

# Per-bin startup from the drivers' progress lines (the Jobs API keeps the logs).
curl -s "$addr/api/jobs/" > "$work/jobs.json"
"$py" - "$work/jobs.json" "$addr" "$out" <<'PY'
import json, sys, urllib.request
jobs, addr, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
rows = {}
for line in open(out):
    r = json.loads(line); rows[r["run"]] = r
per_bin = []
for j in sorted(jobs, key=lambda j: j.get("start_time") or 0):
    logs = json.load(urllib.request.urlopen(f"{addr}/api/jobs/{j['submission_id']}/logs"))["logs"]
    for l in logs.splitlines():
        if l.startswith("LAKEHEALTH_BIN "):
            d = json.loads(l[len("LAKEHEALTH_BIN "):])
            if d.get("status") == "done" and d.get("worker_seconds") is not None:
                per_bin.append((j["metadata"].get("lakehealth.table", "").rstrip("/"), d["task_seconds"], d["worker_seconds"]))
tiny = [t - w for (tbl, t, w) in per_bin if tbl.endswith("/tiny-ray")]
big = [(t, w) for (tbl, t, w) in per_bin if tbl.endswith("/ray-warm")]
summary = {
    "local_p2_s": rows["local-p2"]["wall_seconds"],
    "ray_cold_s": rows["ray-cold"]["wall_seconds"],
    "ray_warm_s": rows["ray-warm"]["wall_seconds"],
    "ray_warm_over_local": round(rows["ray-warm"]["wall_seconds"] / rows["local-p2"]["wall_seconds"], 2),
    "tiny_local_s": rows["tiny-local"]["wall_seconds"],
    "tiny_ray_s": rows["tiny-ray"]["wall_seconds"],
    "per_bin_task_startup_s": round(sum(tiny) / len(tiny), 2) if tiny else None,
    "ray_warm_bins_task_vs_worker_s": big,
}
print(json.dumps(summary))
PY
