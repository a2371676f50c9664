"""Appends rows to a Delta table with Python deltalake, as any other writer would: one
write_deltalake(mode="append") call, so one commit, with one file per partition written.

    python3 tests/py/append_rows.py URI --rows PARTITION=N [--rows PARTITION=N ...]
        [--storage-options JSON]

The table is partitioned by the string column ``d`` and holds ``id`` (int64, unique across
calls: it starts after the largest id present) and ``v`` (string); it is created by the first
call. Rows are generated from fixed values, so the files are the same on every run.

Prints {"version": the table version after the commit, "rows": rows appended}.
"""
import argparse
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("d", pa.string())])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("uri")
    ap.add_argument("--rows", action="append", required=True, metavar="PARTITION=N")
    ap.add_argument("--storage-options", default=None)
    a = ap.parse_args()
    opts = json.loads(a.storage_options) if a.storage_options else None
    start = 0
    try:
        dt = DeltaTable(a.uri, storage_options=opts)
        ids = dt.to_pyarrow_table(columns=["id"]).column("id")
        if len(ids):
            start = pc.max(ids).as_py() + 1
    except Exception:  # noqa: BLE001 - no table yet: this call creates it
        pass
    ids, vs, ds = [], [], []
    for item in a.rows:
        part, n = item.rsplit("=", 1)
        for i in range(int(n)):
            ids.append(start + len(ids))
            vs.append(f"row {i} of {part}")
            ds.append(part)
    t = pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array(vs), pa.array(ds)],
                             schema=SCHEMA)
    write_deltalake(a.uri, t, partition_by=["d"], mode="append", storage_options=opts)
    print(json.dumps({"version": DeltaTable(a.uri, storage_options=opts).version(),
                      "rows": len(ids)}))


if __name__ == "__main__":
    main()
    # Python deltalake can abort at interpreter shutdown after the work is done.
    sys.stdout.flush()
    os._exit(0)
