"""An HTTP proxy in front of a local S3 server (moto) that adds a fixed delay to every request
and counts requests by method: object-store latency on one machine, for bench/s3.sh.
Usage: s3_delay_proxy.py LISTEN_PORT UPSTREAM_PORT DELAY_MS
GET /__proxy/stats returns the counts since the last POST /__proxy/reset (not forwarded).
PROXY_LOG=1 prints each request (start, duration, status, bytes, method, path, range) to stderr."""
import http.client
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

listen, upstream, delay = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) / 1000
counts, lock, local = {}, threading.Lock(), threading.local()
t0 = time.monotonic()
HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _own(self):
        if self.path == "/__proxy/stats":
            with lock:
                body = json.dumps(dict(counts, total=sum(counts.values()))).encode()
        elif self.path == "/__proxy/reset":
            with lock:
                counts.clear()
            body = b"{}"
        else:
            return False
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        return True

    def _forward(self):
        if self._own():
            return
        with lock:
            counts[self.command] = counts.get(self.command, 0) + 1
        started = time.monotonic()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        time.sleep(delay)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        for attempt in range(2):
            conn = getattr(local, "conn", None) or http.client.HTTPConnection("127.0.0.1", upstream, timeout=120)
            local.conn = conn
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                local.conn = None
                if attempt:
                    raise
        self.send_response(r.status, r.reason)
        for k, v in r.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        # A HEAD has no body: its Content-Length is the object's size, as the upstream says.
        length = r.getheader("Content-Length") if self.command == "HEAD" else None
        self.send_header("Content-Length", length or str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        if os.environ.get("PROXY_LOG"):
            # When it started (since the proxy's start), how long it took, what it was.
            print(f"{started - t0:8.3f}s {1000 * (time.monotonic() - started):6.0f}ms {r.status} {len(data):>10}B",
                  self.command, self.path, self.headers.get("Range", ""), file=sys.stderr, flush=True)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


ThreadingHTTPServer.daemon_threads = True
# A store accepts every connection a client opens; the default backlog (5) would queue a
# concurrent reader's requests behind each other.
ThreadingHTTPServer.request_queue_size = 256
ThreadingHTTPServer(("127.0.0.1", listen), Proxy).serve_forever()
