#!/usr/bin/env bash
# Listing benchmark for plain Parquet folders: a Hive-style tree of N (default 1,000,000) empty
# *.parquet files (100 day= x 10 hour= folders), reported by `lakehealth report` (streamed
# listing folded into per-partition sizes), side by side with pyarrow's recursive listing (the
# peer) and `find` (the floor). Max RSS from /usr/bin/time -v; memory per file is the RSS above
# the same command's RSS on a 1,000-file tree, divided by the file count.
# Usage: bench/list_1m.sh [N]   (BENCH_DIR to place the tree; it is reused when it exists)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-list}
export LAKEHEALTH_CONFIG=/dev/null
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
make_tree() { # dir files
  [ -f "$1/.done" ] && return 0
  rm -rf "$1"; mkdir -p "$1"
  "$py" - "$1" "$2" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
folders = [f"day=2026-{1 + d // 28:02d}-{1 + d % 28:02d}/hour={h:02d}" for d in range(100) for h in range(10)]
per = max(1, n // len(folders))
made = 0
for f in folders:
    os.makedirs(os.path.join(root, f), exist_ok=True)
    for i in range(per):
        if made == n:
            break
        open(os.path.join(root, f, f"part-{i:05d}.parquet"), "w").close()
        made += 1
open(os.path.join(root, ".done"), "w").close()
PY
}
make_tree "$work/small" 1000
make_tree "$work/big" "$n"
measure() { # label command...
  local log; log=$(mktemp)
  /usr/bin/time -v "${@:2}" > /dev/null 2> "$log"
  local wall rss
  wall=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}')
  rss=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
  echo "$1 wall=$wall max_rss_kb=$rss"
  rm -f "$log"
}
sync
small=$(measure lakehealth-1k "$bin" report "$work/small" --json | sed 's/.*max_rss_kb=//')
measure "lakehealth ($n files)" "$bin" report "$work/big" --json | tee "$work/lh.txt"
big=$(sed 's/.*max_rss_kb=//' "$work/lh.txt")
measure "pyarrow listing (peer)" "$py" -c "
import sys; from pyarrow import fs
n = sum(1 for i in fs.LocalFileSystem().get_file_info(fs.FileSelector(sys.argv[1], recursive=True)) if i.type == fs.FileType.File)
print(n)" "$work/big"
measure "find (floor)" find "$work/big" -type f
echo "lakehealth memory per file: $(( (big - small) * 1024 / n )) bytes (RSS $big KiB vs $small KiB for 1,000 files)"
