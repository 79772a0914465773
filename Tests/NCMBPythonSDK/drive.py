#!/usr/bin/env python3
"""Drive `mbaas serve --dialect ncmb` with the vendor's NCMB Python SDK (PyPI `NCMB==1.3.1`).

A client nobody at MBaaSKit wrote talks to the emulator with its own request building and its own
signatures (SignatureVersion 2, HmacSHA256). This script is MBaaSKit's own code: it only imports the SDK
and the Python standard library.

Run:
    python3 -m venv .tools/ncmb-venv && .tools/ncmb-venv/bin/pip install NCMB==1.3.1
    mbaas serve --dialect ncmb --application-key K --client-key C --port 8080 &
    MBAAS_NCMB_EMULATOR_URL=http://127.0.0.1:8080 \
    MBAAS_NCMB_APPLICATION_KEY=K MBAAS_NCMB_CLIENT_KEY=C \
        .tools/ncmb-venv/bin/python Tests/NCMBPythonSDK/drive.py

Prints `ok <step>` (or `skip <step>: <reason>`) per step and `ncmb-python-sdk: N steps passed` at the end;
on the first failure prints `FAIL <step>: <why>` to stderr and exits 1 (2 for a usage error).

How the SDK is pointed at the emulator (the SDK hard-codes `https://` + `NCMB.fqdn`, see README.md):
- `NCMB.fqdn` (class attribute) is set to the emulator's `host:port`, the natural setting: the SDK signs with it,
  and the emulator accepts a signature over the Host header's host with its port (or without it, as the Swift and
  JS SDKs sign);
- the SDK always builds `https://<fqdn>/...`; the emulator serves plain HTTP, so the instance attribute `url` of
  the client is replaced by a wrapper around the SDK's own `url()` that changes the scheme only (`https://` to the
  emulator's `http://`); host, port, paths, query strings and signatures are the SDK's own.
Two observers, which change nothing the SDK sends or reads: a urllib handler records each exchange (method,
URL, request headers, response status), and a wrapper around `NCMBRequest.fetch` keeps the JSON the SDK parsed
(the SDK turns every error body into an AttributeError, so the wire code is read from there).
Loopback is reached without any proxy from the environment, and the process runs with TZ=UTC because the SDK
sends `X-NCMB-Timestamp` as naive *local* time (no zone designator).
"""

import datetime
import json
import os
import re
import sys
import time
import urllib.parse
import urllib.request
import uuid

# The SDK sends datetime.now().isoformat() (local wall time, no offset): make local time UTC for this process.
os.environ["TZ"] = "UTC"
if hasattr(time, "tzset"):
    time.tzset()

try:
    # NCMB.Client must be imported first: the SDK's other modules import each other in a cycle.
    from NCMB.Client import NCMB
    from NCMB.NCMBRequest import NCMBRequest
except ImportError as exc:  # pragma: no cover - environment problem
    sys.stderr.write(f"FAIL setup: the NCMB SDK is not importable ({exc}); pip install NCMB==1.3.1\n")
    sys.exit(2)

SDK_VERSION = "1.3.1"
CLASS = "SDKDrive"
NCMB_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


class StepFailed(Exception):
    pass


# ---------------------------------------------------------------------------------------------------------
# Observers (record only; never alter a request or a response)

WIRE = []  # one dict per HTTP exchange: method, url, headers (as sent), status, length
PARSED = {"body": None}  # the JSON the SDK's fetch() returned for the latest call


class WireRecorder(urllib.request.BaseHandler):
    """Records every exchange urllib makes; runs before HTTPErrorProcessor so error statuses are seen too."""

    handler_order = 100

    def http_request(self, req):
        headers = dict(req.header_items())
        WIRE.append({"method": req.get_method(), "url": req.full_url, "headers": headers,
                     "status": None, "length": None})
        return req

    def http_response(self, req, resp):
        if WIRE:
            WIRE[-1]["status"] = resp.status
            WIRE[-1]["length"] = resp.headers.get("Content-Length")
        return resp

    https_request = http_request
    https_response = http_response


_sdk_fetch = NCMBRequest.fetch


def _observed_fetch(self, method, url, headers, data):
    result = _sdk_fetch(self, method, url, headers, data)
    PARSED["body"] = result
    return result


# ---------------------------------------------------------------------------------------------------------
# Helpers

passed = 0


def ok(step, note=""):
    global passed
    passed += 1
    print(f"ok {step}" + (f" ({note})" if note else ""), flush=True)


def check(cond, message):
    if not cond:
        raise StepFailed(message)


def equal(actual, expected, what):
    check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def last_exchange():
    check(WIRE, "no HTTP exchange was recorded")
    return WIRE[-1]


def header(exchange, name):
    for key, value in exchange["headers"].items():
        if key.lower() == name.lower():
            return value
    return None


def sdk_call(fn, what):
    """Runs an SDK call that must succeed; an SDK exception becomes a failure naming the wire answer."""
    PARSED["body"] = None
    before = len(WIRE)
    try:
        return fn()
    except Exception as exc:  # the SDK raises AttributeError for any error body holding "code"
        ex = WIRE[-1] if len(WIRE) > before else None
        wire = f"HTTP {ex['status']} {ex['method']} {ex['url']}" if ex else "no HTTP exchange"
        hint = ""
        body = PARSED["body"]
        if isinstance(body, dict) and body.get("code") == "E401001":
            stamp = header(ex, "X-NCMB-Timestamp") if ex else None
            hint = (f"; the emulator refused the SDK's authentication: check the keys (the SDK signed host "
                    f"{NCMB.fqdn!r} and the path with its trailing slash)")
            if stamp and not re.search(r"(Z|[+-]\d\d:?\d\d)$", stamp):
                hint += (f"; X-NCMB-Timestamp was {stamp!r}, naive local time without a zone designator "
                         "(SDK 1.3.1 sends datetime.now().isoformat()): an emulator requiring 'Z' refuses it")
        raise StepFailed(f"{what}: the SDK raised {type(exc).__name__}: {exc}; {wire}; body {body!r}{hint}")


def expect_sdk_error(fn, status, codes, what):
    """Runs an SDK call that must fail: the SDK must raise, the wire status and the error code must match."""
    PARSED["body"] = None
    before = len(WIRE)
    try:
        result = fn()
    except Exception as exc:
        raised = exc
    else:
        raise StepFailed(f"{what}: expected HTTP {status} {codes}, the SDK returned {result!r}")
    check(len(WIRE) > before, f"{what}: the SDK raised {raised!r} without sending a request")
    ex = WIRE[-1]
    body = PARSED["body"]
    code = body.get("code") if isinstance(body, dict) else None
    check(ex["status"] == status and code in codes,
          f"{what}: expected HTTP {status} with code in {codes}, got HTTP {ex['status']} body {body!r} "
          f"(SDK raised {type(raised).__name__}: {raised})")
    return raised, body


def query(ncmb, build):
    q = ncmb.Query(CLASS)
    build(q)
    return sdk_call(q.fetch_all, "query")


def get_by_id(class_name, object_id):
    return sdk_call(lambda: NCMBRequest().get(class_name, {}, object_id), f"GET {class_name}/{object_id}")


# ---------------------------------------------------------------------------------------------------------
# The drive


def main():
    base = os.environ.get("MBAAS_NCMB_EMULATOR_URL", "").strip()
    app_key = os.environ.get("MBAAS_NCMB_APPLICATION_KEY", "")
    client_key = os.environ.get("MBAAS_NCMB_CLIENT_KEY", "")
    if not base or not app_key or not client_key:
        sys.stderr.write("usage: set MBAAS_NCMB_EMULATOR_URL (e.g. http://127.0.0.1:8080), "
                         "MBAAS_NCMB_APPLICATION_KEY and MBAAS_NCMB_CLIENT_KEY\n")
        return 2
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
            or parts.query or parts.fragment:
        sys.stderr.write(f"MBAAS_NCMB_EMULATOR_URL must be scheme://host[:port], got {base!r}\n")
        return 2
    base = f"{parts.scheme}://{parts.netloc}"

    step = "setup"
    try:
        # -- setup: the SDK, its redirection, the observers -------------------------------------------
        from importlib import metadata
        version = metadata.version("NCMB")
        equal(version, SDK_VERSION, "installed NCMB SDK version (this driver relies on 1.3.1's behaviour)")

        ncmb = NCMB(app_key, client_key)
        NCMB.fqdn = parts.netloc  # host:port, what the SDK then signs as the host
        sdk_url = ncmb.url
        sdk_prefix = f"https://{NCMB.fqdn}"

        def emulator_url(class_name, queries, object_id):
            url = sdk_url(class_name, queries, object_id)
            if not url.startswith(sdk_prefix):
                raise RuntimeError(f"the SDK built {url!r}, which does not start with {sdk_prefix!r}")
            return f"{parts.scheme}://" + url[len("https://"):]  # the scheme only

        ncmb.url = emulator_url  # NCMBRequest.exec calls self.NCMB.url(...): the instance attribute wins
        NCMBRequest.fetch = _observed_fetch
        # No proxy from the environment for the emulator, plus the recorder.
        urllib.request.install_opener(urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                                  WireRecorder()))
        run = uuid.uuid4().hex[:12]
        ok(step, f"NCMB {version}, fqdn {NCMB.fqdn!r}, base {base}")

        # -- objects: create ----------------------------------------------------------------------------
        step = "object.create"
        specs = [
            ("alpha", 1, 1.5, True, ["x", "y"], {"k": "v", "depth": {"i": 1}}),
            ("beta", 2, 2.25, False, ["y"], {"k": "w"}),
            ("gamma", 3, -0.5, True, [], {}),
            ("delta", 4, 0.0, False, ["z", 1, True], {"list": [1, 2]}),
        ]
        objs = {}
        for name, n, score, flag, tags, meta in specs:
            o = ncmb.Object(CLASS)
            when = datetime.datetime(2024, 1, n, 3, 4, 5, 123000)  # the SDK sends {"__type":"Date","iso":…}
            for key, value in (("run", run), ("name", name), ("n", n), ("score", score), ("flag", flag),
                               ("tags", tags), ("meta", meta), ("when", when)):
                o.set(key, value)
            sdk_call(o.save, f"create {name}")
            ex = last_exchange()
            equal((ex["method"], ex["status"]), ("POST", 201), f"create {name}: method and status")
            check(ex["url"].startswith(base + "/2013-09-01/classes/" + CLASS),
                  f"create {name}: the SDK was not redirected (URL {ex['url']})")
            oid = o.get("objectId")
            check(isinstance(oid, str) and oid, f"create {name}: no objectId in {o.fields!r}")
            check(isinstance(o.get("createDate"), str) and NCMB_DATE.match(o.get("createDate")),
                  f"create {name}: createDate {o.get('createDate')!r} is not yyyy-MM-ddTHH:mm:ss.SSSZ")
            objs[name] = o
        check(len({o.get("objectId") for o in objs.values()}) == 4, "create: objectIds are not distinct")
        ok(step, "4 objects with string/number/bool/array/object/date fields, 201 + objectId + createDate")

        # -- objects: get by id ---------------------------------------------------------------------------
        step = "object.get"
        alpha = objs["alpha"]
        got = get_by_id(CLASS, alpha.get("objectId"))
        for key, expected in (("objectId", alpha.get("objectId")), ("run", run), ("name", "alpha"), ("n", 1),
                              ("score", 1.5), ("flag", True), ("tags", ["x", "y"]),
                              ("meta", {"k": "v", "depth": {"i": 1}}), ("createDate", alpha.get("createDate")),
                              ("when", {"__type": "Date", "iso": "2024-01-01T03:04:05.123Z"})):
            equal(got.get(key), expected, f"GET by id: field {key}")
        check(type(got.get("n")) is int and type(got.get("flag")) is bool, f"GET by id: types of n/flag {got!r}")
        ok(step)

        # -- objects: update --------------------------------------------------------------------------------
        step = "object.update"
        alpha.set("n", 10)
        alpha.set("name", "alpha2")
        sdk_call(alpha.save, "update alpha")  # PUT with every field (and createDate: the SDK does not strip it)
        ex = last_exchange()
        equal((ex["method"], ex["status"]), ("PUT", 200), "update: method and status")
        check(isinstance(alpha.get("updateDate"), str) and NCMB_DATE.match(alpha.get("updateDate")),
              f"update: updateDate {alpha.get('updateDate')!r} is not yyyy-MM-ddTHH:mm:ss.SSSZ")
        got = get_by_id(CLASS, alpha.get("objectId"))
        equal((got.get("name"), got.get("n"), got.get("tags"), got.get("createDate")),
              ("alpha2", 10, ["x", "y"], alpha.get("createDate")), "update: fields read back")
        ok(step)

        # -- queries ------------------------------------------------------------------------------------------
        def names(results):
            return sorted(o.get("name") for o in results)

        step = "query.where-equal"
        res = query(ncmb, lambda q: q.equal_to("run", run).equal_to("flag", True))
        equal(names(res), ["alpha2", "gamma"], "where run=…, flag=true")
        ok(step)

        step = "query.where-gt"
        res = query(ncmb, lambda q: q.equal_to("run", run).greater_than("n", 2))
        equal(names(res), ["alpha2", "delta", "gamma"], "where n $gt 2")
        ok(step)

        step = "query.where-in"
        res = query(ncmb, lambda q: q.equal_to("run", run).in_value("n", [2, 3]))
        equal(names(res), ["beta", "gamma"], "where n $in [2,3]")
        ok(step)

        step = "query.order-ascending"
        res = query(ncmb, lambda q: q.equal_to("run", run).order("n", False))
        equal([o.get("n") for o in res], [2, 3, 4, 10], "order=n")
        check("order=n" in last_exchange()["url"], f"order ascending sent as {last_exchange()['url']}")
        ok(step)

        step = "query.order-descending"
        res = query(ncmb, lambda q: q.equal_to("run", run).order("n"))  # the SDK's default is descending
        equal([o.get("n") for o in res], [10, 4, 3, 2], "order=-n")
        check("order=-n" in last_exchange()["url"], f"order descending sent as {last_exchange()['url']}")
        ok(step)

        step = "query.limit"
        res = query(ncmb, lambda q: q.equal_to("run", run).order("n", False).limit(2))
        equal([o.get("n") for o in res], [2, 3], "order=n limit=2")
        ok(step)

        step = "query.count"
        # The SDK has no count API; count=1 goes through its own signed GET (NCMBRequest.get), as its query would.
        q = ncmb.Query(CLASS).equal_to("run", run).limit(1)
        q.queries["count"] = 1
        raw = sdk_call(lambda: NCMBRequest().get(CLASS, q.queries), "count query")
        check("count=1" in last_exchange()["url"], f"count=1 not in {last_exchange()['url']}")
        equal(raw.get("count"), 4, "count")
        equal(len(raw.get("results", [])), 1, "results with limit=1 and count=1")
        ok(step)

        # -- objects: delete ------------------------------------------------------------------------------------
        step = "object.delete"
        delta = objs.pop("delta")
        sdk_call(delta.delete, "delete delta")
        ex = last_exchange()
        equal((ex["method"], ex["status"]), ("DELETE", 200), "delete: method and status")
        ok(step)

        step = "object.delete-gone"
        expect_sdk_error(lambda: NCMBRequest().get(CLASS, {}, delta.get("objectId")), 404, ("E404001",),
                         "GET of the deleted object")
        res = query(ncmb, lambda q: q.equal_to("run", run))
        equal(names(res), ["alpha2", "beta", "gamma"], "query after delete")
        ok(step, "404 E404001; the SDK raises AttributeError for any error body")

        # -- signatures are checked -----------------------------------------------------------------------
        step = "signature.wrong-client-key-refused"
        ncmb.clientKey = client_key + "-wrong"
        try:
            expect_sdk_error(lambda: ncmb.Query(CLASS).equal_to("run", run).fetch_all(), 401, ("E401001",),
                             "query signed with a wrong client key")
        finally:
            ncmb.clientKey = client_key
        ok(step)

        # -- users ------------------------------------------------------------------------------------------
        user_name = f"sdkdrive-{run}"
        password = f"pw-{run}-Ok1"

        step = "user.signup"
        user = ncmb.User()
        user.set("userName", user_name)
        user.set("password", password)
        sdk_call(user.save, "sign-up")
        ex = last_exchange()
        equal((ex["method"], ex["status"]), ("POST", 201), "sign-up: method and status")
        check(ex["url"].startswith(base + "/2013-09-01/users"), f"sign-up URL {ex['url']}")
        user_id = user.get("objectId")
        check(isinstance(user_id, str) and user_id, f"sign-up: no objectId in {user.fields!r}")
        check(isinstance(user.get("sessionToken"), str) and user.get("sessionToken"),
              f"sign-up: no sessionToken in {user.fields!r}")
        check(ncmb.session_token is None, "sign-up: the SDK adopted a session (1.3.1 does not)")
        ok(step)

        step = "user.login-wrong-password"
        expect_sdk_error(lambda: ncmb.User.login(user_name, password + "x"), 401, ("E401002",),
                         "log-in with a wrong password")
        check(ncmb.session_token is None, "a failed log-in left a session token")
        ok(step)

        step = "user.login"
        logged = sdk_call(lambda: ncmb.User.login(user_name, password), "log-in")
        ex = last_exchange()
        equal((ex["method"], ex["status"]), ("GET", 200), "log-in: method and status")
        check("/2013-09-01/login" in ex["url"] and "userName=" in ex["url"] and "password=" in ex["url"],
              f"log-in URL {ex['url']}")
        equal(logged.get("objectId"), user_id, "log-in: objectId")
        equal(logged.get("userName"), user_name, "log-in: userName")
        token = ncmb.session_token
        check(isinstance(token, str) and token, f"log-in: session token {token!r}")
        equal(logged.get("sessionToken"), token, "log-in: the SDK keeps the returned sessionToken")
        ok(step)

        step = "user.get-as-self"
        me = get_by_id("users", user_id)
        equal(header(last_exchange(), "X-NCMB-Apps-Session-Token"), token, "session header on the wire")
        equal((me.get("objectId"), me.get("userName")), (user_id, user_name), "GET users/{id}")
        ok(step)

        step = "user.update-as-self"
        sdk_call(lambda: NCMBRequest().put("users", {"nickname": "driver"}, user_id), "PUT users/{id}")
        equal(last_exchange()["status"], 200, "PUT users/{id} status")
        equal(get_by_id("users", user_id).get("nickname"), "driver", "nickname read back")
        ok(step)

        step = "user.update-anonymous-refused"
        ncmb.session_token = None
        try:
            PARSED["body"] = None
            before = len(WIRE)
            try:
                NCMBRequest().put("users", {"nickname": "intruder"}, user_id)
                raise StepFailed("an update of the user without its session was accepted")
            except StepFailed:
                raise
            except Exception as exc:
                check(len(WIRE) > before, f"no request was sent ({exc!r})")
                ex, body = WIRE[-1], PARSED["body"]
                check(400 <= (ex["status"] or 0) < 500 and isinstance(body, dict) and body.get("code"),
                      f"expected a 4xx error body, got HTTP {ex['status']} {body!r}")
                refused = f"HTTP {ex['status']} {body.get('code')}"
        finally:
            ncmb.session_token = token
        equal(get_by_id("users", user_id).get("nickname"), "driver", "nickname after the refused update")
        ok(step, refused)

        # -- log-out --------------------------------------------------------------------------------------------
        step = "user.logout"
        # The SDK has no log-out; GET /logout through its own signed request (with the session header).
        note = ""
        before = len(WIRE)
        try:
            NCMBRequest().get("/logout", {})
        except json.JSONDecodeError:
            # NCMBRequest parses every successful GET body as JSON; an empty 200 body makes it raise.
            check(len(WIRE) > before, "log-out: no request was sent")
            ex = last_exchange()
            check(ex["status"] == 200 and ex["length"] in ("0", None),
                  f"log-out: the SDK could not parse the answer HTTP {ex['status']} length {ex['length']}")
            note = "HTTP 200 with an empty body, which the SDK's GET parser cannot read as JSON"
        except Exception as exc:
            ex = WIRE[-1] if len(WIRE) > before else None
            raise StepFailed(f"log-out failed: {type(exc).__name__}: {exc}; "
                             f"HTTP {ex and ex['status']} body {PARSED['body']!r}")
        ex = last_exchange()
        equal((ex["method"], ex["status"]), ("GET", 200), "log-out: method and status")
        check("/2013-09-01/logout" in ex["url"], f"log-out URL {ex['url']}")
        equal(header(ex, "X-NCMB-Apps-Session-Token"), token, "log-out: session header")
        ok(step, note)

        step = "user.logout-token-revoked"
        expect_sdk_error(lambda: NCMBRequest().get("users", {}, user_id), 401, ("E401001",),
                         "a call with the logged-out token")
        ncmb.session_token = None  # the SDK never clears it itself
        equal(get_by_id("users", user_id).get("userName"), user_name, "anonymous read of the public user")
        ok(step)

        # -- cleanup ------------------------------------------------------------------------------------------
        step = "cleanup"
        for o in objs.values():
            sdk_call(o.delete, f"delete {o.get('name')}")
        q = ncmb.Query(CLASS).equal_to("run", run).limit(1)
        q.queries["count"] = 1
        equal(sdk_call(lambda: NCMBRequest().get(CLASS, q.queries), "count").get("count"), 0, "count after cleanup")
        ok(step)

    except StepFailed as exc:
        sys.stderr.write(f"FAIL {step}: {exc}\n")
        return 1
    except Exception as exc:  # an unexpected error is a failure of the step it happened in
        sys.stderr.write(f"FAIL {step}: unexpected {type(exc).__name__}: {exc}\n")
        return 1

    print(f"ncmb-python-sdk: {passed} steps passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
