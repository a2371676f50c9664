"""Builds a small partitioned Delta table for the maintenance tests, written by hand (pyarrow
Parquet files and JSON commits, no lakehealth code) so every name and age is known:

    python tests/py/make_vacuum_table.py PATH

- v0 creates the table (columns id long, d string; partitioned by d), v1..v8 each add one file
  d=a/part-0000N.parquet holding ids N*10 .. N*10+9.
- v9 removes files 0..5, with tombstones of chosen ages: 0 and 1 removed in 2023 ("ancient"),
  2 removed a day later, 3 removed 2 days ago (its file's mtime is set 30 days back, so only the
  tombstone says it is young), 4 removed 1 hour ago, 5 removed in 2023.
- v10 adds file 5 back (the same path): the current snapshot references it again, though an
  old tombstone of it was written.
- d=a/orphan.parquet is on storage with an old mtime but in no commit.

Prints one JSON object: the expected deletions with the default 7-day retention
(`deleted_default`), with a 1-day retention (`deleted_1d`), the active files, every data file
on storage, and the sizes of all files.
"""
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

path = sys.argv[1]
now = int(time.time() * 1000)
DAY = 86_400_000
ANCIENT = 1_700_000_000_000  # 2023-11-14
log = os.path.join(path, "_delta_log")
os.makedirs(log, exist_ok=True)
os.makedirs(os.path.join(path, "d=a"), exist_ok=True)


def commit(v, actions, op, ts):
    actions = [{"commitInfo": {"timestamp": ts, "operation": op, "operationParameters": {}}}] + actions
    with open(os.path.join(log, f"{v:020}.json"), "w") as f:
        for a in actions:
            f.write(json.dumps(a) + "\n")


schema = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "d", "type": "string", "nullable": True, "metadata": {}},
    ],
}
commit(
    0,
    [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "00000000-0000-0000-0000-00000000beef",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(schema),
                "partitionColumns": ["d"],
                "configuration": {},
                "createdTime": ANCIENT,
            }
        },
    ],
    "CREATE TABLE",
    ANCIENT,
)

files = []
adds = {}
for n in range(8):
    rel = f"d=a/part-{n:05}.parquet"
    full = os.path.join(path, rel)
    pq.write_table(pa.table({"id": pa.array(range(n * 10, n * 10 + 10), pa.int64())}), full)
    size = os.path.getsize(full)
    add = {
        "path": rel,
        "partitionValues": {"d": "a"},
        "size": size,
        "modificationTime": ANCIENT,
        "dataChange": True,
    }
    adds[rel] = add
    files.append(rel)
    commit(n + 1, [{"add": add}], "WRITE", ANCIENT + n)

ages = [ANCIENT, ANCIENT, ANCIENT + DAY, now - 2 * DAY, now - 3_600_000, ANCIENT]
removes = []
for n, ts in enumerate(ages):
    a = adds[files[n]]
    removes.append(
        {
            "remove": {
                "path": a["path"],
                "deletionTimestamp": ts,
                "dataChange": True,
                "extendedFileMetadata": True,
                "partitionValues": a["partitionValues"],
                "size": a["size"],
            }
        }
    )
commit(9, removes, "DELETE", now - 3_600_000)
commit(10, [{"add": adds[files[5]]}], "WRITE", now - 60_000)

# File 3's tombstone is 2 days old, its file 30 days: only the tombstone may decide.
old = time.time() - 30 * 86_400
os.utime(os.path.join(path, files[3]), (old, old))
orphan = os.path.join(path, "d=a/orphan.parquet")
pq.write_table(pa.table({"id": pa.array([-1], pa.int64())}), orphan)
os.utime(orphan, (old, old))

on_storage = sorted(
    os.path.relpath(os.path.join(dp, f), path)
    for dp, _, fs in os.walk(path)
    if not dp.startswith(log)
    for f in fs
)
print(
    json.dumps(
        {
            "deleted_default": sorted(files[n] for n in (0, 1, 2)),
            "deleted_1d": sorted(files[n] for n in (0, 1, 2, 3)),
            "active": sorted(files[n] for n in (5, 6, 7)),
            "on_storage": on_storage,
            "sizes": {rel: adds[rel]["size"] for rel in files},
            "version": 10,
        }
    )
)
sys.stdout.flush()
os._exit(0)
