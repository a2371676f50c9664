"""Independent reader for the end-to-end tests: lists the table's active files with Python
deltalake, reads each Parquet file with pyarrow (not through lakehealth), and prints one JSON
object: rows, distinct event ids, the sum of `reading`, files per partition, and the dataChange
flags of every OPTIMIZE commit found in the JSON log."""
import glob
import json
import os
import sys
from collections import Counter

import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable

path = sys.argv[1]
dt = DeltaTable(path)
rows = 0
ids = set()
reading = 0
per_part = Counter()
for uri in dt.file_uris():
    local = uri[len("file://"):] if uri.startswith("file://") else uri
    t = pq.read_table(local, columns=["event_id", "reading"])
    rows += t.num_rows
    ids.update(t.column("event_id").to_pylist())
    s = pc.sum(t.column("reading")).as_py()
    reading += s or 0
    part = os.path.basename(os.path.dirname(local))
    per_part[part] += 1

optimize = []
for f in sorted(glob.glob(os.path.join(path, "_delta_log", "*.json"))):
    actions = [json.loads(l) for l in open(f) if l.strip()]
    ops = [a["commitInfo"].get("operation") for a in actions if "commitInfo" in a]
    if "OPTIMIZE" in ops:
        flags = [a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a]
        optimize.append({"version": int(os.path.basename(f)[:20]), "data_change": flags})

print(json.dumps({
    "version": dt.version(),
    "files": len(dt.file_uris()),
    "rows": rows,
    "distinct_ids": len(ids),
    "reading_sum": reading,
    "files_per_partition": per_part,
    "optimize_commits": optimize,
}))
