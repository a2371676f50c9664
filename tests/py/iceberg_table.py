"""The independent reader and writers of the Iceberg compaction tests: pyiceberg on the same SQL
catalog (sqlite) lakehealth commits through. One command per use:

    python tests/py/iceberg_table.py read    --catalog-dir DIR
    python tests/py/iceberg_table.py append  --catalog-dir DIR --first-id N --rows N [--loop-until FILE]
    python tests/py/iceberg_table.py delete  --catalog-dir DIR --category C --day YYYY-MM-DD

The table is db.events of tests/py/make_iceberg.py (id long, category string, ts timestamp;
partitioned by category and day(ts)).

read prints {rows: [[id, category, ts], ...] sorted, rows_id_lt_40: the rows a filtered scan
(id < 40, pruned by the files' bounds) returns, sorted, data_files, operations (oldest first),
current: the current snapshot's summary, entries: {status: count} of inspect.entries() for
the current snapshot, entry_list: [[file_path, status, snapshot_id, sequence_number,
file_sequence_number], ...] of the same entries, sequence_number and snapshot_id of the current
snapshot, metadata_location}.

append writes rows with ids first-id .. first-id+rows-1 into category 'a' on 2026-11-30; with
--loop-until it appends one such batch of --rows per commit (ids continuing) until FILE
exists, retrying a commit that lost a race (CommitFailedException: reload and append again),
and prints {committed: [ids...]} of the commits that succeeded and {latencies_ms: [...]}, each
commit's time from its first try to its success, and {commit_times: [...]}, the Unix time
each succeeded. --pause S waits S seconds between commits (a writer's cadence); --ready FILE is
created after the first commit. Without --loop-until: one commit.

delete removes the rows of category C on day D with an id that is odd (a copy-on-write
rewrite of their files: pyiceberg 0.12 writes no delete files) and prints {deleted: [ids]}.
"""
import argparse
import datetime
import json
import os
import sys
import time

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan

ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["read", "append", "delete"])
ap.add_argument("--catalog-dir", required=True)
# A SQLAlchemy URI of another SQL catalog (PostgreSQL); default: sqlite in --catalog-dir.
ap.add_argument("--catalog-uri")
ap.add_argument("--first-id", type=int, default=0)
ap.add_argument("--rows", type=int, default=5)
ap.add_argument("--loop-until")
ap.add_argument("--pause", type=float, default=0.0)
ap.add_argument("--ready")
ap.add_argument("--category")
ap.add_argument("--day")
a = ap.parse_args()

cat = SqlCatalog("lh", uri=a.catalog_uri or f"sqlite:///{os.path.abspath(a.catalog_dir)}/catalog.db")


def load():
    return cat.load_table("db.events")


def rows_of(arrow):
    out = []
    for r in arrow.to_pylist():
        ts = r["ts"].isoformat() if r["ts"] is not None else None
        out.append([r["id"], r["category"], ts])
    out.sort(key=lambda r: (r[0], str(r[1]), str(r[2])))
    return out


def batch(first, n):
    day = datetime.datetime(2026, 11, 30, 12)
    return pa.table({
        "id": pa.array(range(first, first + n), pa.int64()),
        "category": pa.array(["a"] * n, pa.string()),
        "ts": pa.array([day + datetime.timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
    })


if a.cmd == "read":
    t = load()
    entries = {}
    entry_list = []
    for e in t.inspect.entries().to_pylist():
        entries[str(e["status"])] = entries.get(str(e["status"]), 0) + 1
        entry_list.append([e["data_file"]["file_path"], e["status"], e["snapshot_id"],
                           e["sequence_number"], e["file_sequence_number"]])
    files = [f for f in t.inspect.files().to_pylist() if f["content"] == 0]
    snap = t.current_snapshot()
    print(json.dumps({
        "rows": rows_of(t.scan().to_arrow()),
        "rows_id_lt_40": rows_of(t.scan(row_filter=LessThan("id", 40)).to_arrow()),
        "data_files": len(files),
        "operations": [s.summary.operation.value for s in t.snapshots()],
        "current": {k: v for k, v in snap.summary.additional_properties.items()} | {"operation": snap.summary.operation.value},
        "entries": entries,
        "entry_list": entry_list,
        "sequence_number": snap.sequence_number,
        "manifests": len(snap.manifests(t.io)),
        "snapshot_id": snap.snapshot_id,
        "metadata_location": t.metadata_location,
    }))
elif a.cmd == "append":
    committed = []
    latencies = []
    times = []
    next_id = a.first_id
    while True:
        started = time.monotonic()
        while True:
            try:
                load().append(batch(next_id, a.rows))
                break
            except CommitFailedException:
                time.sleep(0.01)
        latencies.append((time.monotonic() - started) * 1000.0)
        times.append(time.time())
        if a.ready and len(times) == 1:
            open(a.ready, "w").close()
        committed.extend(range(next_id, next_id + a.rows))
        next_id += a.rows
        if not a.loop_until or os.path.exists(a.loop_until):
            break
        if a.pause:
            time.sleep(a.pause)
    print(json.dumps({"committed": committed, "latencies_ms": latencies, "commit_times": times}))
elif a.cmd == "delete":
    t = load()
    day = datetime.date.fromisoformat(a.day)
    start = datetime.datetime.combine(day, datetime.time())
    end = start + datetime.timedelta(days=1)
    where = And(EqualTo("category", a.category),
                And(GreaterThanOrEqual("ts", start.isoformat()), LessThan("ts", end.isoformat())))
    victims = [r["id"] for r in t.scan(row_filter=where).to_arrow().to_pylist() if r["id"] % 2 == 1]
    from pyiceberg.expressions import In
    t.delete(In("id", victims))
    print(json.dumps({"deleted": sorted(victims)}))
sys.stdout.flush()
os._exit(0)
