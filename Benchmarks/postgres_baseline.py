#!/usr/bin/env python3
"""The plain-script baseline of `mbaas bench migrate --postgres URL`.

What a competent developer would write with psycopg (PyPI `psycopg`, version 3) to load an NCMB export's class into
PostgreSQL, on the same table shape as MBaaSKit's PostgreSQL backend (`records`: seq bigserial, class, id,
created_at/updated_at in milliseconds, version, acl jsonb, fields jsonb, UNIQUE (class, id), the class/seq and
class/created_at indexes and the GIN index on fields), in a schema of its own:

- read `<export>/<Class>.json` (`{"results":[...]}`) with json.load;
- per record: the id (objectId), the two dates parsed to epoch milliseconds, the ACL and the other keys as the
  fields, both printed with json.dumps;
- `executemany` of one parameterised INSERT in batches of `--batch` (500), committed per batch.

No tuning: no COPY, no unlogged table, no dropped indexes. The result is one JSON object on stdout: the records
written, the seconds the inserts took (the file read and parse included, as the migration's time includes its
reading), and the psycopg and server versions. The URL comes from an environment variable (never argv, where
other users could read its password); the schema is dropped afterwards, also after a failure. Run by `mbaas bench migrate` as a child process; not a test.
"""

import argparse
import datetime
import json
import os
import sys
import time

import psycopg

SYSTEM = {"objectId", "createDate", "updateDate", "acl"}


EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def millis(text):
    delta = datetime.datetime.fromisoformat(text.replace("Z", "+00:00")) - EPOCH
    return delta // datetime.timedelta(milliseconds=1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url-env", default="MBAAS_BASELINE_POSTGRES_URL",
                        help="the environment variable holding postgres://USER:PASSWORD@HOST:PORT/DB (kept off argv)")
    parser.add_argument("--schema", required=True)
    parser.add_argument("--export", required=True, help="the NCMB export directory")
    parser.add_argument("--class-name", default="MemoClass")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--also-drop", action="append", default=[],
                        help="another schema to drop at the end (the migration's, which ran before)")
    args = parser.parse_args()

    with psycopg.connect(os.environ[args.url_env]) as conn:
        s = args.schema
        conn.execute(f'CREATE SCHEMA "{s}"')
        conn.commit()
        try:
            written, seconds = load(conn, s, args)
            server = conn.execute("SHOW server_version").fetchone()[0]
        finally:
            conn.rollback()
            for schema in [s] + args.also_drop:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.commit()
    json.dump({"records": written, "seconds": seconds, "psycopg": psycopg.__version__, "server": server,
               "python": sys.version.split()[0]}, sys.stdout)


def load(conn, s, args):
    """Creates the table and its indexes, then times reading the export and inserting it; (records, seconds)."""
    conn.execute(f"""
        CREATE TABLE "{s}".records (
            seq bigserial PRIMARY KEY, class text NOT NULL, id text NOT NULL,
            created_at bigint NOT NULL, updated_at bigint NOT NULL, version bigint NOT NULL,
            acl jsonb, fields jsonb NOT NULL, UNIQUE (class, id))""")
    conn.execute(f'CREATE INDEX ON "{s}".records (class, seq)')
    conn.execute(f'CREATE INDEX ON "{s}".records (class, created_at)')
    conn.execute(f'CREATE INDEX ON "{s}".records USING gin (fields jsonb_path_ops)')
    conn.commit()

    start = time.perf_counter()
    with open(f"{args.export}/{args.class_name}.json", encoding="utf-8") as f:
        results = json.load(f)["results"]
    sql = (f'INSERT INTO "{s}".records (class, id, created_at, updated_at, version, acl, fields) '
           "VALUES (%s, %s, %s, %s, 1, %s, %s)")
    written = 0
    with conn.cursor() as cur:
        for i in range(0, len(results), args.batch):
            rows = []
            for r in results[i:i + args.batch]:
                fields = {k: v for k, v in r.items() if k not in SYSTEM}
                rows.append((args.class_name, r["objectId"], millis(r["createDate"]), millis(r["updateDate"]),
                             json.dumps(r.get("acl")), json.dumps(fields)))
            cur.executemany(sql, rows)
            conn.commit()
            written += len(rows)
    return written, time.perf_counter() - start


if __name__ == "__main__":
    main()
