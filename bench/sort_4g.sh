#!/usr/bin/env bash
# A partition larger than memory, sorted with the sort's memory bounded: an unpartitioned table
# of ~4 GB of barely compressible rows (bench/sort_table.py), compacted with
# `lakehealth compact --sort-by sensor,ts --sort-memory 512MiB --target 512MiB`, under
# /usr/bin/time -v for the process's peak RSS. The table is measured before and after by
# pyarrow (rows, ids, an exact sum of `value`) and Python deltalake (the files' sensor ranges).
# Usage: [ROWS=150000000] [SORT_MEMORY=512MiB] [TARGET=512MiB] bench/sort_4g.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-sort}
rows=${ROWS:-150000000}
export LAKEHEALTH_CONFIG=/dev/null
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
base="$work/base-$rows"
if [ ! -f "$base/_made.ok" ]; then
  rm -rf "$base"; mkdir -p "$work"
  "$py" bench/sort_table.py make "$base" "$rows"
  touch "$base/_made.ok"
fi
du -sh "$base" >&2
"$py" bench/sort_table.py measure "$base" | sed 's/^{/{"table": "before", /'
rm -rf "$work/run"; cp -r "$base" "$work/run"; sync
/usr/bin/time -v "$bin" compact "$work/run" --sort-by sensor,ts --sort-memory "${SORT_MEMORY:-512MiB}" \
  --target "${TARGET:-512MiB}" --min-file-size 1GiB --parallelism 1 --json > "$work/lh.json" 2> "$work/time.txt" || { tail -30 "$work/time.txt"; exit 1; }
grep -E "Elapsed|Maximum resident" "$work/time.txt"
"$py" -c "import json; s=json.load(open('$work/lh.json')); print(json.dumps({k: s[k] for k in ['files_removed','files_added','rows','bytes_read','bytes_written','spilled_bytes','seconds','verify_seconds']}))"
"$py" bench/sort_table.py measure "$work/run" | sed 's/^{/{"table": "after", /'
