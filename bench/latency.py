"""p50/p99 of the streaming writer's commit latency from `lakehealth stream` JSON lines."""
import json
import sys

lat = sorted(json.loads(l)["latency_ms"] for l in open(sys.argv[1]) if l.startswith("{"))
if not lat:
    print(json.dumps({"n": 0}))
    sys.exit(0)
pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
print(json.dumps({"n": len(lat), "p50_ms": pick(0.50), "p99_ms": pick(0.99), "max_ms": lat[-1]}))
