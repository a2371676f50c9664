"""Builds Delta tables of many small files for the compaction round-trip tests.

    python3 tests/py/make_tables.py KIND DEST_URI [--storage-options JSON]

KIND is one of:

* ``int96`` -- Hive-style folders ``day=YYYY-MM-DD/part-NNNNN.parquet`` written by pyarrow with
  ``use_deprecated_int96_timestamps=True`` (as Spark writes by default), holding the instants
  0001-01-01 00:00:00, 1970-01-01, 2262-04-12 (past the nanosecond range), 9999-12-31
  23:59:59.999999 and ordinary ones; then made a Delta table in place with
  ``deltalake.convert_to_deltalake(..., partition_strategy="hive")``. The Delta schema that
  convert_to_deltalake declares for ``ts`` is ``timestamp_ntz`` (the files carry no time zone)
  and the table gets the ``timestampNtz`` reader/writer feature (protocol 3/7); it writes no
  min/max stats for ``ts``. With deltalake 1.6.6, ``DeltaTable.to_pyarrow_table()`` fails on
  this table (pyarrow reads INT96 as nanoseconds: "Casting from timestamp[ns] to timestamp[us]
  would lose data"), while delta-rs's own reader (QueryBuilder) and ``optimize.compact()``
  read the instants correctly; compact() rewrites ``ts`` as INT64 microseconds, values intact.
* ``partitions`` -- ``write_deltalake`` appends, partitioned by the string ``p`` whose values are
  NULL, 'null', '', 'a/b', 'k=v', 'with space', 'ünï', '%41' and 'plain', with columns of many
  types (decimals, nested struct, lists, map, binary, bool, float NaN/-0.0/inf, date,
  timestamp UTC, unicode strings) and NULLs in every column. Note: delta-rs keeps the rows
  written with p='' in their own folder ``p=`` with partitionValues {"p": ""}, apart from the
  NULL ones ({"p": null}, folder ``p=__HIVE_DEFAULT_PARTITION__``), but the Delta protocol says
  an empty partition value is null, so every reader (delta-rs too) reads both as NULL; a
  compactor may legally merge the two folders into one partition (see PARTITION_NOTE).
* ``case_mismatch`` -- Parquet files written by pyarrow whose column is named ``value`` while
  the hand-written Delta log (protocol 1/2) declares it ``Value`` -- as a case-insensitive
  engine such as Spark can leave behind. Partitioned by ``day``. Python deltalake 1.6.6 does
  not match the column: ``to_pyarrow_table()`` and QueryBuilder SQL return ``Value`` as NULL
  in every row, and ``optimize.compact()`` rewrites the files with ``Value`` all NULL -- it
  silently destroys the column (dump_rows.py's fingerprint changes; the value count drops).

Every kind writes at least 8 files per partition, each of 20..200 rows, from fixed seeds, so the
rows (not the file names or commit timestamps) are the same on every run.

Prints one JSON object: {"kind", "uri", "files", "rows", "partitions", "version", ...}.
DEST_URI may be a local path or s3://bucket/prefix (storage options as for deltalake, e.g.
'{"AWS_ENDPOINT_URL": "http://127.0.0.1:5000", "AWS_ALLOW_HTTP": "true", ...}').
"""
import argparse
import datetime as dt
import decimal
import json
import os
import random
import sys
import uuid
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

FILES_PER_PARTITION = 8

PARTITION_NOTE = (
    "delta-rs 1.6.6 writes p=NULL as partitionValues {\"p\": null} in folder p=__HIVE_DEFAULT_PARTITION__ "
    "and p='' as {\"p\": \"\"} in a separate folder 'p=', but reads both back as NULL (the protocol says "
    "an empty partition value means null): get_add_actions() and to_pyarrow_table() show None for both; "
    "'null' stays the string 'null'"
)


# ---------------------------------------------------------------- storage helpers

from lh_storage import filesystem_for  # noqa: E402  (tests/py is the script folder)


def is_remote(uri):
    return "://" in uri and not uri.startswith("file://")


# ---------------------------------------------------------------- int96

INT96_DAYS = ["2024-01-01", "2024-01-02"]
INT96_SPECIAL = [
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    dt.datetime(1, 1, 1, 0, 0, 0),
    dt.datetime(1970, 1, 1, 0, 0, 0),
    dt.datetime(2262, 4, 12, 0, 0, 0),
    dt.datetime(2262, 4, 11, 23, 47, 16, 854775),  # just past the last nanosecond instant
    dt.datetime(1677, 9, 21, 0, 12, 43, 145224),  # just before the first nanosecond instant
    dt.datetime(1582, 10, 4, 12, 0, 0),  # Julian/Gregorian switch (Spark's rebase corner)
    dt.datetime(1900, 1, 1, 0, 0, 0, 1),
]


def make_int96(dest, opts):
    if is_remote(dest):
        sys.exit("make_tables.py: kind int96 takes a local path only")
    from deltalake import DeltaTable, convert_to_deltalake
    rng = random.Random(96)
    root = os.path.abspath(dest)
    os.makedirs(root, exist_ok=False)
    schema = pa.schema([
        ("id", pa.int64()),
        ("ts", pa.timestamp("us")),
        ("reading", pa.float64()),
    ])
    next_id = 0
    files = rows = 0
    special_i = 0
    for day in INT96_DAYS:
        folder = os.path.join(root, f"day={day}")
        os.makedirs(folder)
        base = dt.datetime.fromisoformat(day)
        for n in range(FILES_PER_PARTITION + 2):
            count = rng.randint(20, 200)
            ids, tss, readings = [], [], []
            for i in range(count):
                ids.append(next_id)
                next_id += 1
                r = rng.random()
                if i == 0:
                    # every file gets one special instant, all of them appear in each day
                    tss.append(INT96_SPECIAL[special_i % len(INT96_SPECIAL)])
                    special_i += 1
                elif r < 0.05:
                    tss.append(None)
                else:
                    tss.append(base + dt.timedelta(microseconds=rng.randrange(86_400_000_000)))
                readings.append(None if rng.random() < 0.05 else round(rng.uniform(-50, 50), 3))
            t = pa.table([pa.array(ids, pa.int64()), pa.array(tss, pa.timestamp("us")),
                          pa.array(readings, pa.float64())], schema=schema)
            # store_schema=False: Spark writes no ARROW:schema, so a reader cannot take the
            # timestamp unit from it and must handle INT96 itself.
            pq.write_table(t, os.path.join(folder, f"part-{n:05d}.parquet"),
                           use_deprecated_int96_timestamps=True, store_schema=False)
            files += 1
            rows += count
    from deltalake import Field, Schema
    convert_to_deltalake(root, partition_by=Schema([Field("day", "string", nullable=True)]),
                         partition_strategy="hive")
    d = DeltaTable(root)
    ts_type = [f["type"] for f in json.loads(d.schema().to_json())["fields"] if f["name"] == "ts"][0]
    return {"files": files, "rows": rows, "partitions": [f"day={x}" for x in INT96_DAYS],
            "version": d.version(), "delta_ts_type": ts_type,
            "protocol": [d.protocol().min_reader_version, d.protocol().min_writer_version]}


# ---------------------------------------------------------------- partitions

P_VALUES = [None, "null", "", "a/b", "k=v", "with space", "ünï", "%41", "plain"]
STRINGS = ["", "hello", "ünïcødé ✓", "日本語", "emoji 🦀", "tab\there", "quote\"back\\slash",
           "newline\nx", "null", "NULL", " "]
FLOATS = [float("nan"), -0.0, 0.0, float("inf"), float("-inf"), 1.5, -2.25, 1e308, 5e-324,
          0.1, 123456.789]

PART_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("p", pa.string()),
    ("dec38", pa.decimal128(38, 10)),
    ("dec10", pa.decimal128(10, 2)),
    ("nested", pa.struct([("a", pa.int32()),
                          ("b", pa.struct([("c", pa.string())]))])),
    ("ints", pa.list_(pa.int64())),
    ("tags", pa.map_(pa.string(), pa.int32())),
    ("blob", pa.binary()),
    ("flag", pa.bool_()),
    ("f64", pa.float64()),
    ("day", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")),
    ("s", pa.string()),
])

DEC38_SPECIAL = [decimal.Decimal("9999999999999999999999999999.9999999999"),
                 decimal.Decimal("-9999999999999999999999999999.9999999999"),
                 decimal.Decimal("0E-10"), decimal.Decimal("0.0000000001")]
DEC10_SPECIAL = [decimal.Decimal("99999999.99"), decimal.Decimal("-99999999.99"),
                 decimal.Decimal("0.00"), decimal.Decimal("-0.01")]


def _part_row(rng, rid, p):
    def maybe(v, rate=0.08):
        return None if rng.random() < rate else v

    k = rid % 11
    dec38 = DEC38_SPECIAL[k] if k < len(DEC38_SPECIAL) else decimal.Decimal(
        rng.randrange(-10**20, 10**20)).scaleb(-10)
    dec10 = DEC10_SPECIAL[k] if k < len(DEC10_SPECIAL) else decimal.Decimal(
        rng.randrange(-10**9, 10**9)).scaleb(-2)
    nested_kind = rng.random()
    if nested_kind < 0.08:
        nested = None
    elif nested_kind < 0.16:
        nested = {"a": None, "b": None}
    elif nested_kind < 0.24:
        nested = {"a": rng.randint(-2**31, 2**31 - 1), "b": {"c": None}}
    else:
        nested = {"a": rng.randint(-1000, 1000), "b": {"c": rng.choice(STRINGS)}}
    lk = rng.random()
    if lk < 0.08:
        ints = None
    elif lk < 0.18:
        ints = []
    else:
        ints = [rng.choice([None, rng.randint(-2**63, 2**63 - 1), rng.randint(-5, 5)])
                for _ in range(rng.randint(1, 5))]
    mk = rng.random()
    if mk < 0.08:
        tags = None
    elif mk < 0.16:
        tags = []
    else:
        keys = rng.sample(["x", "y", "z", "ü", "", "key with space"], rng.randint(1, 4))
        tags = [(kk, rng.choice([None, rng.randint(-100, 100)])) for kk in keys]
    blob = rng.choice([b"", b"\x00", b"\xff\xfe\x00\x01", bytes(rng.randrange(256) for _ in range(8))])
    ts_special = [dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
                  dt.datetime(1, 1, 1, tzinfo=dt.timezone.utc),
                  dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=dt.timezone.utc)]
    ts = ts_special[k] if k < 3 else dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(
        microseconds=rng.randrange(10**14))
    day_special = [dt.date(1970, 1, 1), dt.date(1, 1, 1), dt.date(9999, 12, 31)]
    day = day_special[k] if k < 3 else dt.date(2000, 1, 1) + dt.timedelta(days=rng.randrange(20000))
    return {
        "id": rid,
        "p": p,
        "dec38": maybe(dec38),
        "dec10": maybe(dec10),
        "nested": nested,
        "ints": ints,
        "tags": tags,
        "blob": maybe(blob),
        "flag": maybe(rng.random() < 0.5),
        "f64": maybe(FLOATS[k] if rng.random() < 0.6 else rng.uniform(-1e6, 1e6)),
        "day": maybe(day),
        "ts": maybe(ts),
        "s": maybe(rng.choice(STRINGS + [f"str-{rid}"])),
    }


def make_partitions(dest, opts):
    from deltalake import DeltaTable, write_deltalake
    rng = random.Random(4242)
    rid = 0
    rows = 0
    appends = FILES_PER_PARTITION + 2
    for _ in range(appends):
        batch = []
        for p in P_VALUES:
            for _ in range(rng.randint(20, 60)):
                batch.append(_part_row(rng, rid, p))
                rid += 1
        rng.shuffle(batch)
        t = pa.Table.from_pylist(batch, schema=PART_SCHEMA)
        write_deltalake(dest, t, partition_by=["p"], mode="append",
                        storage_options=opts or None)
        rows += len(batch)
    d = DeltaTable(dest, storage_options=opts or None)
    adds = pa.table(d.get_add_actions(flatten=True))
    parts = sorted({json.dumps(v, ensure_ascii=False)
                    for v in adds.column("partition.p").to_pylist()})
    dirs = sorted({unquote(path.split("/")[0])
                   for path in adds.column("path").to_pylist()})
    return {"files": adds.num_rows, "rows": rows,
            "partitions": [json.loads(x) for x in parts],
            "partition_dirs": dirs,
            "partition_values_written": P_VALUES,
            "version": d.version(), "note": PARTITION_NOTE}


# ---------------------------------------------------------------- case_mismatch

CASE_DAYS = ["2024-03-01", "2024-03-02"]


def make_case_mismatch(dest, opts):
    from pyarrow import fs as pafs
    fs, root = filesystem_for(dest, opts)
    rng = random.Random(1234)
    uid = random.Random(99)
    if isinstance(fs, pafs.LocalFileSystem):
        if os.path.exists(root):
            sys.exit(f"make_tables.py: {root} exists")
    fs.create_dir(root, recursive=True)
    phys = pa.schema([("id", pa.int64()), ("value", pa.float64()), ("label", pa.string())])
    adds = []
    rows = 0
    next_id = 0
    base_ms = 1709251200000
    for day in CASE_DAYS:
        fs.create_dir(f"{root}/day={day}", recursive=True)
        for n in range(FILES_PER_PARTITION + 2):
            count = rng.randint(20, 200)
            ids = list(range(next_id, next_id + count))
            next_id += count
            vals = [None if rng.random() < 0.05 else round(rng.uniform(-1000, 1000), 4)
                    for _ in ids]
            labels = [None if rng.random() < 0.05 else rng.choice(STRINGS) for _ in ids]
            t = pa.table([pa.array(ids, pa.int64()), pa.array(vals, pa.float64()),
                          pa.array(labels, pa.string())], schema=phys)
            name = f"part-{n:05d}-{uuid.UUID(int=uid.getrandbits(128), version=4)}.c000.snappy.parquet"
            rel = f"day={day}/{name}"
            with fs.open_output_stream(f"{root}/{rel}") as out:
                pq.write_table(t, out, compression="snappy")
            size = fs.get_file_info(f"{root}/{rel}").size
            stats = {"numRecords": count,
                     "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)},
                     "nullCount": {"id": 0}}
            adds.append({"add": {"path": rel, "partitionValues": {"day": day}, "size": size,
                                 "modificationTime": base_ms + len(adds) * 1000,
                                 "dataChange": True, "stats": json.dumps(stats)}})
            rows += count
    schema_string = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "Value", "type": "double", "nullable": True, "metadata": {}},
        {"name": "label", "type": "string", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
    ]})
    actions = [
        {"commitInfo": {"timestamp": base_ms, "operation": "WRITE",
                        "operationParameters": {"mode": "Append", "partitionBy": "[\"day\"]"},
                        "engineInfo": "lakehealth-tests make_tables.py"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": str(uuid.UUID(int=uid.getrandbits(128), version=4)),
                      "format": {"provider": "parquet", "options": {}},
                      "schemaString": schema_string, "partitionColumns": ["day"],
                      "configuration": {}, "createdTime": base_ms}},
    ] + adds
    fs.create_dir(f"{root}/_delta_log", recursive=True)
    with fs.open_output_stream(f"{root}/_delta_log/{0:020d}.json") as out:
        out.write("".join(json.dumps(a) + "\n" for a in actions).encode())

    # How does Python deltalake read a column whose Parquet name differs only in case?
    from deltalake import DeltaTable
    d = DeltaTable(dest, storage_options=opts or None)
    try:
        t = d.to_pyarrow_table()
        v = t.column("Value")
        deltalake_read = {"rows": t.num_rows, "Value_nulls": v.null_count,
                          "Value_non_null": len(v) - v.null_count}
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        deltalake_read = {"error": f"{type(e).__name__}: {e}"[:500]}
    return {"files": len(adds), "rows": rows, "partitions": [f"day={x}" for x in CASE_DAYS],
            "version": d.version(), "deltalake_to_pyarrow": deltalake_read}


KINDS = {"int96": make_int96, "partitions": make_partitions, "case_mismatch": make_case_mismatch}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=sorted(KINDS))
    ap.add_argument("dest")
    ap.add_argument("--storage-options", default=None,
                    help="JSON object of deltalake storage options")
    a = ap.parse_args()
    opts = json.loads(a.storage_options) if a.storage_options else {}
    from deltalake import DeltaTable
    if DeltaTable.is_deltatable(a.dest, storage_options=opts or None):
        sys.exit(f"make_tables.py: a Delta table already exists at {a.dest}")
    out = KINDS[a.kind](a.dest, opts)
    print(json.dumps({"kind": a.kind, "uri": a.dest, **out}, ensure_ascii=False, default=str))


if __name__ == "__main__":
    main()
    # Python deltalake can abort at interpreter shutdown ("terminate called without an active
    # exception") after all the work is done; the result is printed, so leave without teardown.
    sys.stdout.flush()
    os._exit(0)
