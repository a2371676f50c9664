"""Writes an Iceberg table with pyiceberg and prints what pyiceberg reports for its current
snapshot, as one JSON object, for the Iceberg tests to compare lakehealth's report with.

    python tests/py/make_iceberg.py TABLE_URI --catalog-dir DIR [--storage-options JSON]
                                    [--appends N]

TABLE_URI is a local path, file:// or s3://bucket/prefix (the table's location); the SQL catalog
(sqlite) lives in DIR. The table has two partition fields, `category` (identity, with NULLs) and
`ts_day` (day(ts)), is written by N small appends (one file per partition each), then two
deletes: pyiceberg 0.12 deletes copy-on-write only (merge-on-read falls back to it), so one
delete drops whole files (snapshot operation `delete`) and one rewrites files without the
deleted rows (operation `overwrite`); neither writes delete files.

Printed: metadata_location, location, snapshots (count), current_snapshot_id, data_files
(path, size, records, partition as {field: text}, from `inspect.files()`), delete_files (count),
planned_files (count of `scan().plan_files()`, which must agree with data_files).
"""
import argparse
import datetime
import json
import os
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, EqualTo, LessThan
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType, TimestampType

from lh_storage import _opt

ap = argparse.ArgumentParser()
ap.add_argument("uri")
ap.add_argument("--catalog-dir", required=True)
# A SQLAlchemy URI of another SQL catalog (PostgreSQL); default: sqlite in --catalog-dir.
ap.add_argument("--catalog-uri")
ap.add_argument("--storage-options", default="{}")
ap.add_argument("--appends", type=int, default=12)
a = ap.parse_args()
opts = json.loads(a.storage_options)

uri = a.uri
if "://" not in uri:
    uri = "file://" + os.path.abspath(uri)
props = {}
if uri.startswith("s3://"):
    props = {
        "s3.endpoint": _opt(opts, "AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
        "s3.access-key-id": _opt(opts, "AWS_ACCESS_KEY_ID"),
        "s3.secret-access-key": _opt(opts, "AWS_SECRET_ACCESS_KEY"),
        "s3.region": _opt(opts, "AWS_REGION") or "us-east-1",
    }
os.makedirs(a.catalog_dir, exist_ok=True)
cat = SqlCatalog(
    "lh",
    uri=a.catalog_uri or f"sqlite:///{os.path.abspath(a.catalog_dir)}/catalog.db",
    warehouse=uri.rsplit("/", 1)[0],
    **props,
)
cat.create_namespace_if_not_exists("db")
schema = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "ts", TimestampType(), required=False),
)
spec = PartitionSpec(
    PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"),
    PartitionField(source_id=3, field_id=1001, transform=DayTransform(), name="ts_day"),
)
t = cat.create_table("db.events", schema=schema, partition_spec=spec, location=uri)

cats = ["a", "b", None]
days = [datetime.datetime(2026, 11, 29, 10), datetime.datetime(2026, 11, 30, 23, 59)]
next_id = 0
for i in range(a.appends):
    ids, cs, ts = [], [], []
    for c in cats:
        for d in days:
            for r in range(5 + i % 3):
                ids.append(next_id)
                cs.append(c)
                ts.append(d + datetime.timedelta(seconds=r))
                next_id += 1
    t.append(pa.table({
        "id": pa.array(ids, pa.int64()),
        "category": pa.array(cs, pa.string()),
        "ts": pa.array(ts, pa.timestamp("us")),
    }))

# Drops whole files: every row of category b on 2026-11-29.
t.delete(And(EqualTo("category", "b"), LessThan("ts", "2026-11-30T00:00:00")))
# Rewrites files: a few rows out of files of category 'a'.
t.delete(And(EqualTo("category", "a"), LessThan("id", 3)))
t = cat.load_table("db.events")


def text(v):
    if v is None:
        return None
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return str(v)


files = t.inspect.files()
data_files = []
delete_files = 0
for row in files.to_pylist():
    if row["content"] != 0:
        delete_files += 1
        continue
    data_files.append({
        "path": row["file_path"],
        "size": row["file_size_in_bytes"],
        "records": row["record_count"],
        "partition": {k: text(v) for k, v in row["partition"].items()},
    })
planned = list(t.scan().plan_files())
print(json.dumps({
    "metadata_location": t.metadata_location,
    "location": t.location(),
    "snapshots": len(t.snapshots()),
    "current_snapshot_id": t.current_snapshot().snapshot_id,
    "operations": [s.summary.operation.value for s in t.snapshots()],
    "data_files": data_files,
    "delete_files": delete_files,
    "planned_files": len(planned),
}))
sys.stdout.flush()
os._exit(0)
