"""A large unpartitioned table for the spilling-sort benchmark (pyarrow only, streamed: the
generator never holds more than one batch): ROWS rows of `sensor` (int32, 500 values), `ts`
(30 days), `value` (float64) and `id`, all random but `id`, so the files barely compress.

  sort_table.py make PATH ROWS
  sort_table.py measure PATH     files, rows, the sum, min and max of `id` (a permutation of
                                 0..ROWS keeps all four), the exact sum of `value` (scaled to
                                 integers), and whether the files' `sensor` ranges tile it
"""
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

T0 = 1_764_547_200_000_000
SPAN = 30 * 86_400_000_000
BATCH = 1_000_000
SCHEMA = pa.schema([("sensor", pa.int32()), ("ts", pa.timestamp("us", tz="UTC")),
                    ("value", pa.float64()), ("id", pa.int64())])


def batches(rows):
    for start in range(0, rows, BATCH):
        n = min(BATCH, rows - start)
        sensor = pc.cast(pc.floor(pc.multiply(pc.random(n), 500)), pa.int32())
        ts = pc.cast(pc.cast(pc.floor(pc.add(pc.multiply(pc.random(n), SPAN), T0)), pa.int64()),
                     pa.timestamp("us", tz="UTC"))
        yield pa.record_batch([sensor, ts, pc.random(n), pa.array(range(start, start + n), pa.int64())],
                              schema=SCHEMA)


def make(path, rows):
    write_deltalake(path, pa.RecordBatchReader.from_batches(SCHEMA, batches(rows)), mode="append")


def measure(path):
    import pyarrow.parquet as pq
    dt = DeltaTable(path)
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    spans = sorted((a["min.sensor"], a["max.sensor"]) for a in adds)
    tiles = all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
    rows, id_sum, id_min, id_max, value_sum = 0, 0, None, None, 0
    # A file at a time (bounded memory). Sums of integers are exact in any order: each value
    # is truncated to a multiple of 2^-32 first.
    for f in dt.file_uris():
        t = pq.read_table(f, columns=["id", "value"])
        rows += t.num_rows
        id_sum += pc.sum(t["id"]).as_py()
        mm = pc.min_max(t["id"]).as_py()
        id_min = mm["min"] if id_min is None else min(id_min, mm["min"])
        id_max = mm["max"] if id_max is None else max(id_max, mm["max"])
        value_sum += pc.sum(pc.cast(pc.floor(pc.multiply(t["value"], float(1 << 32))), pa.int64())).as_py()
    print(json.dumps({"files": len(adds), "rows": rows, "id_sum": id_sum, "id_min": id_min,
                      "id_max": id_max, "value_sum_2_32": value_sum,
                      "sensor_ranges_tile": tiles}), flush=True)
    os._exit(0)


if sys.argv[1] == "make":
    make(sys.argv[2], int(sys.argv[3]))
else:
    measure(sys.argv[2])
