"""Independent reader: a Delta table's content as canonical rows, and their fingerprint.

    python3 tests/py/dump_rows.py URI [--storage-options JSON] [--rows]

Python deltalake is used only to list the active files (``get_add_actions(flatten=True)``: path,
record count, typed partition values) and the table schema. Each Parquet file is read directly
with pyarrow, ``coerce_int96_timestamp_unit="us"`` so that INT96 instants outside the
nanosecond range (0001-01-01, 9999-12-31 23:59:59.999999) come back as they were written;
``dt.to_pyarrow_table()`` is NOT used (it reads INT96 as nanoseconds and fails or wraps).

Columns are matched to the Delta schema by name, or by ``delta.columnMapping.physicalName``
when the table uses column mapping; a name that matches only case-insensitively (Spark is
case-insensitive) is still matched and listed in ``case_insensitive_columns``. A schema column
missing from a file reads as NULL. Partition columns come from the add actions' partition
values (typed by the table schema). delta-rs reports an empty partition value "" as NULL, as
the Delta protocol says, so '' and NULL partitions are the same value here; the string 'null'
stays distinct from NULL.

Each row becomes a canonical JSON string (keys sorted, named as in the Delta schema):
integers as JSON integers, decimals as fixed-point strings keeping their scale ("1.50"),
floats as repr() strings (so NaN, -0.0, inf, -inf are exact), timestamps as integer
microseconds since the epoch (time zone ignored; a nanosecond value that is not a whole
microsecond becomes "<n>ns"), dates as days since the epoch, binary as lowercase hex, maps as
lists of [key, value] pairs sorted by their JSON, lists and structs recursively, NULL as null.

Prints one JSON object: {"rows", "files", "fingerprint" (sha256 of the sorted row strings joined
by "\\n"), "distinct_rows", "case_insensitive_columns", "version", "rows_per_partition",
"num_records_mismatch", "deletion_vector_files"}; with --rows also "row_strings", the sorted
row strings, so a test can diff two dumps.
"""
import argparse
import hashlib
import json
import os
import sys
from collections import Counter
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import DeltaTable


# ---------------------------------------------------------------- storage

from lh_storage import filesystem_for  # noqa: E402  (tests/py is the script folder)


# ---------------------------------------------------------------- canonical values

_TS_FACTOR = {"s": 1_000_000, "ms": 1_000, "us": 1}


def _field_lookup(names, wanted):
    """Index of `wanted` in `names`: exact match first, then case-insensitive. (index, exact)."""
    if wanted in names:
        return names.index(wanted), True
    low = [n.lower() for n in names]
    if wanted.lower() in low:
        return low.index(wanted.lower()), False
    return None, False


def canon(arr, dtype=None):
    """Canonical Python values (JSON-ready) of a pyarrow Array. `dtype` is the Delta type (JSON
    form from the schema string) used only to name struct fields as the table schema does."""
    t = arr.type
    n = len(arr)
    if pa.types.is_dictionary(t):
        return canon(arr.dictionary_decode(), dtype)
    if pa.types.is_null(t):
        return [None] * n
    valid = arr.is_valid().to_pylist() if arr.null_count else [True] * n
    if pa.types.is_struct(t):
        kids = arr.flatten()  # offsets applied, parent validity merged
        names = [t.field(i).name for i in range(t.num_fields)]
        if isinstance(dtype, dict) and dtype.get("type") == "struct":
            cols = []
            for f in dtype["fields"]:
                i, _ = _field_lookup(names, f["name"])
                cols.append((f["name"], canon(kids[i], f["type"]) if i is not None else [None] * n))
        else:
            cols = [(names[i], canon(kids[i])) for i in range(len(names))]
        return [({k: v[j] for k, v in cols} if valid[j] else None) for j in range(n)]
    if pa.types.is_map(t):
        keys_t = dtype.get("keyType") if isinstance(dtype, dict) else None
        vals_t = dtype.get("valueType") if isinstance(dtype, dict) else None
        out = []
        for j in range(n):
            if not valid[j]:
                out.append(None)
                continue
            entries = arr[j].values  # StructArray<key, value> of this one map
            if entries is None or len(entries) == 0:
                out.append([])
                continue
            kv = entries.flatten()
            ks = canon(kv[0], keys_t)
            vs = canon(kv[1], vals_t)
            out.append(sorted(([k, v] for k, v in zip(ks, vs)),
                              key=lambda kv: json.dumps(kv, sort_keys=True, ensure_ascii=False)))
        return out
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or getattr(pa.types, "is_list_view", lambda _: False)(t):
        elem_t = dtype.get("elementType") if isinstance(dtype, dict) else None
        out = []
        for j in range(n):
            if not valid[j]:
                out.append(None)
                continue
            out.append(canon(arr[j].values, elem_t))
        return out
    if pa.types.is_timestamp(t):
        raw = arr.cast(pa.int64()).to_pylist()
        if t.unit == "ns":
            return [None if v is None else (v // 1000 if v % 1000 == 0 else f"{v}ns") for v in raw]
        f = _TS_FACTOR[t.unit]
        return [None if v is None else v * f for v in raw]
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).to_pylist()
    if pa.types.is_date64(t):
        return [None if v is None else v // 86_400_000 for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_time(t) or pa.types.is_duration(t):
        return [None if v is None else f"{v}{t.unit}" for v in arr.cast(pa.int64()).to_pylist()]
    if pa.types.is_floating(t):
        return [None if v is None else repr(float(v)) for v in arr.to_pylist()]
    if pa.types.is_decimal(t):
        return [None if v is None else format(v, "f") for v in arr.to_pylist()]
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or getattr(pa.types, "is_binary_view", lambda _: False)(t):
        return [None if v is None else v.hex() for v in arr.to_pylist()]
    # ints, bool, strings
    return arr.to_pylist()


def canon_column(col, dtype):
    """Canonical values of a ChunkedArray or Array."""
    if isinstance(col, pa.ChunkedArray):
        out = []
        for c in col.chunks:
            out.extend(canon(c, dtype))
        return out
    return canon(col, dtype)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("uri")
    ap.add_argument("--storage-options", default=None)
    ap.add_argument("--rows", action="store_true", help="also print the sorted row strings")
    a = ap.parse_args()
    opts = json.loads(a.storage_options) if a.storage_options else {}

    dt = DeltaTable(a.uri, storage_options=opts or None)
    schema = json.loads(dt.schema().to_json())
    part_cols = list(dt.metadata().partition_columns)
    fields = schema["fields"]
    adds = pa.table(dt.get_add_actions(flatten=True))
    paths = adds.column("path").to_pylist()
    num_records = adds.column("num_records").to_pylist() if "num_records" in adds.column_names \
        else [None] * len(paths)
    dv_cols = [c for c in adds.column_names if "deletion" in c.lower()]
    dv_files = 0
    if dv_cols:
        dv_files = sum(1 for v in adds.column(dv_cols[0]).to_pylist() if v is not None)

    # typed partition values, canonicalized like data values
    part_values = {}
    for f in fields:
        if f["name"] in part_cols:
            cname = f"partition.{f['name']}"
            if cname not in adds.column_names:
                sys.exit(f"dump_rows.py: no {cname} in add actions: {adds.column_names}")
            part_values[f["name"]] = canon_column(adds.column(cname), f["type"])

    root = dt.table_uri.rstrip("/")
    fs, root_inner = filesystem_for(root, opts)

    rows = []
    case_insensitive = set()
    missing_columns = Counter()
    mismatched_counts = []
    per_part = Counter()
    for i, rel in enumerate(paths):
        if "://" in rel:  # absolute URI (e.g. a shallow clone)
            _, inner = filesystem_for(rel, opts)
        else:  # add.path is a relative, percent-encoded URI
            inner = f"{root_inner.rstrip('/')}/{unquote(rel)}"
        with fs.open_input_file(inner) as fh:
            table = pq.ParquetFile(fh, coerce_int96_timestamp_unit="us").read()
        names = table.column_names
        cols = {}
        for f in fields:
            name = f["name"]
            if name in part_cols:
                continue
            phys = (f.get("metadata") or {}).get("delta.columnMapping.physicalName", name)
            j, exact = _field_lookup(names, phys)
            if j is None:
                missing_columns[name] += 1
                cols[name] = [None] * table.num_rows
                continue
            if not exact:
                case_insensitive.add(f"{name}<-{names[j]}")
            cols[name] = canon_column(table.column(j), f["type"])
        if num_records[i] is not None and num_records[i] != table.num_rows:
            mismatched_counts.append({"path": rel, "num_records": num_records[i],
                                      "parquet_rows": table.num_rows})
        pv = {k: v[i] for k, v in part_values.items()}
        per_part[json.dumps(pv, sort_keys=True, ensure_ascii=False)] += table.num_rows
        for r in range(table.num_rows):
            row = {k: v[r] for k, v in cols.items()}
            row.update(pv)
            rows.append(json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")))

    rows.sort()
    digest = hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()
    out = {
        "uri": a.uri,
        "version": dt.version(),
        "rows": len(rows),
        "files": len(paths),
        "fingerprint": digest,
        "distinct_rows": len(set(rows)),
        "case_insensitive_columns": sorted(case_insensitive),
        "missing_columns": dict(missing_columns),
        "rows_per_partition": dict(sorted(per_part.items())),
        "num_records_mismatch": mismatched_counts,
        "deletion_vector_files": dv_files,
    }
    if a.rows:
        out["row_strings"] = rows
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
    # Python deltalake can abort at interpreter shutdown ("terminate called without an active
    # exception") after all the work is done; the result is printed, so leave without teardown.
    sys.stdout.flush()
    os._exit(0)
