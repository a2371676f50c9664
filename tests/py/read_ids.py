"""Independent reader for the maintenance tests: opens a table with Python deltalake and prints
its version, the sorted `id` column of every row, and its active files (relative paths).

    python tests/py/read_ids.py PATH
"""
import json
import os
import sys

from deltalake import DeltaTable

dt = DeltaTable(sys.argv[1])
t = dt.to_pyarrow_table()
import pyarrow as pa

adds = pa.table(dt.get_add_actions(flatten=True)).to_pydict()
print(
    json.dumps(
        {
            "version": dt.version(),
            "ids": sorted(t.column("id").to_pylist()),
            "files": sorted(adds["path"]),
        }
    )
)
sys.stdout.flush()
os._exit(0)
