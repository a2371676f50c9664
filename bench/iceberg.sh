#!/usr/bin/env bash
# Iceberg compaction, side by side in one run: identical tables written by pyiceberg 0.12 on a
# SQL catalog (sqlite), APPENDS appends x 4 partitions of ROWS rows (one small file each);
# lakehealth compact --catalog (bin-pack, a replace snapshot committed through the catalog) vs
# pyiceberg's nearest equivalent, read the whole table and overwrite it (pyiceberg has no
# compaction). Each result is read back by pyiceberg: rows, sum of ids and readings must match.
# Usage: [ROUNDS=3] [APPENDS=150] [ROWS=5000] bench/iceberg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || { echo "needs the test harness's venv (run the tests once) or PYTHON=" >&2; exit 1; }
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-iceberg}
export LAKEHEALTH_CONFIG=/dev/null
out="$work/results.jsonl"
rm -rf "$work"; mkdir -p "$work"; : > "$out"
for round in $(seq "${ROUNDS:-3}"); do
  for tool in lakehealth pyiceberg; do
    dir="$work/$round-$tool"
    "$py" bench/iceberg_tables.py make "$dir" --appends "${APPENDS:-150}" --rows "${ROWS:-5000}" > /dev/null
    before=$("$py" bench/iceberg_tables.py read "$dir")
    if [ "$tool" = lakehealth ]; then
      t0=$(date +%s.%N)
      "$bin" compact "$dir/events" --catalog "sqlite:///$dir/catalog.db" --json > "$work/lh.json"
      secs=$(echo "$(date +%s.%N) - $t0" | bc)
    else
      secs=$("$py" bench/iceberg_tables.py overwrite "$dir" | "$py" -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    fi
    after=$("$py" bench/iceberg_tables.py read "$dir")
    "$py" - "$round" "$tool" "$secs" "$before" "$after" <<'PY' | tee -a "$out"
import json, sys
round_, tool, secs, b, a = sys.argv[1], sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4]), json.loads(sys.argv[5])
for k in ("rows", "id_sum", "reading_sum"):
    assert a[k] == b[k], f"{tool} round {round_}: {k} {a[k]} != {b[k]}"
print(json.dumps({"round": int(round_), "tool": tool, "seconds": secs, "rows": a["rows"],
                  "files_before": b["data_files"], "files_after": a["data_files"], "operation": a["last_operation"]}))
PY
  done
done
"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["tool"], []).append(r)
m = {t: statistics.median(r["seconds"] for r in v) for t, v in by.items()}
per = ", ".join(f"{a['seconds']/b['seconds']:.2f}" for a, b in zip(by["lakehealth"], by["pyiceberg"]))
l, p = by["lakehealth"][0], by["pyiceberg"][0]
print(f"Iceberg, {l['rows']} rows in {l['files_before']} files, medians of {len(by['pyiceberg'])} round(s): "
      f"lakehealth compact --catalog {m['lakehealth']:.2f}s ({l['files_after']} files, {l['operation']}); "
      f"pyiceberg read all + overwrite {m['pyiceberg']:.2f}s ({p['files_after']} files, {p['operation']}); "
      f"ratio {m['lakehealth']/m['pyiceberg']:.2f} (per round: {per})")
PY
