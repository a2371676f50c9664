"""The streaming appender of bench/iceberg_janitor.sh: pyiceberg 0.12 on a SQL catalog (sqlite)
in DIR appends one small file to each of 2 partitions (category a and b, one day) per commit.

    iceberg_writer.py DIR PERIOD 0 --create   creates db.events (prints {"rows": 0})
    iceberg_writer.py DIR PERIOD SECONDS      a commit every PERIOD s for SECONDS s; a commit
                                              that loses a race reloads and appends again

Prints a JSON line per commit: {"latency_ms": time from the append call to its success, with
its retries, "retries", "rows_total"}."""
import datetime
import json
import os
import sys
import time

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import DoubleType, LongType, NestedField, StringType, TimestampType

root = os.path.abspath(sys.argv[1])
period, seconds = float(sys.argv[2]), float(sys.argv[3])
os.makedirs(root, exist_ok=True)
cat = SqlCatalog("lh", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}")
ROWS = 20
schema_arrow = pa.schema([("id", pa.int64()), ("category", pa.string()),
                          ("ts", pa.timestamp("us")), ("reading", pa.float64())])

if "--create" in sys.argv:
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
    cat.create_table("db.events", schema=schema, partition_spec=spec,
                     location=f"file://{root}/events")
    print(json.dumps({"rows": 0}))
    sys.exit(0)

day = datetime.datetime(2026, 12, 1, 12, 0, 0)
next_id, end = 0, time.time() + seconds
while time.time() < end:
    t0 = time.time()
    ids = list(range(next_id, next_id + 2 * ROWS))
    batch = pa.table({
        "id": ids,
        "category": ["a"] * ROWS + ["b"] * ROWS,
        "ts": [day] * (2 * ROWS),
        "reading": [float(i) for i in ids],
    }, schema=schema_arrow)
    retries = 0
    while True:
        try:
            cat.load_table("db.events").append(batch)
            break
        except CommitFailedException:
            retries += 1
    next_id += 2 * ROWS
    print(json.dumps({"latency_ms": (time.time() - t0) * 1000, "retries": retries,
                      "rows_total": next_id}), flush=True)
    time.sleep(max(0.0, period - (time.time() - t0)))
