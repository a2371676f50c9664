#!/usr/bin/env bash
# Open + full statistics of a 1,000,000-file table: lakehealth vs Python deltalake, same run.
# Usage: bench/open_1m.sh [RUNS]   (Python deltalake + pyarrow: the test harness's venv when it
# exists, else python3 with them installed)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --example bench_open >&2
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
bin="$CARGO_TARGET_DIR/release/examples/bench_open"
dir=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-1m}
if [ ! -f "$dir/_delta_log/_last_checkpoint" ]; then
  rm -rf "$dir"
  "$bin" gen "$dir" 1000000 1000
fi
out=$(mktemp)
for i in $(seq "$runs"); do
  "$bin" measure "$dir" | tee -a "$out"
  "$py" bench/open_1m.py "$dir" | tee -a "$out"
done
"$py" - "$out" <<'PY'
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
print(f"files {files}, partitions {lh[0]['partitions']}, runs {len(lh)}")
print(f"{'tool':<18}{'median s':>10}{'peak RSS MB':>13}{'B/file':>8}")
print(f"{'lakehealth':<18}{t_lh:>10.3f}{m_lh/1e6:>13.0f}{m_lh/files:>8.0f}")
print(f"{'python deltalake':<18}{t_py:>10.3f}{m_py/1e6:>13.0f}{m_py/files:>8.0f}")
print(f"time ratio lakehealth/python = {t_lh/t_py:.3f}  memory ratio = {m_lh/m_py:.3f}")
PY
