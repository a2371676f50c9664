"""A tiny Iceberg REST catalog on loopback, over pyiceberg's SQL catalog (sqlite) of the tests:
enough of the REST Catalog API for lakehealth's REST commits to be tested against pyiceberg's
own commit validation (requirements checked by pyiceberg, metadata written by pyiceberg).

    python tests/py/iceberg_rest_shim.py --catalog-dir DIR

Prints the port it listens on (one line), then serves until killed:
GET /v1/config, GET /v1/namespaces, GET /v1/namespaces/{ns}/tables,
GET /v1/namespaces/{ns}/tables/{t} (metadata-location and metadata),
POST /v1/namespaces/{ns}/tables/{t} (a CommitTableRequest: 200, or 409 when a requirement
fails). Requests other than these get 404.
"""
import argparse
import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.table import CommitTableRequest

ap = argparse.ArgumentParser()
ap.add_argument("--catalog-dir", required=True)
a = ap.parse_args()
cat = SqlCatalog("lh", uri=f"sqlite:///{os.path.abspath(a.catalog_dir)}/catalog.db")


def ns_of(seg):
    return tuple(urllib.parse.unquote(seg).split("\x1f"))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def parts(self):
        return [p for p in urllib.parse.urlparse(self.path).path.split("/") if p]

    def loaded(self, t):
        return {"metadata-location": t.metadata_location,
                "metadata": json.loads(t.metadata.model_dump_json(by_alias=True))}

    def do_GET(self):
        p = self.parts()
        try:
            if p == ["v1", "config"]:
                return self.reply(200, {"defaults": {}, "overrides": {}})
            if p == ["v1", "namespaces"]:
                return self.reply(200, {"namespaces": [list(n) for n in cat.list_namespaces()]})
            if len(p) == 4 and p[:2] == ["v1", "namespaces"] and p[3] == "tables":
                ids = cat.list_tables(ns_of(p[2]))
                return self.reply(200, {"identifiers": [
                    {"namespace": list(i[:-1]), "name": i[-1]} for i in ids]})
            if len(p) == 5 and p[:2] == ["v1", "namespaces"] and p[3] == "tables":
                t = cat.load_table(ns_of(p[2]) + (urllib.parse.unquote(p[4]),))
                return self.reply(200, self.loaded(t))
        except NoSuchTableError as e:
            return self.reply(404, {"error": {"message": str(e), "type": "NoSuchTableException", "code": 404}})
        self.reply(404, {"error": {"message": "not found", "type": "NotFound", "code": 404}})

    def do_POST(self):
        p = self.parts()
        if not (len(p) == 5 and p[:2] == ["v1", "namespaces"] and p[3] == "tables"):
            return self.reply(404, {"error": {"message": "not found", "type": "NotFound", "code": 404}})
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        req = CommitTableRequest.model_validate_json(body)
        t = cat.load_table(ns_of(p[2]) + (urllib.parse.unquote(p[4]),))
        try:
            resp = cat.commit_table(t, req.requirements, req.updates)
        except CommitFailedException as e:
            return self.reply(409, {"error": {"message": str(e), "type": "CommitFailedException", "code": 409}})
        self.reply(200, {"metadata-location": resp.metadata_location,
                         "metadata": json.loads(resp.metadata.model_dump_json(by_alias=True))})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
