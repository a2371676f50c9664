"""Independent reader for the end-to-end tests: lists the table's active files with Python
deltalake, reads each Parquet file with pyarrow (not through lakehealth), and prints one JSON
object: rows, distinct event ids, the sum of `reading`, files per partition, the active files'
paths (relative to the table root), and the dataChange flags of every OPTIMIZE commit found in
the JSON log.

    python tests/py/verify_table.py PATH_OR_URI [--storage-options JSON]

PATH_OR_URI is a local path, file:// or s3://bucket/prefix; for s3 the storage options are the
ones Python deltalake takes (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_REGION, AWS_ALLOW_HTTP, ...); the Parquet files and the log are then read with pyarrow's
S3FileSystem configured from the same options. (A JSON object as the second positional argument
is accepted too.)
"""
import argparse
import json
import os
import re
import sys
from collections import Counter
from urllib.parse import unquote, urlparse

import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from deltalake import DeltaTable

ap = argparse.ArgumentParser()
ap.add_argument("path")
ap.add_argument("options", nargs="?", default=None)
ap.add_argument("--storage-options", dest="storage_options", default=None)
args = ap.parse_args()
raw_opts = args.storage_options or args.options
opts = json.loads(raw_opts) if raw_opts else {}
path = args.path


def option(*names, default=None):
    for n in names:
        for k, v in opts.items():
            if k.lower() == n.lower():
                return v
    return default


if path.startswith("s3://") or path.startswith("s3a://"):
    endpoint = option("AWS_ENDPOINT_URL", "aws_endpoint", "endpoint")
    kwargs = dict(
        access_key=option("AWS_ACCESS_KEY_ID", "aws_access_key_id"),
        secret_key=option("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
        region=option("AWS_REGION", "aws_region", "region", default="us-east-1"),
    )
    if endpoint:
        u = urlparse(endpoint)
        kwargs["endpoint_override"] = u.netloc
        kwargs["scheme"] = u.scheme or "https"
    fs = pafs.S3FileSystem(**kwargs)
    root = path.split("://", 1)[1].rstrip("/")
else:
    fs = pafs.LocalFileSystem()
    root = path[len("file://"):] if path.startswith("file://") else path
    root = os.path.realpath(root).rstrip("/")


def fs_path(uri):
    """A file URI from deltalake as a path for `fs`."""
    if "://" in uri:
        uri = uri.split("://", 1)[1]
        if path.startswith("file://") or "://" not in path:
            uri = unquote(uri)
    return uri


dt = DeltaTable(path, storage_options=opts or None)
rows = 0
ids = set()
reading = 0
per_part = Counter()
paths = []
uris = dt.file_uris()
for uri in uris:
    p = fs_path(uri)
    t = pq.read_table(p, columns=["event_id", "reading"], filesystem=fs)
    rows += t.num_rows
    ids.update(t.column("event_id").to_pylist())
    s = pc.sum(t.column("reading")).as_py()
    reading += s or 0
    per_part[os.path.basename(os.path.dirname(p))] += 1
    if isinstance(fs, pafs.LocalFileSystem):
        paths.append(os.path.relpath(os.path.realpath(p), root))
    else:
        paths.append(p[len(root) + 1:] if p.startswith(root + "/") else p)

optimize = []
commit_name = re.compile(r"^\d{20}\.json$")
log_files = fs.get_file_info(pafs.FileSelector(root + "/_delta_log"))
for info in sorted(log_files, key=lambda i: i.path):
    name = os.path.basename(info.path)
    if not commit_name.match(name):
        continue
    with fs.open_input_stream(info.path) as f:
        text = f.read().decode()
    actions = [json.loads(l) for l in text.splitlines() if l.strip()]
    ops = [a["commitInfo"].get("operation") for a in actions if "commitInfo" in a]
    if "OPTIMIZE" in ops:
        flags = [a[k]["dataChange"] for a in actions for k in ("add", "remove") if k in a]
        optimize.append({"version": int(name[:20]), "data_change": flags})

print(json.dumps({
    "version": dt.version(),
    "files": len(uris),
    "rows": rows,
    "distinct_ids": len(ids),
    "reading_sum": reading,
    "files_per_partition": per_part,
    "paths": sorted(paths),
    "optimize_commits": optimize,
}))
# Python deltalake can abort at interpreter shutdown after the work is done: leave at once.
sys.stdout.flush()
os._exit(0)
