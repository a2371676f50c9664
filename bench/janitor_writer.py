"""A streaming writer for bench/janitor.sh: every `interval` seconds, one append commit holding
one small file per partition (`rows` rows each, partitions p0..p{n-1} of column `part`), for
`seconds`. Prints one JSON line per commit: its version, latency and landing time, so the
benchmark can read the writer's cadence and latency beside the janitor.
With --mixed the table is partitioned by `day` instead: each commit holds 50-500 rows (seeded)
for today, and every 10th commit also 50-500 late rows for one of the six days before (a
streaming table's usual shape: a hot partition and stragglers).
With --sensor each row also has `sensor`, random in 0..499 (seeded): every file spans nearly
the whole range, what re-clustering (bench/recluster.sh) orders.
Usage: janitor_writer.py URI INTERVAL_S SECONDS [--rows 20] [--partitions 2] [--mixed] [--sensor]
       [--create]"""
import argparse
import datetime
import json
import random
import time

import pyarrow as pa
from deltalake import write_deltalake

a = argparse.ArgumentParser()
a.add_argument("uri")
a.add_argument("interval", type=float)
a.add_argument("seconds", type=float)
a.add_argument("--rows", type=int, default=20)
a.add_argument("--partitions", type=int, default=2)
a.add_argument("--mixed", action="store_true")
a.add_argument("--sensor", action="store_true")
a.add_argument("--create", action="store_true")
o = a.parse_args()

next_id = 0
commits = 0
rng = random.Random(7)
today = datetime.date.today()


def mixed_batch():
    global next_id, commits
    commits += 1
    days = [today] * rng.randint(50, 500)
    if commits % 10 == 0:
        days += [today - datetime.timedelta(days=rng.randint(1, 6))] * rng.randint(50, 500)
    ids = list(range(next_id, next_id + len(days)))
    next_id += len(days)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        "day": pa.array([d.isoformat() for d in days], pa.string()),
    })


def batch():
    global next_id
    if o.mixed:
        return mixed_batch()
    n = o.rows * o.partitions
    ids = list(range(next_id, next_id + n))
    next_id += n
    cols = {
        "id": pa.array(ids, pa.int64()),
        "value": pa.array([i * 0.5 for i in ids], pa.float64()),
        "part": pa.array([f"p{i % o.partitions}" for i in range(n)], pa.string()),
    }
    if o.sensor:
        cols["sensor"] = pa.array([rng.randrange(500) for _ in range(n)], pa.int64())
    return pa.table(cols)


partition_by = ["day"] if o.mixed else ["part"]

if o.create:
    # Ids apart from the stream's (which start at 0 in its own process).
    next_id = 10**12
    write_deltalake(o.uri, batch(), mode="append", partition_by=partition_by)
    print(json.dumps({"created": True, "rows": next_id - 10**12}), flush=True)
    raise SystemExit(0)

end = time.time() + o.seconds
tick = time.time()
while time.time() < end:
    t0 = time.time()
    write_deltalake(o.uri, batch(), mode="append", partition_by=partition_by)
    t1 = time.time()
    print(json.dumps({"latency_ms": (t1 - t0) * 1000, "committed_at_ms": int(t1 * 1000),
                      "rows_total": next_id}), flush=True)
    tick += o.interval
    time.sleep(max(0.0, tick - time.time()))
