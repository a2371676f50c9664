"""lakehealth's Ray driver: one Ray task per bin, each running `lakehealth worker --spec` (the
same rewrite code as the local executor) on a node of the cluster. It only runs bins: the
lakehealth coordinator that submitted this job reads each bin's result from the table's
_lakehealth/jobs/ folder, validates it and commits it. Progress lines on stdout
("LAKEHEALTH_BIN {json}") are what the coordinator follows through the Jobs API's logs.

Storage credentials are never passed here: the worker reads them from the node's environment
(instance role, workload identity, or AWS_*/GOOGLE_*/AZURE_* set where Ray was started)."""

import json
import os
import subprocess
import tempfile
import time

import ray


def _binary():
    import lakehealth_worker

    path = os.path.join(os.path.dirname(lakehealth_worker.__file__), "lakehealth")
    if not os.access(path, os.X_OK):
        os.chmod(path, 0o755)
    return path


@ray.remote(num_cpus=1)
def run_bin(spec_json):
    started = time.time()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="lakehealth-bin-")
    with os.fdopen(fd, "w") as f:
        f.write(spec_json)
    try:
        # The worker watches this process: once the task is gone (a stopped job), it stops
        # and writes nothing more, even if it had not started its bin yet.
        env = dict(os.environ, LAKEHEALTH_WORKER_PARENT=str(os.getpid()))
        r = subprocess.run(
            [_binary(), "worker", "--spec", path],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        os.unlink(path)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout or "").strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"lakehealth worker exited with {r.returncode}: {tail[0][:1000]}")
    lines = (r.stdout or "").strip().splitlines()
    try:
        worker = json.loads(lines[-1]) if lines else {}
    except ValueError:
        worker = {}
    # The task's wall time beside the worker's own: the difference is the per-bin startup cost.
    return {"task_seconds": round(time.time() - started, 3), "worker_seconds": worker.get("seconds")}


def _say(bin_id, status, **extra):
    print("LAKEHEALTH_BIN " + json.dumps({"bin": bin_id, "status": status, **extra}), flush=True)


def main():
    with open("bins.json") as f:
        job = json.load(f)
    ray.init()
    task = run_bin.options(max_retries=job["max_retries"], retry_exceptions=True)
    pending = {}
    for spec in job["specs"]:
        pending[task.remote(json.dumps(spec))] = spec["bin_id"]
        _say(spec["bin_id"], "submitted")
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            bin_id = pending.pop(ref)
            try:
                _say(bin_id, "done", **ray.get(ref))
            except Exception as e:  # the task failed after its retries
                _say(bin_id, "failed", error=str(e).strip().splitlines()[-1][:1000])


main()
