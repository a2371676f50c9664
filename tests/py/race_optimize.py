"""Runs Python deltalake's own compaction on a table, once or as N racing threads.

    python3 tests/py/race_optimize.py URI [--storage-options JSON]
        [--partition-filter col=value ...] [--target-size BYTES] [--race N]

Several --partition-filter are ANDed (deltalake partition_filters conjunction).

Single mode runs ``DeltaTable(uri, storage_options=...).optimize.compact(...)`` and prints
{"mode": "single", "version_before", "version", "metrics": {...}} where metrics is what
compact() returned (numFilesAdded, numFilesRemoved, partitionsOptimized, ...).

``--race N`` starts N threads, each with its own DeltaTable object loaded at the same version;
they meet at a barrier and call optimize.compact() at once. Prints {"mode": "race", "threads",
"committed" (how many compact() calls returned), "failed", "errors", "results" (per thread:
ok, seconds, the version its DeltaTable object shows afterwards), "metrics" (each compact()'s),
"version_before", "version", "add_rows_before", "add_rows_after"} where the
add_rows_* are the sums of the active files' numRecords: add_rows_after > add_rows_before
means the race duplicated rows (check with dump_rows.py: "distinct_rows" < "rows").

Why it duplicates: an OPTIMIZE commit only removes files and adds files with dataChange=false,
and since delta-rs PR #3982 its conflict checker lets such a commit through when a concurrent
winner also only compacted -- even when both removed the *same* files. So both rewrites of the
same rows end up active, and the table's row count is multiplied by the number of threads.

How often (deltalake 1.6.6, pyarrow 26, 2-core machine): every time. On a fresh copy of a
local table of 40 small files in 4 partitions (800 rows), ``--race 2`` committed both
compactions and left 1600 rows (800 distinct) in 40 of 40 runs; ``--race 3`` committed all
three and left 2400 rows in 40 of 40 runs. It does not depend on timing at all: two
DeltaTable objects loaded at the same version and compacted one after the other give the same
duplication, since the second one's commit is rebased over the first without a conflict. The
same holds on S3 (moto) and with ``--partition-filter p=plain`` on make_tables.py's
``partitions`` table (only that partition's rows doubled: 4087 rows, 3665 distinct).
"""
import argparse
import json
import sys
import os
import threading
import time
import traceback

import pyarrow as pa
from deltalake import DeltaTable

def add_rows(dt):
    adds = pa.table(dt.get_add_actions(flatten=True))
    if "num_records" not in adds.column_names:
        return None
    return sum(v or 0 for v in adds.column("num_records").to_pylist())


def parse_filters(items):
    out = []
    for it in items or []:
        if "=" not in it:
            raise SystemExit(f"race_optimize.py: --partition-filter wants col=value, got {it!r}")
        col, val = it.split("=", 1)
        out.append((col, "=", val))
    return out or None


def compact(dt, filters, target_size):
    kw = {}
    if filters:
        kw["partition_filters"] = filters
    if target_size:
        kw["target_size"] = target_size
    return dt.optimize.compact(**kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("uri")
    ap.add_argument("--storage-options", default=None)
    ap.add_argument("--partition-filter", action="append", default=[], metavar="COL=VALUE")
    ap.add_argument("--target-size", type=int, default=None)
    ap.add_argument("--race", type=int, default=0, metavar="N",
                    help="run N compactions concurrently, each with its own DeltaTable")
    a = ap.parse_args()
    opts = json.loads(a.storage_options) if a.storage_options else None
    filters = parse_filters(a.partition_filter)

    if a.race <= 0:
        dt = DeltaTable(a.uri, storage_options=opts)
        before = dt.version()
        metrics = compact(dt, filters, a.target_size)
        dt = DeltaTable(a.uri, storage_options=opts)
        print(json.dumps({"mode": "single", "version_before": before, "version": dt.version(),
                          "metrics": metrics}, default=str))
        return

    base = DeltaTable(a.uri, storage_options=opts)
    before = base.version()
    rows_before = add_rows(base)
    tables = [DeltaTable(a.uri, storage_options=opts, version=before) for _ in range(a.race)]
    barrier = threading.Barrier(a.race)
    results = [None] * a.race

    def run(i):
        barrier.wait()
        t0 = time.monotonic()
        try:
            m = compact(tables[i], filters, a.target_size)
            results[i] = {"ok": True, "table_version_after": tables[i].version(), "metrics": m,
                          "seconds": round(time.monotonic() - t0, 3)}
        except Exception as e:  # noqa: BLE001 - a lost race is an expected outcome
            results[i] = {"ok": False, "error": f"{type(e).__name__}: {e}"[:400],
                          "seconds": round(time.monotonic() - t0, 3)}
            if not isinstance(e, (OSError, RuntimeError)) and "Commit" not in type(e).__name__:
                results[i]["trace"] = traceback.format_exc()[-800:]

    threads = [threading.Thread(target=run, args=(i,)) for i in range(a.race)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = DeltaTable(a.uri, storage_options=opts)
    print(json.dumps({
        "mode": "race",
        "threads": a.race,
        "committed": sum(1 for r in results if r and r["ok"]),
        "failed": sum(1 for r in results if not (r and r["ok"])),
        "errors": [r["error"] for r in results if r and not r["ok"]],
        "results": [{k: v for k, v in r.items() if k != "metrics"} for r in results],
        "metrics": [r.get("metrics") for r in results],
        "version_before": before,
        "version": after.version(),
        "add_rows_before": rows_before,
        "add_rows_after": add_rows(after),
    }, default=str))


if __name__ == "__main__":
    main()
    # Python deltalake can abort at interpreter shutdown ("terminate called without an active
    # exception") after all the work is done; the result is printed, so leave without teardown.
    sys.stdout.flush()
    os._exit(0)
