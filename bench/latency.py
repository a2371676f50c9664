"""p50/p99 of the streaming writer's commit latency from `lakehealth stream` JSON lines,
optionally only for commits that landed inside a time window [from_ms, to_ms]."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
if len(sys.argv) >= 4:
    lo, hi = int(sys.argv[2]), int(sys.argv[3])
    rows = [r for r in rows if lo <= r.get("committed_at_ms", 0) <= hi]
# Commits that also wrote a checkpoint (every 100th) are slow with or without a compaction:
# they are reported apart so that a window holding one does not decide the comparison.
checkpoints = [r["latency_ms"] for r in rows if r.get("checkpoint")]
lat = sorted(r["latency_ms"] for r in rows if not r.get("checkpoint"))
if not lat:
    print(json.dumps({"n": 0}))
    sys.exit(0)
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(json.dumps({"n": len(lat), "p50_ms": pick(0.50), "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": lat[-1],
                  "checkpoint_commits_ms": checkpoints}))
