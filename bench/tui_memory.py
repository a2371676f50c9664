#!/usr/bin/env python3
"""The TUI's memory before and after two compactions of the demo (issue #29 item 10).

    python bench/tui_memory.py --bin target/release/lakehealth [--dir DIR] [--jobs 2]

Runs `lakehealth demo --no-stream --dir DIR` in a pseudo-terminal of 120x40 (the journey's
machinery, tests/py/pty_journey.py, reads the screen through pyte), waits for the table view,
reads the process's resident memory (VmRSS in /proc/PID/status), then compacts the worst
partition N times in turn (Space, c, Enter, until "#k done" and the table reloaded), reading the
memory after each job once it stops falling. Prints one JSON object: rss_before, rss_after (one
per job, bytes) and the ratio of the last to the first. No writer runs (`--no-stream`), so
what is measured is what the TUI holds. Needs pyte (tests/py/requirements.txt).
"""

import argparse
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "py"))
from pty_journey import PtyProgram, program_env  # noqa: E402

SIZE = (120, 40)


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def settled_rss(prog, seconds=5.0):
    """The resident memory once it stops falling (allocators give memory back over a few
    seconds), reading the terminal meanwhile so the program never blocks on it."""
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
    prog = PtyProgram([a.bin, "demo", "--no-stream", "--dir", os.path.join(base, "demo")],
                      SIZE[0], SIZE[1], program_env(home))
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
            "rss_before": before,
            "rss_after": after,
            "ratio": round(after[-1] / before, 3),
        }))
    finally:
        prog.send(b"q")
        prog.close()


if __name__ == "__main__":
    main()
