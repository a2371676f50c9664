"""Plain Parquet folders for the format tests, and independent readers of them.

    folders.py hive URI [--storage-options JSON] [--plain]
                                                   write a Hive-partitioned folder with pyarrow
                                                   (--plain: without the percent-escaped city)
    folders.py list URI [--storage-options JSON]   list it independently: files/bytes per partition
    folders.py sink DIR                            a Spark file-sink folder with _spark_metadata/
    folders.py delta-rows URI [--storage-options JSON]   rows of a Delta table (Python deltalake)

Rows are printed canonically as JSON lists [id, value, day, city], sorted.
"""
import argparse
import json
import os
import sys
import time
import uuid
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from lh_storage import filesystem_for

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
DAYS = ["2026-11-28", "2026-11-29", None]
CITIES = ["a b/c", "x"]


def canon(rows):
    return sorted(json.dumps(r, default=str) for r in rows)


def hive(uri, opts, plain=False):
    fs, root = filesystem_for(uri, opts)
    rows = []
    next_id = 0
    for batch in range(4):
        ids, values, days, cities = [], [], [], []
        for day in DAYS:
            for city in (c for c in CITIES if not (plain and "/" in c)):
                for _ in range(3):
                    ids.append(next_id)
                    values.append(f"v{next_id}")
                    days.append(day)
                    cities.append(city)
                    rows.append([next_id, f"v{next_id}", day, city])
                    next_id += 1
        t = pa.table({"id": pa.array(ids, pa.int64()), "value": values, "day": days, "city": cities})
        pq.write_to_dataset(t, root, partition_cols=["day", "city"], filesystem=fs,
                            basename_template=f"part-{batch}-{{i}}.parquet")
    # What Spark and Hadoop leave beside the data: never counted.
    for p, data in [("_SUCCESS", b""), ("day=2026-11-28/.part-0.parquet.crc", b"crc"),
                    ("_temporary/0/part-9.parquet", b"half-written")]:
        fs.create_dir(os.path.dirname(f"{root}/{p}"), recursive=True)
        with fs.open_output_stream(f"{root}/{p}") as f:
            f.write(data)
    return {"rows": canon(rows)}


def listing(uri, opts):
    """Files and bytes per partition, by pyarrow's own listing and decoding."""
    fs, root = filesystem_for(uri, opts)
    parts = {}
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if info.type != pafs.FileType.File:
            continue
        rel = info.path[len(root):].lstrip("/")
        segs = rel.split("/")
        if any(s.startswith("_") or s.startswith(".") for s in segs) or not rel.endswith(".parquet"):
            continue
        values = {}
        for s in segs[:-1]:
            k, v = s.split("=", 1)
            values[k] = None if v == HIVE_NULL else unquote(v)
        key = json.dumps(values, sort_keys=True)
        files, size = parts.get(key, (0, 0))
        parts[key] = (files + 1, size + info.size)
    return {"partitions": [{"values": json.loads(k), "files": f, "bytes": b}
                           for k, (f, b) in sorted(parts.items())]}


def sink(d):
    """A folder as Spark's Parquet file sink leaves it: batches 0-12, batch 9 compacted into
    9.compact (0-8 then deleted), a delete action in batch 11, an orphan of a failed batch 13."""
    os.makedirs(os.path.join(d, "_spark_metadata"), exist_ok=True)
    base = 1_796_000_000  # seconds; batch N committed at base + 10 N
    live = {}  # rel -> (entry, rows)
    batches = {}
    next_id = 0

    def write_file(day):
        nonlocal next_id
        rel = f"day={day}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        os.makedirs(os.path.join(d, f"day={day}"), exist_ok=True)
        ids = list(range(next_id, next_id + 5))
        next_id += 5
        pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "value": [f"v{i}" for i in ids]}),
                       os.path.join(d, rel))
        rows = [[i, f"v{i}", day, None] for i in ids]
        size = os.path.getsize(os.path.join(d, rel))
        uri = "file://" + os.path.join(d, rel)
        entry = {"path": uri, "size": size, "isDir": False, "modificationTime": base * 1000,
                 "blockReplication": 1, "blockSize": 33554432, "action": "add"}
        return rel, entry, rows

    deleted = None
    for b in range(13):
        entries = []
        for day in ["2026-11-29", "2026-11-30"]:
            rel, e, rows = write_file(day)
            live[rel] = (e, rows)
            entries.append(e)
            if b == 3 and deleted is None:
                deleted = rel
        if b == 11:
            # Batch 3's first file is deleted by the log (it stays on storage).
            entries.append(dict(live.pop(deleted)[0], action="delete"))
        if b == 9:
            name, lines = "9.compact", [v[0] for v in live.values()]
        else:
            name, lines = str(b), entries
        p = os.path.join(d, "_spark_metadata", name)
        with open(p, "w") as f:
            f.write("v1\n" + "\n".join(json.dumps(x) for x in lines))
        os.utime(p, (base + 10 * b, base + 10 * b))
        batches[b] = name
    for b in range(9):
        os.remove(os.path.join(d, "_spark_metadata", str(b)))
    # Hadoop's checksum of a log file: hidden, ignored.
    with open(os.path.join(d, "_spark_metadata", ".12.crc"), "w") as f:
        f.write("crc")
    # A failed batch 13 wrote a file and never logged it.
    orphan, _, _ = write_file("2026-11-30")
    orphans = {orphan: os.path.getsize(os.path.join(d, orphan)),
               deleted: os.path.getsize(os.path.join(d, deleted))}
    return {
        "active": {r: v[0]["size"] for r, v in live.items()},
        "orphans": orphans,
        "rows": canon(r for v in live.values() for r in v[1]),
        "last_batch_ms": (base + 120) * 1000,
    }


def delta_rows(uri, opts):
    from deltalake import DeltaTable
    t = DeltaTable(uri, storage_options=opts or None).to_pyarrow_table()
    cols = t.to_pydict()
    n = t.num_rows
    rows = [[cols["id"][i], cols["value"][i], cols.get("day", [None] * n)[i],
             cols.get("city", [None] * n)[i]] for i in range(n)]
    return {"rows": canon(rows), "files": len(DeltaTable(uri, storage_options=opts or None).file_uris())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd")
    ap.add_argument("uri")
    ap.add_argument("--storage-options", default="{}")
    ap.add_argument("--plain", action="store_true")
    a = ap.parse_args()
    opts = json.loads(a.storage_options)
    out = {"hive": lambda: hive(a.uri, opts, a.plain), "list": lambda: listing(a.uri, opts),
           "sink": lambda: sink(a.uri), "delta-rows": lambda: delta_rows(a.uri, opts)}[a.cmd]()
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
