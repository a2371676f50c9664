"""Python deltalake doing lakehealth's job on the same table: open, get_add_actions, and a
group-by per partition (files, bytes, small files). Prints one JSON line."""
import json
import os
import resource
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

SMALL = 128 * 1024 * 1024

t0 = time.perf_counter()
# LH_STORAGE_OPTIONS: a JSON object of storage options (bench/open_s3.sh).
dt = DeltaTable(sys.argv[1], storage_options=json.loads(os.environ.get("LH_STORAGE_OPTIONS", "{}")) or None)
actions = pa.table(dt.get_add_actions(flatten=True))
actions = actions.append_column("small", pc.less(actions["size_bytes"], SMALL))
per_part = actions.group_by("partition.part").aggregate(
    [("size_bytes", "sum"), ("size_bytes", "count"), ("size_bytes", "min"),
     ("size_bytes", "max"), ("size_bytes", "approximate_median"), ("small", "sum")]
)
secs = time.perf_counter() - t0
print(json.dumps({
    "tool": "python-deltalake",
    "seconds": secs,
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "files": actions.num_rows,
    "bytes": pc.sum(actions["size_bytes"]).as_py(),
    "partitions": per_part.num_rows,
}))
