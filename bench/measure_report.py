"""Runs `lakehealth report TABLE --json` (the command a user runs) as a child process and prints
one JSON line in open_1m.py's shape: wall time, the child's peak RSS, files, bytes, partitions."""
import json
import resource
import subprocess
import sys
import time

cmd = sys.argv[1:]
t0 = time.perf_counter()
done = subprocess.run(cmd, stdout=subprocess.PIPE, check=True)
secs = time.perf_counter() - t0
report = json.loads(done.stdout)
print(json.dumps({
    "tool": "lakehealth",
    "seconds": secs,
    "peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    "files": report["files"],
    "bytes": report["bytes"],
    "partitions": len(report["partitions"]),
}))
