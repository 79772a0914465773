#!/usr/bin/env python3
"""The plain-script baseline of `mbaas bench local`.

What a competent developer would write with nothing but Python's standard library (sqlite3 + json) to do the
same work as the Local backend benchmark, on the same table shape:

- insert: `--records` records with the benchmark's fields (title, money, score, flag, tags, due as the neutral
  `{"__type":"Date","iso":...}` form), printed with json.dumps (sorted keys, compact), in transactions of
  `--chunk-size` rows, each with a random 16-character id and millisecond timestamps;
- query: every record with `money >= 100`, sorted by money descending then title, in keyset pages of
  `--page-size` (an expression index on `(class, json_extract(fields, '$."money"'))` exists, as on the Swift side),
  each row's fields decoded with json.loads;
- get: `--gets` point reads by id (drawn at random from the stored ids, repeating when above --records), fields
  decoded with json.loads.

The database is opened in WAL mode with synchronous=NORMAL, as the Local backend does. The result is one JSON
object on stdout: records per second for each workload, the match count and the interpreter/SQLite versions.
Run by `mbaas bench local` as a child process (`python3 Benchmarks/local_baseline.py ...`); not a test.
"""

import argparse
import datetime
import json
import os
import random
import sqlite3
import string
import sys
import tempfile
import time

SCHEMA = """
CREATE TABLE records (
    seq INTEGER PRIMARY KEY,
    class TEXT NOT NULL,
    id TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    acl TEXT,
    fields TEXT NOT NULL
);
CREATE UNIQUE INDEX records_class_id ON records(class, id);
CREATE INDEX records_class_seq ON records(class, seq);
CREATE INDEX records_idx_money ON records(class, json_extract(fields, '$."money"'));
"""

ALPHABET = string.ascii_letters + string.digits
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def iso(seconds):
    d = EPOCH + datetime.timedelta(seconds=seconds)
    return d.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (d.microsecond // 1000)


def fields(i):
    """The same deterministic fields as LocalBenchmark.fields(_:)."""
    return {
        "title": "item-%06d" % ((i * 7919) % 1_000_003),
        "money": (i * 7919) % 1000,
        "score": (i % 97) / 7,
        "flag": i % 2 == 0,
        "tags": ["t%d" % (i % 5), "u%d" % (i % 7)],
        "due": {"__type": "Date", "iso": iso(1_700_000_000 + i * 60)},
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--chunk-size", type=int, default=500)
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--gets", type=int, default=5_000)
    parser.add_argument("--dir", default=None, help="directory for the database (default: a temporary one)")
    args = parser.parse_args()

    directory = args.dir or tempfile.mkdtemp(prefix="mbaas-bench-py-")
    path = os.path.join(directory, "script.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)

    inputs = [fields(i) for i in range(args.records)]

    # insert
    start = time.perf_counter()
    for s in range(0, len(inputs), args.chunk_size):
        now = int(time.time() * 1000)
        rows = [
            ("Bench", "".join(random.choices(ALPHABET, k=16)), now, now, 1, None,
             json.dumps(f, sort_keys=True, separators=(",", ":")))
            for f in inputs[s:s + args.chunk_size]
        ]
        db.execute("BEGIN")
        db.executemany(
            "INSERT INTO records(class, id, created_at, updated_at, version, acl, fields) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows)
        db.execute("COMMIT")
    insert_seconds = time.perf_counter() - start

    # query: keyset pages on (money DESC, title ASC, seq ASC)
    money = "json_extract(fields, '$.\"money\"')"
    title = "json_extract(fields, '$.\"title\"')"
    base = ("SELECT seq, id, created_at, updated_at, version, acl, fields, %s, %s FROM records "
            "WHERE class = 'Bench' AND %s >= 100" % (money, title, money))
    order = " ORDER BY %s DESC, %s ASC, seq ASC LIMIT ?" % (money, title)
    after = (" AND %s <= ? AND (%s < ? OR (%s = ? AND (%s > ? OR (%s = ? AND seq > ?))))"
             % (money, money, money, title, title))
    matches = 0
    last = None
    start = time.perf_counter()
    while True:
        if last is None:
            cursor = db.execute(base + order, (args.page_size,))
        else:
            m, t, s = last
            cursor = db.execute(base + after + order, (m, m, m, t, t, s, args.page_size))
        page = []
        for row in cursor:
            record = json.loads(row[6])
            record["id"] = row[1]
            page.append((row[7], row[8], row[0], record))
        matches += len(page)
        if len(page) < args.page_size:
            break
        last = page[-1][:3]
    query_seconds = time.perf_counter() - start

    # get
    ids = [r[0] for r in db.execute("SELECT id FROM records WHERE class = 'Bench'")]
    rng = random.Random(12345)
    sample = [ids[rng.randrange(len(ids))] for _ in range(args.gets)]
    start = time.perf_counter()
    for record_id in sample:
        row = db.execute(
            "SELECT seq, id, created_at, updated_at, version, acl, fields FROM records WHERE class = ? AND id = ?",
            ("Bench", record_id)).fetchone()
        record = json.loads(row[6])
        record["id"] = row[1]
    get_seconds = time.perf_counter() - start

    db.close()
    if args.dir is None:
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
        os.rmdir(directory)

    json.dump({
        "insert": args.records / insert_seconds,
        "query": matches / query_seconds,
        "get": len(sample) / get_seconds,
        "matches": matches,
        "gets": len(sample),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
