"""p50/p99 of the streaming writer's commit latency from `lakehealth stream` JSON lines,
optionally only for commits that landed inside a time window [from_ms, to_ms], or inside
either of two windows [a, b] and [c, d] (4 bounds)."""
import json
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
if len(sys.argv) >= 4:
    bounds = [int(x) for x in sys.argv[2:]]
    windows = list(zip(bounds[0::2], bounds[1::2]))
    rows = [r for r in rows if any(lo <= r.get("committed_at_ms", 0) <= hi for lo, hi in windows)]
# Commits that also wrote a checkpoint (every 100th) are slow with or without a compaction:
# they are reported apart so that a window holding one does not decide the comparison.
checkpoints = [r["latency_ms"] for r in rows if r.get("checkpoint")]
lat = sorted(r["latency_ms"] for r in rows if not r.get("checkpoint"))
if not lat:
    print(json.dumps({"n": 0}))
    sys.exit(0)
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(json.dumps({"n": len(lat), "p50_ms": pick(0.50), "p90_ms": pick(0.90), "p95_ms": pick(0.95), "p99_ms": pick(0.99), "max_ms": lat[-1],
                  "checkpoint_commits_ms": checkpoints}))
