"""Python deltalake's compaction of the same table copy (the peer), timed in-process."""
import json
import sys
import time

from deltalake import DeltaTable

path, target = sys.argv[1], int(sys.argv[2])
dt = DeltaTable(path)
t0 = time.perf_counter()
metrics = dt.optimize.compact(target_size=target)
secs = time.perf_counter() - t0
print(json.dumps({"tool": "python-deltalake", "seconds": secs, "files_removed": metrics["numFilesRemoved"],
                  "files_added": metrics["numFilesAdded"]}))
