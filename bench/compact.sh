#!/usr/bin/env bash
# Compaction benchmark, side by side in one run on identical copies of a generated table of
# 2,000 small files (~500 MB, 4 partitions): lakehealth compact (its default: nobody writes
# the table, so every core; and --parallelism 1) vs Python deltalake's optimize.compact() vs
# the parquet-crate floor (same rows rewritten, no table format).
# Then a streaming writer's commit latency (p50/p99) without compaction, with the janitor
# (`watch --once`) throttled (its default) and with it unthrottled (`--no-throttle`).
# Usage: [ROUNDS=3] bench/compact.sh   (Python deltalake + pyarrow: the test harness's venv when it exists,
# else python3 with them installed); LATENCY_ONLY=1 for the last part, COMPACT_ONLY=1 for the first
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/lakehealth/target}
cargo build --release --bin lakehealth --example bench_compact >&2
bin="$CARGO_TARGET_DIR/release/lakehealth"
ex="$CARGO_TARGET_DIR/release/examples/bench_compact"
work=${BENCH_DIR:-$CARGO_TARGET_DIR/bench-compact}
target=$((128 * 1024 * 1024))
export LAKEHEALTH_CONFIG=/dev/null
py=${PYTHON:-$CARGO_TARGET_DIR/tmp/pyenv/bin/python}
[ -x "$py" ] || py=python3
if [ ! -f "$work/base/_delta_log/00000000000000000000.json" ]; then
  rm -rf "$work"; mkdir -p "$work"
  "$ex" gen "$work/base" 500 8000
  # Its commits are writes: a table is idle (compact's default uses every core) once nobody
  # has written to it for a minute.
  sleep 61
fi
du -sh "$work/base" >&2
out="$work/results.jsonl"; : > "$out"
if [ "${LATENCY_ONLY:-0}" != 1 ]; then
# ROUNDS rounds (default 3), the tools in turn within each, each on a fresh copy; the summary
# reports each tool's median.
for round in $(seq "${ROUNDS:-3}"); do
  for tool in lakehealth lakehealth-p1 python floor; do
    rm -rf "$work/$tool" "$work/floor-out"; cp -r "$work/base" "$work/$tool"
  done
  sync
  for p in default 1; do
    dir="$work/lakehealth"; flag=""
    [ "$p" = 1 ] && { dir="$work/lakehealth-p1"; flag="--parallelism 1"; }
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$bin" compact "$dir" --target 128MiB $flag --json > "$work/lh-$p.json"
    t1=$(date +%s.%N)
    # seconds: the whole process (open, plan, rewrite, commits); execute_seconds: rewrite + commits.
    "$py" -c "import json; s=json.load(open('$work/lh-$p.json')); print(json.dumps({'round':$round,'tool':'lakehealth-$p','seconds':$t1-$t0,'execute_seconds':s['seconds'],'verify_seconds':s['verify_seconds'],'files_removed':s['files_removed'],'files_added':s['files_added'],'bytes_out':s['bytes_added'],'commits':len(s['commits'])}))" | tee -a "$out"
  done
  "$py" bench/py_optimize.py "$work/python" "$target" | sed "s/^{/{\"round\": $round, /" | tee -a "$out"
  "$ex" floor "$work/floor" "$work/floor-out" "$target" | sed "s/^{/{\"round\":$round,/" | tee -a "$out"
done
fi

if [ "${COMPACT_ONLY:-0}" != 1 ]; then
# Writer latency: one micro-batch every 100 ms from a separate `lakehealth stream` process on a
# fresh copy, three times: alone (no compaction: the baseline), then with a janitor (`watch
# --once`, every partition due, max_jobs = the cores) starting 10 s in, throttled (the default:
# the writer is active, so one job at a time, one bin at the lowest CPU priority, reads
# bounded, compaction commits spaced by the writer's commit rate), then with --no-throttle.
# "during" counts the commits that landed while the janitor ran; the baseline, the alone run's
# commits in the same window after its start (a writer slows as its log grows, so the same
# offsets compare like with like).
cores=$(nproc)
printf 'max_jobs = %s\n' "$cores" > "$work/policy.toml"
for mode in alone throttled unthrottled; do
  rm -rf "$work/lat-$mode" "$work/lat-$mode.history"; cp -r "$work/base" "$work/lat-$mode"
  flag=""; [ "$mode" = unthrottled ] && flag="--no-throttle"
  s0=$(date +%s%3N)
  "$bin" stream "$work/lat-$mode" --interval 100ms --rows 500 --query-id lat --batches "${LAT_BATCHES:-1200}" \
    > "$work/lat-$mode.jsonl" 2>/dev/null &
  spid=$!
  if [ "$mode" = alone ]; then
    alone0=$s0
    wait $spid
    continue
  fi
  sleep 10
  c0=$(date +%s%3N)
  # shellcheck disable=SC2086
  "$bin" watch "$work/lat-$mode" --once --policy "$work/policy.toml" --history "$work/lat-$mode.history" $flag \
    > /dev/null 2> "$work/lat-$mode.err" || true
  c1=$(date +%s%3N)
  wait $spid
  grep -h '"type":"result"' "$work/lat-$mode.history" | "$py" -c "import json,sys; r=[json.loads(l) for l in sys.stdin]; print(json.dumps({'janitor': '$mode', 'jobs': len(r), 'compacted': sum(x['outcome']=='compacted' for x in r), 'seconds': ($c1-$c0)/1000, 'throttle': r[0]['throttle'] if r else None}))" | tee -a "$out"
  "$py" bench/latency.py "$work/lat-$mode.jsonl" "$c0" "$c1" | sed "s/^{/{\"latency\": \"$mode\", /" | tee -a "$out"
  "$py" bench/latency.py "$work/lat-alone.jsonl" $((alone0 + c0 - s0)) $((alone0 + c1 - s0)) | sed "s/^{/{\"latency\": \"alone-$mode\", /" | tee -a "$out"
done
fi

"$py" - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs = {}
for r in rows:
    if "tool" in r:
        runs.setdefault(r["tool"], []).append(r)
med = lambda tool, key="seconds": statistics.median(r[key] for r in runs[tool])
lat = {r["latency"]: r for r in rows if "latency" in r}
jan = {r["janitor"]: r for r in rows if "janitor" in r}
if "python-deltalake" in runs:
    py, fl = med("python-deltalake"), med("parquet-floor")
    n = len(runs["python-deltalake"])
    print(f"medians of {n} round(s): python-deltalake optimize.compact() {py:.2f}s   parquet floor {fl:.2f}s (1 thread)")
    for name, key in (("lakehealth compact (default)", "lakehealth-default"), ("lakehealth compact --parallelism 1", "lakehealth-1")):
        ratios = ", ".join(f"{r['seconds']/p['seconds']:.2f}" for r, p in zip(runs[key], runs["python-deltalake"]))
        print(f"{name}: process {med(key):.2f}s (rewrite+commits {med(key, 'execute_seconds'):.2f}s, content proof {med(key, 'verify_seconds'):.2f}s of bin time); "
              f"/python {med(key)/py:.2f} (per round: {ratios}), /floor {med(key)/fl:.2f}")
for mode in [m for m in ("throttled", "unthrottled") if m in jan]:
    a, w, j = lat[f"alone-{mode}"], lat[mode], jan[mode]
    print(f"janitor {mode} ({j['seconds']:.1f}s, {j['compacted']}/{j['jobs']} jobs compacted; {j['throttle']}): writer alone, same window (n={a['n']}) "
          f"p50 {a['p50_ms']:.0f} ms p99 {a['p99_ms']:.0f} ms; during (n={w['n']}) p50 {w['p50_ms']:.0f} ms p99 {w['p99_ms']:.0f} ms; "
          f"ratios p50 {w['p50_ms']/a['p50_ms']:.2f} p99 {w['p99_ms']/a['p99_ms']:.2f}")
PY
