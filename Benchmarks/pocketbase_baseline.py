#!/usr/bin/env python3
"""A plain-script PocketBase loader: what PocketBase itself sustains, with no MBaaSKit code on the path.

Posts `/api/batch` requests of `--batch` creates from `--threads` threads (Python's standard library only:
urllib + json + threads) into fresh collections, as a superuser, and prints one line per collection kind:

- plain: four plain fields (title, money, comment, sourceObjectId);
- acl: the same plus what a migrated record carries on PocketBase (the adapter's ACL JSON and flags, a writers
  relation and an author relation to users, filled in);
- managed-shape: a collection created with exactly the definition of an existing collection the adapter created
  (`--like NAME`, e.g. a `Direct…` collection left by `mbaas bench migrate`), filled with the plain fields;
- same-content: with `--same-as NAME` (a `Bench…` collection a migration filled, e.g. by `mbaas bench migrate`), the
  first `--records` records of that collection exactly as stored (every column, the id included), read first and
  untimed, then posted into a collection with the same definition: the floor for writing what the migration wrote.

Each line gives records per second overall and the mean batch latency per quarter of the run, so a cost that grows
with the collection's size shows. Reads the server and superuser from `MBAAS_POCKETBASE_URL`
(`eval "$(.ci/pocketbase.sh env)"`). Not a test; it leaves its collections and users on the server.

    python3 Benchmarks/pocketbase_baseline.py --records 10000 [--like Directabcdef] [--same-as Benchabcdef]
"""

import argparse
import json
import os
import random
import string
import sys
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--like", help="copy this collection's definition for the managed-shape run")
    ap.add_argument("--same-as", help="copy this collection's definition and records for the same-content run")
    ap.add_argument("--only-same", action="store_true", help="only the same-content run")
    args = ap.parse_args()

    url = os.environ.get("MBAAS_POCKETBASE_URL")
    if not url:
        sys.exit("MBAAS_POCKETBASE_URL is not set (eval \"$(.ci/pocketbase.sh env)\")")
    rest = url.split("//", 1)[1]
    cred, host = rest.rsplit("@", 1)
    email, password = (urllib.parse.unquote(p) for p in cred.split(":", 1))
    base = "http://" + host

    def call(method, path, body=None, token=None):
        request = urllib.request.Request(base + path, method=method,
                                         data=json.dumps(body).encode() if body is not None else None)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", token)
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read() or b"null")

    token = call("POST", "/api/collections/_superusers/auth-with-password",
                 {"identity": email, "password": password})["token"]
    run = "".join(random.choice(string.ascii_lowercase) for _ in range(6))
    users_id = call("GET", "/api/collections/users", token=token)["id"]
    user_ids = [call("POST", "/api/collections/users/records",
                     {"email": f"pb{run}{i}@example.com", "password": "baseline-1", "passwordConfirm": "baseline-1"},
                     token)["id"] for i in range(20)]

    plain_fields = [{"name": "title", "type": "text"}, {"name": "money", "type": "number"},
                    {"name": "comment", "type": "text"}, {"name": "sourceObjectId", "type": "text"}]
    acl_fields = [{"name": "mbaas_acl", "type": "json", "maxSize": 1 << 20},
                  {"name": "mbaas_public_read", "type": "bool"}, {"name": "mbaas_public_write", "type": "bool"},
                  {"name": "mbaas_readers", "type": "relation", "collectionId": users_id, "maxSelect": 1000},
                  {"name": "mbaas_writers", "type": "relation", "collectionId": users_id, "maxSelect": 1000},
                  {"name": "author", "type": "relation", "collectionId": users_id, "maxSelect": 1}]

    def body(i, with_acl):
        record = {"title": f"memo {i}", "money": i % 1000, "comment": "note " * (1 + i % 8), "sourceObjectId": f"s{i}"}
        if with_acl:
            user = user_ids[i % len(user_ids)]
            record.update({"mbaas_acl": {"*": {"read": True}, user: {"read": True, "write": True}},
                           "mbaas_public_read": True, "mbaas_public_write": False, "mbaas_readers": [],
                           "mbaas_writers": [user], "author": user})
        return record

    def load(kind, name, with_acl, bodies=None):
        count = len(bodies) if bodies is not None else args.records
        batches = count // args.batch

        def post(b):
            requests = [{"method": "POST", "url": f"/api/collections/{name}/records",
                         "body": bodies[b * args.batch + j] if bodies is not None else body(b * args.batch + j, with_acl)}
                        for j in range(args.batch)]
            started = time.time()
            call("POST", "/api/batch", {"requests": requests}, token)
            return time.time() - started

        started = time.time()
        with ThreadPoolExecutor(args.threads) as pool:
            latencies = list(pool.map(post, range(batches)))
        seconds = time.time() - started
        quarter = max(1, len(latencies) // 4)
        means = [round(1000 * sum(latencies[q * quarter:(q + 1) * quarter]) / quarter) for q in range(4)]
        print(json.dumps({"kind": kind, "collection": name, "records": batches * args.batch,
                          "recordsPerSecond": round(batches * args.batch / seconds),
                          "meanBatchMillisecondsByQuarter": means}), flush=True)

    def copy_definition(source, name, keep_id_field):
        like = call("GET", f"/api/collections/{source}", token=token)
        copy = {key: like[key] for key in ("type", "listRule", "viewRule", "createRule", "updateRule", "deleteRule")}
        # Index names are unique per server: the copy's carry its own name.
        copy["indexes"] = [index.replace(source, name) for index in like["indexes"]]
        copy["fields"] = [{k: v for k, v in f.items() if k != "id"} for f in like["fields"]
                          if keep_id_field or f["name"] != "id"]
        copy["name"] = name
        call("POST", "/api/collections", copy, token)

    if not args.only_same:
        call("POST", "/api/collections", {"name": f"baseline{run}plain", "type": "base", "fields": plain_fields}, token)
        load("plain", f"baseline{run}plain", False)
        call("POST", "/api/collections", {"name": f"baseline{run}acl", "type": "base",
                                          "fields": plain_fields + acl_fields}, token)
        load("acl", f"baseline{run}acl", True)
    if args.like and not args.only_same:
        copy_definition(args.like, f"baseline{run}shape", False)
        load("managed-shape", f"baseline{run}shape", False)
    if args.same_as:
        bodies, page = [], 1
        while len(bodies) < args.records:
            got = call("GET", f"/api/collections/{args.same_as}/records?perPage=500&page={page}&skipTotal=1"
                              f"&sort=id", token=token)["items"]
            if not got:
                break
            for item in got:
                bodies.append({k: v for k, v in item.items() if k not in ("collectionId", "collectionName", "expand")})
            page += 1
        bodies = bodies[:args.records]
        copy_definition(args.same_as, f"baseline{run}same", True)
        load("same-content", f"baseline{run}same", False, bodies)


if __name__ == "__main__":
    main()
