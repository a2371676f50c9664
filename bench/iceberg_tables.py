"""The Iceberg side of bench/iceberg.sh, with pyiceberg 0.12 on a SQL catalog (sqlite) in DIR:

    iceberg_tables.py make DIR --appends N --rows R   a table db.events written by N appends,
                                                      each one small file in each of 4
                                                      partitions (R rows each); deterministic
    iceberg_tables.py overwrite DIR                   the peer: read the whole table and
                                                      overwrite it (pyiceberg has no compaction)
    iceberg_tables.py read DIR                        rows, sum of ids, data files, operations
Each prints one JSON object."""
import argparse
import datetime
import json
import os
import time

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

ap = argparse.ArgumentParser()
ap.add_argument("cmd", choices=["make", "overwrite", "read"])
ap.add_argument("dir")
ap.add_argument("--appends", type=int, default=200)
ap.add_argument("--rows", type=int, default=5000)
a = ap.parse_args()
root = os.path.abspath(a.dir)
os.makedirs(root, exist_ok=True)
cat = SqlCatalog("lh", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")

if a.cmd == "make":
    cat.create_namespace_if_not_exists("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "category", StringType(), required=False),
        NestedField(3, "ts", TimestampType(), required=False),
        NestedField(4, "reading", DoubleType(), required=False),
    )
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"),
        PartitionField(source_id=3, field_id=1001, transform=DayTransform(), name="ts_day"),
    )
    t = cat.create_table("db.events", schema=schema, partition_spec=spec,
                         location=f"file://{root}/events")
    next_id = 0
    for i in range(a.appends):
        ids, cs, ts, rd = [], [], [], []
        for c in ["a", "b"]:
            for d in [datetime.datetime(2026, 11, 29), datetime.datetime(2026, 11, 30)]:
                for r in range(a.rows):
                    ids.append(next_id)
                    cs.append(c)
                    ts.append(d + datetime.timedelta(seconds=(i * a.rows + r) % 86400))
                    rd.append((next_id * 7919 % 10007) / 10.0)
                    next_id += 1
        t.append(pa.table({"id": pa.array(ids, pa.int64()), "category": pa.array(cs, pa.string()),
                           "ts": pa.array(ts, pa.timestamp("us")), "reading": pa.array(rd, pa.float64())}))
    print(json.dumps({"rows": next_id, "appends": a.appends}))
elif a.cmd == "overwrite":
    t = cat.load_table("db.events")
    t0 = time.perf_counter()
    data = t.scan().to_arrow()
    t.overwrite(data)
    print(json.dumps({"seconds": time.perf_counter() - t0}))
else:
    t = cat.load_table("db.events")
    data = t.scan().to_arrow()
    files = t.inspect.files().num_rows
    ops = [s.summary.operation.value for s in t.snapshots()]
    print(json.dumps({"rows": data.num_rows, "id_sum": pc.sum(data["id"]).as_py(),
                      "reading_sum": round(pc.sum(data["reading"]).as_py(), 3),
                      "data_files": files, "last_operation": ops[-1]}))
os._exit(0)  # pyarrow can abort on interpreter teardown
