#!/usr/bin/env python3
"""Whether other clients are answered while queries spend their regex budget (issue 33, point 9). Not a test.

Against a running Parse dialect (`mbaas serve 'parse+http://app:rest@127.0.0.1:0/parse' [--data FILE]`; pass its
baseURL): creates 201 records of 17 `a`s in class T, starts eight `(a|a)+c|!` queries at once (each spends the
store's budget and answers code 124), and 0.2 s later one `limit=1` query; prints how long each took.

    python3 Benchmarks/regex-contention.py http://127.0.0.1:PORT
"""

import json
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

BASE = sys.argv[1]
HEADERS = {"X-Parse-Application-Id": "app", "X-Parse-REST-API-Key": "rest", "Content-Type": "application/json"}


def request(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(BASE + path, data=data, headers=HEADERS, method=method)
    try:
        with urllib.request.urlopen(r, timeout=120) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


for _ in range(201):
    request("POST", "/parse/classes/T", {"s": "a" * 17})
slow = "/parse/classes/T?where=" + urllib.parse.quote(json.dumps({"s": {"$regex": "(a|a)+c|!"}}))
results = {}


def run_slow(i):
    start = time.time()
    status, body = request("GET", slow)
    results[i] = (status, round(time.time() - start, 2), json.loads(body).get("code"))


threads = [threading.Thread(target=run_slow, args=(i,)) for i in range(8)]
began = time.time()
for t in threads:
    t.start()
time.sleep(0.2)
start = time.time()
status, _ = request("GET", "/parse/classes/T?limit=1")
quick = round(time.time() - start, 3)
for t in threads:
    t.join()
print("slow queries (status, seconds, code):", sorted(results.values()), "all done after", round(time.time() - began, 2), "s")
print("limit=1 query during them:", status, quick, "s")
