"""Python deltalake's compaction of the same table copy (the peer), timed in-process.
Usage: py_optimize.py PATH TARGET_BYTES (storage options as JSON in LH_STORAGE_OPTIONS)."""
import json
import os
import sys
import time

from deltalake import DeltaTable

path, target = sys.argv[1], int(sys.argv[2])
opts = json.loads(os.environ.get("LH_STORAGE_OPTIONS") or "{}")
t0 = time.perf_counter()
dt = DeltaTable(path, storage_options=opts or None)
t_open = time.perf_counter() - t0
t0 = time.perf_counter()
metrics = dt.optimize.compact(target_size=target)
secs = time.perf_counter() - t0
print(json.dumps({"tool": "python-deltalake", "seconds": secs, "open_seconds": t_open,
                  "files_removed": metrics["numFilesRemoved"], "files_added": metrics["numFilesAdded"]}), flush=True)
os._exit(0)  # the deltalake runtime can abort on interpreter teardown
