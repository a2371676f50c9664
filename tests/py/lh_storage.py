"""Storage for the test scripts: a pyarrow filesystem for a local path, file:// or s3:// URI,
configured from the same storage options (any key case) that lakehealth and delta-rs take."""
import os
from urllib.parse import unquote


def _opt(opts, *names):
    low = {k.lower(): v for k, v in opts.items()}
    for n in names:
        if n.lower() in low:
            return low[n.lower()]
    return None


def filesystem_for(uri, opts):
    """(pyarrow filesystem, path inside it) for a local path, file:// or s3:// URI."""
    from pyarrow import fs as pafs
    if uri.startswith("s3://") or uri.startswith("s3a://"):
        endpoint = _opt(opts, "AWS_ENDPOINT_URL", "AWS_ENDPOINT", "endpoint_url", "endpoint")
        kw = {}
        if endpoint:
            scheme = "https"
            if "://" in endpoint:
                scheme, endpoint = endpoint.split("://", 1)
            kw["endpoint_override"] = endpoint.rstrip("/")
            kw["scheme"] = scheme
        key = _opt(opts, "AWS_ACCESS_KEY_ID", "access_key_id")
        secret = _opt(opts, "AWS_SECRET_ACCESS_KEY", "secret_access_key")
        token = _opt(opts, "AWS_SESSION_TOKEN", "session_token")
        region = _opt(opts, "AWS_REGION", "AWS_DEFAULT_REGION", "region")
        if key:
            kw["access_key"] = key
            kw["secret_key"] = secret
        if token:
            kw["session_token"] = token
        if region:
            kw["region"] = region
        return pafs.S3FileSystem(**kw), uri.split("://", 1)[1].rstrip("/")
    if uri.startswith("file://"):
        uri = unquote(uri[len("file://"):])
    return pafs.LocalFileSystem(), os.path.abspath(uri)
