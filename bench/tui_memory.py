#!/usr/bin/env python3
"""The TUI's memory before and after two compactions of the demo (issue #29 item 10).

    python bench/tui_memory.py --bin target/release/lakehealth [--dir DIR] [--jobs 2]

Builds a fresh demo table (`demo --no-tui --reset`, a process of its own), then runs
`lakehealth demo --no-stream --dir DIR` on it in a pseudo-terminal of 120x40 (the journey's
machinery, tests/py/pty_journey.py, reads the screen through pyte), waits for the table view,
reads the process's resident memory (VmRSS in /proc/PID/status), then compacts the worst
partition N times in turn (Space, c, Enter, until "#k done" and the table reloaded), reading the
memory after each job once it stops falling. Prints one JSON object: rss_before, rss_after (one
per job, bytes) and the ratio of the last to the first; the same of the anonymous memory (what
the program holds, without the executable's pages the jobs touched). No writer runs (`--no-stream`), so
what is measured is what the TUI holds. Needs pyte (tests/py/requirements.txt).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
from pty_journey import PtyProgram, program_env  # noqa: E402

SIZE = (120, 40)


def rss(pid):
    """(resident, of it anonymous) bytes: VmRSS and RssAnon of /proc/PID/status. The rest is
    the executable's pages the work touched (file-backed, given back under pressure)."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon"):
                out[key] = int(line.split()[1]) * 1024
    return out["VmRSS"], out["RssAnon"]


def settled_rss(prog, seconds=15.0):
    """The resident memory once it stops falling (the allocator gives memory back within a
    second or two), reading the terminal meanwhile so the program never blocks on it."""
    low = rss(prog.proc.pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        prog.read_burst(0.5)
        low = min(low, rss(prog.proc.pid))
    return low


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--dir", default=None, help="demo folder (default: a new temp folder)")
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    base = a.dir or tempfile.mkdtemp(prefix="lh-tui-memory-")
    os.makedirs(base, exist_ok=True)
    home = tempfile.mkdtemp(prefix="home-", dir=base)
    demo = os.path.join(base, "demo")
    env = program_env(home)
    # Built by a process of its own, so the TUI's memory is the TUI's, not the build's.
    subprocess.run([a.bin, "demo", "--no-tui", "--reset", "--dir", demo], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    prog = PtyProgram([a.bin, "demo", "--no-stream", "--dir", demo], SIZE[0], SIZE[1], env)
    try:
        prog.wait_for(lambda t: "Partitions " in t and "ingestion_date" in t, "the table view", 300)
        before = settled_rss(prog)
        after = []
        for k in range(1, a.jobs + 1):
            # The worst partition is on top (sorted by excess files): mark it, preview, start.
            prog.send(b"g")
            prog.send(b" ")
            prog.wait_for(lambda t: "Marked (1)" in t, "a mark", 30)
            prog.send(b"c")
            prog.wait_for(lambda t: "start in the background" in t, "the preview", 60)
            prog.send(b"\r")
            done = re.compile(rf"#{k} done\b")
            prog.wait_for(lambda t: done.search(t) is not None, f"job #{k} done", 600)
            after.append(settled_rss(prog))
        print(json.dumps({
            "rss_before": before[0],
            "rss_after": [r for r, _ in after],
            "ratio": round(after[-1][0] / before[0], 3),
            "anon_before": before[1],
            "anon_after": [a for _, a in after],
            "anon_ratio": round(after[-1][1] / before[1], 3),
        }))
    finally:
        prog.send(b"q")
        prog.close()


if __name__ == "__main__":
    main()
