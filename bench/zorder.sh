#!/usr/bin/env bash
# Z-order benchmark, side by side in one run on identical copies of a table of 400 files whose
# `sensor` (500 values) and `ts` are spread at random over every file:
#   lakehealth compact --zorder sensor,ts   vs   delta-rs optimize.z_order(["sensor", "ts"])
#   (Python deltalake, the peer)            vs   a floor (pyarrow sorts in memory, no table
#                                                format, no proof)
# at the same target size. Each table is then measured by Python deltalake from the log's
# min/max (zorder_table.py measure): the share of files admitting sensor = 's-017', the mean
# overlap depth of both columns, and rows, distinct ids and the sum of `value` (exact).
# Usage: [ROUNDS=3] [FILES=400] [ROWS=10000] [TARGET=1048576] bench/zorder.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-zorder}
files=${FILES:-400}; rows=${ROWS:-10000}; target=${TARGET:-1048576}
export LAKEHEALTH_CONFIG=/dev/null
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
base="$work/base-$files-$rows"
if [ ! -f "$base/_last_append.ok" ]; then
  rm -rf "$base"; mkdir -p "$work"
  "$py" bench/zorder_table.py make "$base" "$files" "$rows"
  touch "$base/_last_append.ok"
fi
du -sh "$base" >&2
"$py" bench/zorder_table.py measure "$base" | sed 's/^{/{"tool": "before", /'
for round in $(seq "${ROUNDS:-1}"); do
  for t in lakehealth peer floor; do rm -rf "$work/$t" "$work/floor-out"; cp -r "$base" "$work/$t"; done
  sync
  t0=$(date +%s.%N)
  "$bin" compact "$work/lakehealth" --zorder sensor,ts --target "${target}B" --parallelism 1 --json > "$work/lh.json"
  t1=$(date +%s.%N)
  echo "{\"round\": $round, \"tool\": \"lakehealth --zorder\", \"seconds\": $(echo "$t1 - $t0" | bc)}"
  "$py" bench/zorder_table.py peer "$work/peer" "$target" | sed "s/^{/{\"round\": $round, /"
  "$py" bench/zorder_table.py floor "$work/floor" "$work/floor-out" "$target" | sed "s/^{/{\"round\": $round, /"
done
"$py" bench/zorder_table.py measure "$work/lakehealth" | sed 's/^{/{"tool": "lakehealth --zorder", /'
"$py" bench/zorder_table.py measure "$work/peer" | sed 's/^{/{"tool": "delta-rs z_order", /'
