"""The independent side of the skipping tests: makes a table of known layout with Python
deltalake, and measures overlap depth from Python deltalake's own reading of the statistics
(`get_add_actions(flatten=True)`), by brute force (every file against every other), so a bug
in lakehealth's sweep cannot agree with itself.

  skipping_depth.py make URI         30 appends of 100 rows, partitioned by `day` (2 values):
                                     `seq` rises across appends (tiles), `sensor` is random among
                                     50 values, `note` is null except in the last append
  skipping_depth.py measure URI COL...   one JSON object: per column (and per partition)
                                     files, worst, mean, point_files, all_null, without_stats
  skipping_depth.py make-iceberg DIR     the same 30 appends as an Iceberg table (pyiceberg, a sqlite
                                     catalog in DIR, the table at DIR/t, partitioned by `day`
                                     identity, its default sort order `seq`); prints its location
  skipping_depth.py measure-iceberg DIR COL...  as `measure`, from pyiceberg's decoding of the
                                     manifests' bounds (`inspect.files()` readable_metrics)
  skipping_depth.py make-iceberg-random DIR  40 pyiceberg appends of 2,500 rows into db.t at DIR/t
                                     (unpartitioned, sqlite catalog in DIR, its default sort order
                                     `ts`): random `id`, random `ts` over one day, 160 random hex
                                     characters of `payload`: every file spans every column's range
  skipping_depth.py rows-iceberg DIR    {"rows", "sha256"} of db.t's rows as pyiceberg reads them,
                                     sorted, with {"sort_order_ids": [...]} of its data files
  skipping_depth.py make-flags URI    24 appends of 60,000 rows into day 2026-12-01: unique `id`,
                                     `flag` 0 or 1 at random (two values: no order can make a
                                     lookup on it open one file), `value` a random double
  skipping_depth.py count URI         {"rows", "distinct_ids", "flag_sum"} of a make-flags table, read
                                     by Python deltalake + pyarrow
  skipping_depth.py admits URI COL VALUE  {"files": n, "admitting": k, "paths": [...]}: the files whose
                                     min/max admit COL = VALUE (an integer when it parses as
                                     one); a file without both counts as admitting
"""
import json
import random
import sys

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake


def appends():
    rng = random.Random(17)
    for i in range(30):
        n = 100
        yield pa.table({
            "seq": pa.array(range(i * n, i * n + n), pa.int64()),
            "sensor": pa.array([f"s-{rng.randrange(50):02d}" for _ in range(n)], pa.string()),
            "note": pa.array([f"n{j}" if i == 29 else None for j in range(n)], pa.string()),
            "day": pa.array(["2026-12-0%d" % (1 + i % 2)] * n, pa.string()),
        })


def make(uri):
    for t in appends():
        write_deltalake(uri, t, mode="append", partition_by=["day"])


def make_flags(uri):
    rng = random.Random(5)
    n = 60_000
    for i in range(24):
        write_deltalake(uri, pa.table({
            "id": pa.array(range(i * n, i * n + n), pa.int64()),
            "flag": pa.array([rng.randrange(2) for _ in range(n)], pa.int64()),
            "value": pa.array([rng.random() for _ in range(n)], pa.float64()),
            "day": pa.array(["2026-12-01"] * n, pa.string()),
        }), mode="append", partition_by=["day"])


def count(uri):
    import pyarrow.compute as pc
    t = DeltaTable(uri).to_pyarrow_table(columns=["id", "flag"])
    print(json.dumps({"rows": t.num_rows,
                      "distinct_ids": pc.count_distinct(t.column("id")).as_py(),
                      "flag_sum": pc.sum(t.column("flag")).as_py()}))


def iceberg_catalog(d):
    import os
    from pyiceberg.catalog.sql import SqlCatalog
    os.makedirs(d, exist_ok=True)
    return SqlCatalog("lh", uri=f"sqlite:///{os.path.abspath(d)}/catalog.db",
                      warehouse="file://" + os.path.abspath(d))


def make_iceberg(d):
    import os
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType
    cat = iceberg_catalog(d)
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "seq", LongType(), required=False),
        NestedField(2, "sensor", StringType(), required=False),
        NestedField(3, "note", StringType(), required=False),
        NestedField(4, "day", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "day"))
    order = SortOrder(SortField(source_id=1, transform=IdentityTransform()))
    t = cat.create_table("db.t", schema, location="file://" + os.path.abspath(d) + "/t",
                         partition_spec=spec, sort_order=order)
    for a in appends():
        t.append(a)
    print(json.dumps({"location": t.location()}))


def make_iceberg_random(d):
    import datetime
    import os
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import SortField, SortOrder
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType, TimestampType
    cat = iceberg_catalog(d)
    cat.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "ts", TimestampType(), required=False),
        NestedField(3, "payload", StringType(), required=False),
    )
    order = SortOrder(SortField(source_id=2, transform=IdentityTransform()))
    t = cat.create_table("db.t", schema, location="file://" + os.path.abspath(d) + "/t",
                         sort_order=order)
    rng = random.Random(44)
    day = datetime.datetime(2026, 12, 1)
    for _ in range(40):
        n = 2500
        t.append(pa.table({
            "id": pa.array([rng.randrange(10**9) for _ in range(n)], pa.int64()),
            "ts": pa.array([day + datetime.timedelta(microseconds=rng.randrange(86_400 * 10**6))
                            for _ in range(n)], pa.timestamp("us")),
            "payload": pa.array([rng.randbytes(80).hex() for _ in range(n)], pa.string()),
        }))
    print(json.dumps({"location": t.location()}))


def rows_iceberg(d):
    import hashlib
    t = iceberg_catalog(d).load_table("db.t")
    rows = sorted((r["id"], r["ts"].isoformat() if r["ts"] else None, r["payload"])
                  for r in t.scan().to_arrow().to_pylist())
    files = [f for f in t.inspect.files().to_pylist() if f["content"] == 0]
    print(json.dumps({"rows": len(rows), "sha256": hashlib.sha256(repr(rows).encode()).hexdigest(),
                      "sort_order_ids": [f["sort_order_id"] for f in files]}))


def measure_iceberg(d, cols):
    files = iceberg_catalog(d).load_table("db.t").inspect.files().to_pylist()
    rows = []
    for f in files:
        r = {"num_records": f["record_count"], "partition.day": (f["partition"] or {}).get("day")}
        for c in cols:
            m = f["readable_metrics"][c]
            r[f"min.{c}"], r[f"max.{c}"] = m["lower_bound"], m["upper_bound"]
            r[f"null_count.{c}"] = m["null_value_count"]
        rows.append(r)
    out = {"table": {c: depth(rows, c) for c in cols}, "partitions": {}}
    for day in sorted({r["partition.day"] for r in rows}):
        part = [r for r in rows if r["partition.day"] == day]
        out["partitions"][day] = {c: depth(part, c) for c in cols}
    print(json.dumps(out))


def depth(rows, col):
    """rows: dicts of one file's flattened add action."""
    spans, unknown, all_null = [], 0, 0
    for r in rows:
        lo, hi = r.get(f"min.{col}"), r.get(f"max.{col}")
        if lo is not None and hi is not None:
            spans.append((lo, hi))
        elif r.get(f"null_count.{col}") is not None and r[f"null_count.{col}"] == r["num_records"]:
            all_null += 1
        else:
            unknown += 1
    at = lambda v: unknown + sum(1 for lo, hi in spans if lo <= v <= hi)
    points = sorted({p for s in spans for p in s})
    deepest = max((at(p) for p in points), default=unknown)
    depths = [max(at(p) for p in points if lo <= p <= hi) for lo, hi in spans] + [deepest] * unknown
    lookups = [at(lo) for lo, _ in spans] + [deepest] * unknown
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    return {"files": len(rows), "worst": max(depths, default=0), "mean": mean(depths),
            "point_files": mean(lookups), "all_null": all_null, "without_stats": unknown}


def measure(uri, cols):
    adds = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    out = {"table": {c: depth(adds, c) for c in cols}, "partitions": {}}
    for day in sorted({a["partition.day"] for a in adds}):
        rows = [a for a in adds if a["partition.day"] == day]
        out["partitions"][day] = {c: depth(rows, c) for c in cols}
    print(json.dumps(out))


def admits(uri, col, value):
    try:
        value = int(value)
    except ValueError:
        pass
    adds = pa.table(DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    hit = [a["path"] for a in adds
           if a.get(f"min.{col}") is None or a.get(f"max.{col}") is None
           or a[f"min.{col}"] <= value <= a[f"max.{col}"]]
    print(json.dumps({"files": len(adds), "admitting": len(hit), "paths": hit}))


if sys.argv[1] == "make":
    make(sys.argv[2])
elif sys.argv[1] == "count":
    count(sys.argv[2])
elif sys.argv[1] == "make-flags":
    make_flags(sys.argv[2])
elif sys.argv[1] == "make-iceberg":
    make_iceberg(sys.argv[2])
elif sys.argv[1] == "make-iceberg-random":
    make_iceberg_random(sys.argv[2])
elif sys.argv[1] == "rows-iceberg":
    rows_iceberg(sys.argv[2])
elif sys.argv[1] == "measure-iceberg":
    measure_iceberg(sys.argv[2], sys.argv[3:])
elif sys.argv[1] == "admits":
    admits(sys.argv[2], sys.argv[3], sys.argv[4])
else:
    measure(sys.argv[2], sys.argv[3:])
