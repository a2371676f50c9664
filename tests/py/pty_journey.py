#!/usr/bin/env python3
"""A user journey through the real `lakehealth` binary, in a pseudo-terminal of a given size.

What it proves: at COLSxROWS, `lakehealth demo` opens on its demo table; Space marks two of the
worst partitions; `c` previews their compaction; Enter starts it; the live log shows the job's
commit while the job still runs; `q` while it runs asks before quitting; `n` keeps it running;
`q` then `y` quits with exit status 0 and the terminal restored (alternate screen left, cooked
mode back). The live log panel stays on screen beside the running job. The screen is read the
way a terminal shows it: every byte the program writes goes through the `pyte` terminal
emulator, and each step waits for texts the Rust source draws (each constant below names where).

Usage:
    python tests/py/pty_journey.py --bin target/release/lakehealth --cols 80 --rows 24 \\
        --demo-dir /tmp/x/demo [--timeout 120]

`--timeout` is the budget of the whole journey, in seconds (building the demo table takes most
of it). `--demo-dir` should be a fresh folder: like `lakehealth demo`, the journey reuses a demo
table already there. HOME and the XDG directories point into a fresh folder beside it, so the
program's logs and config stay out of the user's own.

On success stdout holds one JSON object and nothing else:
    {"cols": 80, "rows": 24, "steps": {"table": "...", ...}, "exit_code": 0}
with the screen text at each step. On failure: what was awaited and the current screen go to
stderr, the program's process group is killed, and the exit status is 1.

Requires pyte (pinned in tests/py/requirements.txt). There are no fixed sleeps: every wait is
for a condition on the screen (or the process), with the journey's deadline.
"""

import argparse
import copy
import errno
import fcntl
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

try:
    import pyte
except ImportError:  # pragma: no cover - a clear message beats a traceback
    sys.stderr.write("pty_journey.py needs pyte: pip install -r tests/py/requirements.txt\n")
    sys.exit(2)


# --- Texts the journey waits for, and where the Rust source draws them ---------------------------

# The table's name in the header's title (crates/engine/src/demo.rs DEMO_TABLE, src/tui/view/header.rs).
DEMO_TABLE = "streaming_sensor_data"
# The partitions panel's title (src/tui/view/partitions.rs draw) and its default sort, worst
# first (src/tui/view/mod.rs list_state_text: "sort: {key} {arrow}").
PARTITIONS_TITLE = "Partitions "
SORTED_BY_EXCESS = "sort: excess files"
# A partition row: the left panel's border, the mark column ("● " or "  ",
# src/tui/view/partitions.rs RowLayout::row), then the label, in full ("ingestion_date=D") or
# as its value only when the panel is narrow (LabelForm::Values).
PARTITION_ROW = re.compile(r"^│([● ]) (?:ingestion_date=)?(\d{4}-\d{2}-\d{2})\b")
# The marks panel's title (src/tui/view/jobs.rs draw_marks: " Marked ({}) · c preview ...").
MARKED = "Marked ({})"
# The preview dialog (src/tui/view/plan_dialog.rs view/draw_plan): its title, the footer once
# the plan is ready, and what it says when planning failed or found nothing.
PREVIEW_TITLE = "Compaction preview"
PREVIEW_READY = "start in the background"
PREVIEW_FAILED = "cannot plan"
PREVIEW_NOTHING = "nothing to compact"
# A job's head line in the jobs panel: " #1 running    ..." (src/tui/view/jobs.rs head_line,
# labels from src/tui/jobs.rs JobStatus::label).
JOB_STATUS = re.compile(r"#1 (queued|running|done|cancelling|cancelled|failed)\b")
JOB_ENDED = ("done", "cancelled", "failed")
# The live log panel's title (src/tui/view/live.rs draw: " Live log " then the forecast rule):
# the demo follows its table's log, and the panel must stay on screen beside a running job.
LIVE_PANEL = "┌ Live log "
# The live log's evidence of a compaction commit. The commit feed under the live panel marks
# commits that landed while the table is followed with "●" before the version and names the
# operation from commitInfo, OPTIMIZE for lakehealth's bins (src/tui/view/commits.rs cells; the
# plan says "Each bin commits on its own (OPTIMIZE, ...)"). The feed shows the newest commits
# only (one row at 80x24) and the demo's writer commits every second, so the OPTIMIZE row may
# be on top for a moment only; the header, recomputed from the same followed log, then keeps
# saying "other compactions rewrote {bytes}" ("janitor rewrote {x}x ..." for the janitor's,
# src/tui/view/header.rs log) while the compaction is in the log's window.
LIVE_OPTIMIZE_ROW = re.compile(r"●v\d+\b[^│]*\bOPTIMIZE\b")
LIVE_REWROTE = re.compile(r"\brewrote \d")
# On the shortest screens the feed keeps one row and the header's log line can give way to the
# job and the live panel (it then ends in "…"); the live panel's status names the newest
# compaction the followed log saw first (src/tui/view/live.rs status_line "compacted vN ...").
LIVE_COMPACTED = re.compile(r"● compacted v\d")
# The quit question (src/tui/view/plan_dialog.rs draw_confirm_quit), over whatever was open.
QUIT_TITLE = "Quit"
QUIT_QUESTION = "Quit? 1 job is running"
# Its keys, the box as tall as its wrapped text (plan_dialog.rs confirm): they always show.
QUIT_KEYS = "n / Esc keep running"
# The error panel (src/tui/view/overlays.rs draw_error): any error ends the journey.
ERROR_TITLE = "┌ Error "

# Keys as the terminal sends them.
SPACE, ENTER = b" ", b"\r"

# The alternate screen (DEC private mode 1049): entered by ratatui::init, left by restore.
ALT_SCREEN = 1049
LEAVE_ALT_SCREEN = b"\x1b[?1049l"

# Output quieter than this ends a burst: a frame is read whole before the screen is judged.
SETTLE_SECONDS = 0.03
# ... unless the program never pauses that long (then judge at least this often).
MAX_BURST_SECONDS = 0.5


class JourneyFailed(Exception):
    """A step did not see what it waited for; the message says what and why."""


# --- The terminal: a pty, and pyte reading everything the program writes --------------------------


class TerminalScreen(pyte.Screen):
    """A pyte screen that answers the program's queries and keeps the alternate screen apart.

    pyte only records DEC private modes, so entering the alternate screen would leave the
    stderr lines printed before the TUI started under cells the TUI never writes (ratatui only
    writes what differs from its empty first buffer). Like xterm, entering saves the cursor and
    the main screen and clears; leaving restores them.
    """

    def __init__(self, cols, rows, answer):
        super().__init__(cols, rows)
        self._answer = answer
        self._main = None
        # The alternate screen's last text, kept when the program leaves it (its last frame).
        self.last_alt_text = ""

    def write_process_input(self, data):
        # Device status and attribute reports (cursor position, DA) go back to the program.
        self._answer(data.encode())

    def set_mode(self, *modes, **kwargs):
        entering = kwargs.get("private") and ALT_SCREEN in modes and not self.in_alt_screen()
        if entering:
            self.save_cursor()
            self._main = copy.deepcopy(self.buffer)
        super().set_mode(*modes, **kwargs)
        if entering:
            self.erase_in_display(2)

    def reset_mode(self, *modes, **kwargs):
        leaving = kwargs.get("private") and ALT_SCREEN in modes and self.in_alt_screen()
        if leaving:
            self.last_alt_text = "\n".join(self.display)
        super().reset_mode(*modes, **kwargs)
        if leaving:
            self.erase_in_display(2)
            if self._main is not None:
                self.buffer.update(self._main)
                self._main = None
            self.restore_cursor()
            self.dirty.update(range(self.lines))

    def in_alt_screen(self):
        # pyte stores private modes shifted by 5 bits (pyte.modes).
        return (ALT_SCREEN << 5) in self.mode


def set_window_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _make_controlling_tty():
    # Runs in the child after setsid (start_new_session): the pty becomes its controlling
    # terminal, so /dev/tty (which crossterm asks for the size) is this pty, not ours.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProgram:
    """A program in a new session on a pty of cols x rows, its output read into a pyte screen."""

    def __init__(self, argv, cols, rows, env):
        self.cols, self.rows = cols, rows
        self.master, slave = os.openpty()
        # The size is set before the program exists, so its first frame is drawn at it.
        set_window_size(slave, rows, cols)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                start_new_session=True,
                preexec_fn=_make_controlling_tty,
                close_fds=True,
            )
        finally:
            os.close(slave)
        self.screen = TerminalScreen(cols, rows, self.send)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = bytearray()
        self.eof = False

    # Reading.

    def _read_chunk(self):
        """One read from the pty; False at its end (every slave closed: the program is gone)."""
        try:
            data = os.read(self.master, 65536)
        except OSError as e:
            if e.errno != errno.EIO:
                raise
            data = b""
        if not data:
            self.eof = True
            return False
        self.raw += data
        self.stream.feed(data)
        return True

    def _readable(self, timeout):
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        return bool(ready)

    def read_burst(self, timeout):
        """Waits up to `timeout` for output, then reads until it pauses: the screen is then a
        whole frame, not half of one. Returns whether anything was read."""
        if self.eof or not self._readable(timeout):
            return False
        if not self._read_chunk():
            return True
        started = time.monotonic()
        while time.monotonic() - started < MAX_BURST_SECONDS:
            if not self._readable(SETTLE_SECONDS) or not self._read_chunk():
                break
        return True

    def text(self):
        return "\n".join(self.screen.display)

    # Writing.

    def send(self, keys):
        """Types `keys` (bytes) into the terminal."""
        try:
            os.write(self.master, keys)
        except OSError as e:
            raise JourneyFailed(f"could not type {keys!r}: {e}") from e

    # Waiting.

    def wait_for(self, predicate, what, timeout, fail_if=None, exit_ok=False):
        """Reads until predicate(screen text) holds; returns that text.

        Fails (JourneyFailed naming `what`) when `timeout` seconds pass, when fail_if(text)
        returns a reason, or when the program ends first (unless `exit_ok`)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if predicate(text):
                return text
            reason = fail_if(text) if fail_if else None
            if reason:
                raise JourneyFailed(f"{reason} (while waiting for {what})")
            if self.eof:
                if exit_ok:
                    return text
                status = self.proc.poll()
                raise JourneyFailed(
                    f"the program ended (exit status {status}) while waiting for {what}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise JourneyFailed(f"timed out after {timeout:.0f}s waiting for {what}")
            self.read_burst(min(left, 1.0))

    def wait_exit(self, timeout):
        """Reads the program's last output, then reaps it; returns its exit status."""
        deadline = time.monotonic() + timeout
        while not self.eof:
            left = deadline - time.monotonic()
            if left <= 0:
                raise JourneyFailed(f"the program did not exit within {timeout:.0f}s")
            self.read_burst(min(left, 1.0))
        try:
            return self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired as e:
            raise JourneyFailed("the program closed its terminal but did not exit") from e

    def is_cooked(self):
        """Whether the pty is back in cooked mode (line editing and echo, as a shell wants)."""
        lflag = termios.tcgetattr(self.master)[3]
        return bool(lflag & termios.ICANON) and bool(lflag & termios.ECHO)

    def kill(self):
        """Kills the program's whole process group (its session) if it still runs."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self):
        self.kill()
        try:
            os.close(self.master)
        except OSError:
            pass


# --- Reading the screen -----------------------------------------------------------------------------


def row_cells(screen, y):
    """Row y as one string per column ("" after a wide character, which takes two)."""
    line = screen.buffer[y]
    return [line[x].data for x in range(screen.columns)]


def find_in_row(cells, text):
    """The column where `text` starts in a row of cells, or None."""
    for x in range(len(cells)):
        if "".join(cells[x:x + len(text)]).startswith(text):
            return x
    return None


def box_text(screen, title):
    """The text inside the bordered box whose top border starts with "┌ {title} ", one line
    per row, or None when no such box shows. Dialogs are drawn over panels, so the box is cut
    out by its columns rather than taken as whole screen lines."""
    top = f"┌ {title} "
    for y in range(screen.lines):
        cells = row_cells(screen, y)
        x0 = find_in_row(cells, top)
        if x0 is None:
            continue
        x1 = next((x for x in range(x0 + len(top), len(cells)) if cells[x] == "┐"), None)
        if x1 is None:
            continue
        inner = []
        for below in range(y + 1, screen.lines):
            row = row_cells(screen, below)
            if row[x0] == "└":
                break
            inner.append("".join(row[x0 + 1:x1]).rstrip())
        return "\n".join(inner)
    return None


def partition_rows(text):
    """(marked, date) of each partition row on screen, top to bottom."""
    rows = []
    for line in text.splitlines():
        m = PARTITION_ROW.match(line)
        if m:
            rows.append((m.group(1) == "●", m.group(2)))
    return rows


def marked_dates(text):
    return [date for marked, date in partition_rows(text) if marked]


def job_status(text):
    """The status label of job #1 in the jobs panel, or None when it does not show."""
    m = JOB_STATUS.search(text)
    return m.group(1) if m else None


def shows_error(text):
    if ERROR_TITLE in text:
        return "the program shows an error"
    return None


def job_ended_too_soon(text):
    """A reason to stop when job #1 ended before the journey could act on it while it runs."""
    status = job_status(text)
    if status in JOB_ENDED:
        return (f"job #1 is already {status}: it ended before a second action was possible "
                "(the journey needs it running)")
    return shows_error(text)


def live_commit_evidence(text):
    """What on screen shows the job's commit in the followed log, or None."""
    if any(LIVE_OPTIMIZE_ROW.search(line) for line in text.splitlines()):
        return "an OPTIMIZE row marked ● in the commit feed"
    if LIVE_REWROTE.search(text):
        return "the header's '... rewrote ...' from the followed log"
    if LIVE_COMPACTED.search(text):
        return "the live log's status names the compaction"
    return None


# --- The journey ------------------------------------------------------------------------------------


class Journey:
    """The steps, in order, each recording the screen it ended on."""

    def __init__(self, prog, timeout):
        self.prog = prog
        self.deadline = time.monotonic() + timeout
        self.steps = {}
        # The partitions' dates top to bottom as the table step saw them, and the two marked.
        self.partitions = []
        self.marked = []

    def left(self):
        return max(0.0, self.deadline - time.monotonic())

    def wait(self, predicate, what, fail_if=shows_error, exit_ok=False):
        return self.prog.wait_for(predicate, what, self.left(), fail_if=fail_if, exit_ok=exit_ok)

    def record(self, step, text, note=""):
        self.steps[step] = text
        log(f"{step}: ok{' (' + note + ')' if note else ''}")

    def table(self):
        """The table view on the demo table, worst partitions first."""
        def shown(text):
            return (DEMO_TABLE in text and PARTITIONS_TITLE in text
                    and len(partition_rows(text)) >= 2)
        text = self.wait(shown, f"the table view of {DEMO_TABLE} with its partitions")
        if SORTED_BY_EXCESS not in text:
            raise JourneyFailed(f"the partitions are not sorted by excess files ({SORTED_BY_EXCESS!r})")
        self.partitions = [date for _, date in partition_rows(text)]
        self.record("table", text, f"partitions {', '.join(self.partitions)}")

    def mark_two(self):
        """Space twice from the first row: the two worst partitions are marked."""
        for n in (1, 2):
            self.prog.send(SPACE)
            self.wait(lambda t, n=n: len(marked_dates(t)) == n and MARKED.format(n) in t,
                      f"{n} partition(s) marked and {MARKED.format(n)!r}")
        text = self.prog.text()
        self.marked = marked_dates(text)
        if self.marked != self.partitions[:2]:
            raise JourneyFailed(f"marked {self.marked}, not the first two rows {self.partitions[:2]}")
        for date in self.marked:
            # The marks panel names partitions in full.
            if f"ingestion_date={date}" not in text:
                raise JourneyFailed(f"the marks panel does not list ingestion_date={date}")
        self.record("marked", text, ", ".join(self.marked))

    def preview(self):
        """`c`: the compaction preview, ready to start, for the two marked partitions."""
        def failed(text):
            dialog = box_text(self.prog.screen, PREVIEW_TITLE) or ""
            for reason in (PREVIEW_FAILED, PREVIEW_NOTHING):
                if reason in dialog:
                    return f"the preview says {reason!r}"
            return shows_error(text)
        self.prog.send(b"c")
        text = self.wait(
            lambda t: PREVIEW_READY in (box_text(self.prog.screen, PREVIEW_TITLE) or ""),
            f"the {PREVIEW_TITLE!r} dialog with its plan ({PREVIEW_READY!r})", fail_if=failed)
        dialog = box_text(self.prog.screen, PREVIEW_TITLE)
        missing = [d for d in self.marked if d not in dialog]
        if missing:
            raise JourneyFailed(f"the preview does not name the marked partition(s) {missing}")
        self.record("preview", text)

    def start(self):
        """Enter: the dialog closes and job #1 runs."""
        self.prog.send(ENTER)
        text = self.wait(
            lambda t: job_status(t) == "running" and PREVIEW_TITLE not in t,
            "job #1 'running' in the jobs panel", fail_if=job_ended_too_soon)
        self.check_live_panel(text, "beside the running job")
        self.record("running", text)

    def live_commit(self):
        """The live log shows the job's commit while the job still runs."""
        text = self.wait(
            lambda t: job_status(t) == "running" and live_commit_evidence(t) is not None,
            "the live log to show job #1's OPTIMIZE commit while the job still runs",
            fail_if=job_ended_too_soon)
        self.check_live_panel(text, "when the job's commit shows")
        self.record("live_commit", text, live_commit_evidence(text))

    def check_live_panel(self, text, when):
        if LIVE_PANEL not in text:
            raise JourneyFailed(f"the live log panel ({LIVE_PANEL.strip()!r}) is not on screen {when}")

    def question(self):
        """`q` while the job runs asks first."""
        self.prog.send(b"q")
        text = self.wait(
            lambda t: QUIT_QUESTION in (box_text(self.prog.screen, QUIT_TITLE) or ""),
            f"the quit question {QUIT_QUESTION!r} in a {QUIT_TITLE!r} box", exit_ok=True)
        if self.prog.eof:
            status = job_status(self.prog.screen.last_alt_text)
            if status in JOB_ENDED:
                raise JourneyFailed(f"q quit at once: job #1 was {status} before q, so it ended "
                                    "before a second action was possible")
            raise JourneyFailed(f"q quit without asking while job #1 was {status}")
        box = box_text(self.prog.screen, QUIT_TITLE) or ""
        if QUIT_KEYS not in " ".join(box.split()):
            raise JourneyFailed(f"the quit question does not show its keys ({QUIT_KEYS!r}): {box!r}")
        self.record("question", text)

    def keep(self):
        """`n` keeps the job: the question closes, the job is still listed, nothing quits."""
        self.prog.send(b"n")
        text = self.wait(
            lambda t: QUIT_QUESTION not in t and job_status(t) is not None,
            "the question gone and job #1 still in the jobs panel")
        if self.prog.proc.poll() is not None:
            raise JourneyFailed("the program quit although the question was answered n")
        self.record("kept", text, f"job #1 {job_status(text)}")

    def quit(self):
        """`q` then `y`: the job is cancelled, the program exits 0 and restores the terminal.
        (If the job ended meanwhile, `q` quits at once without asking.)"""
        self.prog.send(b"q")
        self.wait(lambda t: QUIT_QUESTION in t, "the quit question again, or the exit",
                  exit_ok=True)
        if not self.prog.eof:
            self.prog.send(b"y")
        code = self.prog.wait_exit(self.left())
        if code != 0:
            raise JourneyFailed(f"the program exited with status {code}")
        self.check_restored()
        log(f"quit: ok (exit status {code}, terminal restored)")
        return code

    def check_restored(self):
        if LEAVE_ALT_SCREEN not in self.prog.raw or self.prog.screen.in_alt_screen():
            raise JourneyFailed("the program did not leave the alternate screen")
        if not self.prog.is_cooked():
            raise JourneyFailed("the terminal was left in raw mode")

    def run(self):
        self.table()
        # The TUI's terminal state, so that finding it restored at the end means something.
        if not self.prog.screen.in_alt_screen():
            raise JourneyFailed("the TUI does not draw on the alternate screen")
        if self.prog.is_cooked():
            raise JourneyFailed("the TUI runs with the terminal in cooked mode, not raw")
        self.mark_two()
        self.preview()
        self.start()
        self.live_commit()
        self.question()
        self.keep()
        return self.quit()


# --- Running it ---------------------------------------------------------------------------------------


def log(message):
    # Progress goes to stderr: stdout holds the JSON result only.
    sys.stderr.write(f"pty_journey: {message}\n")
    sys.stderr.flush()


def program_env(home):
    """The environment: TERM set, HOME and XDG dirs inside `home`, no inherited lakehealth
    settings or terminal size overrides."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LAKEHEALTH_") and k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    env["HOME"] = home
    for var, sub in (("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                     ("XDG_CONFIG_HOME", "config"), ("XDG_CACHE_HOME", "cache")):
        path = os.path.join(home, sub)
        os.makedirs(path, exist_ok=True)
        env[var] = path
    return env


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", required=True, help="the lakehealth binary")
    p.add_argument("--cols", type=int, required=True)
    p.add_argument("--rows", type=int, required=True)
    p.add_argument("--demo-dir", required=True, help="folder for the demo table")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds for the whole journey (default 120)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    demo_dir = os.path.abspath(args.demo_dir)
    parent = os.path.dirname(demo_dir)
    os.makedirs(parent, exist_ok=True)
    home = tempfile.mkdtemp(prefix="pty-journey-home-", dir=parent)
    # SIGTERM unwinds like Ctrl-C, so the program's group is killed on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        prog = PtyProgram([args.bin, "demo", "--dir", demo_dir], args.cols, args.rows,
                          program_env(home))
    except OSError as e:
        sys.stderr.write(f"pty_journey: FAILED: cannot start {args.bin}: {e}\n")
        return 1
    journey = Journey(prog, args.timeout)
    try:
        code = journey.run()
    except JourneyFailed as e:
        sys.stderr.write(f"pty_journey: FAILED at {args.cols}x{args.rows}: {e}\n")
        sys.stderr.write(f"pty_journey: steps passed: {', '.join(journey.steps) or 'none'}; "
                         f"logs under {home}\n--- screen ---\n{prog.text()}\n--- end ---\n")
        return 1
    finally:
        prog.close()
    print(json.dumps({"cols": args.cols, "rows": args.rows, "steps": journey.steps,
                      "exit_code": code}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
