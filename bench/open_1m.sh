#!/usr/bin/env bash
# Opening a table of 1,000,000 active files: `lakehealth report TABLE --json` (the command a
# user runs, as a process) vs Python deltalake doing the same job (bench/open_1m.py), same run.
# Usage: [MAX_RATIO=0.5] bench/open_1m.sh [RUNS] [FILES] [PARTITIONS]
#   MAX_RATIO: fail (exit 1) when lakehealth's median time over Python's is above it (.ci/run's
#   guard against a regression of the open path).
# Python deltalake + pyarrow: the test harness's venv when it exists, else python3 with them.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
files=${2:-1000000}
parts=${3:-1000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
export LAKEHEALTH_CONFIG=/dev/null
cargo build --release --bin lakehealth --example bench_open >&2
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
bin="$CARGO_TARGET_DIR/release/lakehealth"
gen="$CARGO_TARGET_DIR/release/examples/bench_open"
dir=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-open-v2-$files-$parts}
if [ ! -f "$dir/_delta_log/_last_checkpoint" ]; then
  rm -rf "$dir"
  "$gen" gen "$dir" "$files" "$parts" >&2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$runs"); do
  "$py" bench/measure_report.py "$bin" report "$dir" --json | tee -a "$out"
  "$py" bench/open_1m.py "$dir" | tee -a "$out"
done
"$py" - "$out" "${MAX_RATIO:-}" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["tool"], []).append(r)
lh, py = by["lakehealth"], by["python-deltalake"]
t_lh = statistics.median(r["seconds"] for r in lh)
t_py = statistics.median(r["seconds"] for r in py)
m_lh = max(r["peak_rss_bytes"] for r in lh)
m_py = max(r["peak_rss_bytes"] for r in py)
files = lh[0]["files"]
assert files == py[0]["files"], (files, py[0]["files"])
assert lh[0]["bytes"] == py[0]["bytes"], (lh[0]["bytes"], py[0]["bytes"])
assert lh[0]["partitions"] == py[0]["partitions"], (lh[0]["partitions"], py[0]["partitions"])
print(f"files {files}, partitions {lh[0]['partitions']}, runs {len(lh)}")
print(f"{'tool':<26}{'median s':>10}{'peak RSS MB':>13}{'B/file':>8}")
print(f"{'lakehealth report --json':<26}{t_lh:>10.3f}{m_lh/1e6:>13.0f}{m_lh/files:>8.0f}")
print(f"{'python deltalake':<26}{t_py:>10.3f}{m_py/1e6:>13.0f}{m_py/files:>8.0f}")
ratio = t_lh / t_py
print(f"time ratio lakehealth/python = {ratio:.3f}  memory ratio = {m_lh/m_py:.3f}")
if sys.argv[2]:
    bound = float(sys.argv[2])
    if ratio > bound:
        print(f"FAIL: opening {files} files took {ratio:.3f}x Python's time, above the bound {bound}x", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {ratio:.3f}x is within the bound {bound}x")
PY
