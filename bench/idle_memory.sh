#!/usr/bin/env bash
# Memory of watching large idle tables (#28 item 3): TABLES tables of FILES files each (Delta
# logs only: one commit of FILES adds of 200 MiB files, so none is due and no data file is
# needed), `lakehealth watch ROOT` for DURATION at INTERVAL. Scrapes /metrics every second and
# reports the heap (jemalloc's count) while every table is followed with its file list (the
# first cycles) against the heap once the idle tables are kept as summaries (after three quiet
# reads), per table, with the process's peak RSS. One JSON line.
# Usage: [TABLES=100] [FILES=5000] [DURATION=60s] [INTERVAL=2s] bench/idle_memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-idle-memory}
tables=${TABLES:-100}; files=${FILES:-5000}; duration=${DURATION:-60s}; interval=${INTERVAL:-2s}
export LAKEHEALTH_CONFIG=/dev/null
rm -rf "$work"; mkdir -p "$work/lake"
"$py" - "$work/lake" "$tables" "$files" <<'PY'
import json, os, sys
root, tables, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
schema = json.dumps({"type": "struct", "fields": [
    {"name": "sensor_id", "type": "string", "nullable": True, "metadata": {}},
    {"name": "reading", "type": "double", "nullable": True, "metadata": {}},
    {"name": "ingestion_date", "type": "string", "nullable": True, "metadata": {}}]})
head = [json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
        json.dumps({"metaData": {"id": "bench", "format": {"provider": "parquet", "options": {}},
                    "schemaString": schema, "partitionColumns": ["ingestion_date"],
                    "configuration": {}, "createdTime": 1700000000000}})]
for t in range(tables):
    log = os.path.join(root, f"t{t}", "_delta_log")
    os.makedirs(log)
    lines = list(head)
    for f in range(files):
        day = f"2026-11-{1 + f % 28:02d}"
        lines.append(json.dumps({"add": {
            "path": f"ingestion_date={day}/part-{f:06d}-{t:04d}.snappy.parquet",
            "partitionValues": {"ingestion_date": day}, "size": 200 * 1024 * 1024,
            "modificationTime": 1700000000000, "dataChange": True,
            "stats": json.dumps({"numRecords": 1000})}}))
    with open(os.path.join(log, "00000000000000000000.json"), "w") as out:
        out.write("\n".join(lines) + "\n")
PY
echo "$tables tables x $files files" >&2
port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
printf 'interval = "%s"\n' "$interval" > "$work/policy.toml"
"$bin" watch "$work/lake" --policy "$work/policy.toml" --history "$work/h.jsonl" \
  --log-file "$work/watch.log" --max-duration "$duration" \
  --metrics-addr "127.0.0.1:$port" > /dev/null 2> "$work/watch.err" &
pid=$!; peak=0
: > "$work/samples"
while kill -0 "$pid" 2>/dev/null; do
  if curl -sf "http://127.0.0.1:$port/metrics" > "$work/m.tmp"; then
    awk '/^lakehealth_janitor_heap_bytes / {h=$2} /tables_kept\{as="log"\}/ {l=$2} /tables_kept\{as="summary"\}/ {s=$2} /^lakehealth_janitor_cycles_total/ {c=$2} END {if (h) print c, l, s, h}' "$work/m.tmp" >> "$work/samples"
  fi
  rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  [ "${rss:-0}" -gt "$peak" ] && peak=$rss
  sleep 1
done
wait "$pid" || true
"$py" - "$work/samples" "$tables" "$files" "$peak" <<'PY'
import json, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
tables, files, peak = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# cycles, followed with files, summaries, heap
followed = [r for r in rows if r[0] >= 1 and r[1] == tables]
summarized = [r for r in rows if r[2] == tables]
full = max(r[3] for r in followed) if followed else None
summ = summarized[-1][3] if summarized else None
print(json.dumps(dict(tables=tables, files_per_table=files,
    heap_mib_all_followed=round(full / 2**20, 1) if full else None,
    heap_mib_all_summaries=round(summ / 2**20, 1) if summ else None,
    heap_kib_per_table_followed=round(full / tables / 1024, 1) if full else None,
    heap_kib_per_table_summary=round(summ / tables / 1024, 1) if summ else None,
    ratio=round(summ / full, 3) if full and summ else None,
    # What a summary saves per table: its file list (the rest of the heap is shared).
    kib_saved_per_table=round((full - summ) / tables / 1024, 1) if full and summ else None,
    peak_rss_mib=round(peak / 1024, 1), samples=len(rows))))
PY
