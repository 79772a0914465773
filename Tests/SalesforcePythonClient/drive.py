"""Drives `mbaas serve --dialect salesforce` over HTTPS with simple-salesforce (PyPI, 1.12.x), a client nobody at
MBaaSKit wrote.

The emulator's CA is trusted through the client's own `session` (a requests.Session with `verify=CA`): simple-salesforce
builds every URL as https://{instance}. Its login helper hard-wires https://{domain}.salesforce.com, so the token comes
from the emulator's token endpoint through the same session, and the client is opened with `instance_url` and
`session_id`, as its documentation allows.

Environment: MBAAS_SF_BASE_URL (https://127.0.0.1:PORT), MBAAS_SF_CA (the CA's PEM file), MBAAS_SF_CLIENT_ID,
MBAAS_SF_CLIENT_SECRET, MBAAS_SF_USERNAME, MBAAS_SF_PASSWORD, MBAAS_SF_TOKEN_LIFETIME (seconds: the emulator's access
token lifetime, short so that the expired-session step runs fast; each phase below opens a client with a new token).

Prints `ok <step>` per step and `salesforce-python-client: N passed` at the end; the first failure prints
`FAIL <step>: <why>` and exits 1.
"""
import os
import sys
import time

import requests
from simple_salesforce import Salesforce, format_soql
from simple_salesforce.exceptions import (SalesforceExpiredSession, SalesforceMalformedRequest,
                                          SalesforceResourceNotFound)

BASE = os.environ["MBAAS_SF_BASE_URL"].rstrip("/")
CA = os.environ["MBAAS_SF_CA"]
CLIENT_ID = os.environ["MBAAS_SF_CLIENT_ID"]
CLIENT_SECRET = os.environ["MBAAS_SF_CLIENT_SECRET"]
USERNAME = os.environ["MBAAS_SF_USERNAME"]
PASSWORD = os.environ["MBAAS_SF_PASSWORD"]
LIFETIME = float(os.environ["MBAAS_SF_TOKEN_LIFETIME"])
VERSION = "62.0"

passed = 0


def step(name, condition, why=""):
    global passed
    if not condition:
        print(f"FAIL {name}: {why}")
        sys.exit(1)
    passed += 1
    print(f"ok {name}")


def raises(name, exception, call, check=None):
    try:
        call()
    except exception as e:
        step(name, check is None or check(e), f"{type(e).__name__}: {getattr(e, 'content', e)}")
        return
    except Exception as e:  # another exception is a failure, named
        step(name, False, f"expected {exception.__name__}, got {type(e).__name__}: {e}")
    step(name, False, f"expected {exception.__name__}, nothing was raised")


def error_code(e):
    content = getattr(e, "content", None)
    return content[0].get("errorCode") if isinstance(content, list) and content else None


session = requests.Session()
session.verify = CA
# requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE replace the session's CA; the emulator's CA is the one to trust.
session.trust_env = False


def token(**extra):
    form = {"grant_type": "password", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
            "username": USERNAME, "password": PASSWORD}
    form.update(extra)
    return session.post(BASE + "/services/oauth2/token", data=form)


def fresh():
    """A client with a new token (tokens live MBAAS_SF_TOKEN_LIFETIME seconds)."""
    return client(token().json()["access_token"])


def client(access_token):
    return Salesforce(instance_url=BASE, session_id=access_token, session=session, version=VERSION)


# OAuth: the password grant, its errors, a refresh.
answer = token()
step("token: password grant", answer.status_code == 200, f"{answer.status_code} {answer.text}")
body = answer.json()
step("token: instance_url is the emulator's https URL", body.get("instance_url") == BASE, body.get("instance_url"))
step("token: Bearer with issued_at and signature",
     body.get("token_type") == "Bearer" and body.get("issued_at", "").isdigit() and body.get("signature"), str(body))
wrong_secret = token(client_secret="not-the-secret")
step("token: a wrong client secret is invalid_client",
     wrong_secret.status_code == 400 and wrong_secret.json().get("error") == "invalid_client", wrong_secret.text)
wrong_password = token(password="not-the-password")
step("token: a wrong password is invalid_grant",
     wrong_password.status_code == 400 and wrong_password.json().get("error") == "invalid_grant", wrong_password.text)
refreshed = session.post(BASE + "/services/oauth2/token", data={
    "grant_type": "refresh_token", "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
    "refresh_token": body.get("refresh_token", "")})
step("token: refresh_token grant", refreshed.status_code == 200 and refreshed.json().get("access_token") not in (None, body["access_token"]),
     refreshed.text)

sf = client(refreshed.json()["access_token"])
info = sf.oauth2("userinfo")
step("userinfo: the token's user", isinstance(info, dict) and info.get("preferred_username") == USERNAME, str(info))

sf = fresh()
# sObject CRUD, with a value holding quotes, a backslash and non-ASCII text.
tricky = "O'Brien \\ \"quoted\" % _ caf\u00e9"
created = sf.Account.create({"Name": tricky, "Rank": 1})
step("create: {id, success, errors}", created.get("success") is True and created.get("errors") == [] and created.get("id"), str(created))
account_id = created["id"]
record = sf.Account.get(account_id)
step("get: the record with attributes", record.get("Name") == tricky and record.get("attributes", {}).get("type") == "Account"
     and record.get("Id") == account_id, str(record))
step("update: 204", sf.Account.update(account_id, {"Rank": 2}) == 204)
step("get after update", sf.Account.get(account_id).get("Rank") == 2)
found = sf.query(format_soql("SELECT Id, Name, Rank FROM Account WHERE Name = {}", tricky))
step("query: the tricky value round-trips through SOQL quoting", found.get("totalSize") == 1 and found.get("done") is True
     and found["records"][0].get("Name") == tricky and found["records"][0].get("Rank") == 2, str(found))
step("delete: 204", sf.Account.delete(account_id) == 204)
raises("get of a deleted record raises SalesforceResourceNotFound", SalesforceResourceNotFound, lambda: sf.Account.get(account_id))
raises("a missing record raises SalesforceResourceNotFound (NOT_FOUND)", SalesforceResourceNotFound,
       lambda: sf.Account.get("001000000000000AAA"), lambda e: error_code(e) == "NOT_FOUND")
raises("a second delete raises SalesforceResourceNotFound (ENTITY_IS_DELETED)", SalesforceResourceNotFound,
       lambda: sf.Account.delete(account_id), lambda e: error_code(e) == "ENTITY_IS_DELETED")

# More than 2000 rows: created through sObject Collections (200 per call), read back with query and query_all.
ROWS = 2101
for start in range(0, ROWS, 200):
    batch = [{"attributes": {"type": "Memo__c"}, "Title__c": f"memo {n:05d}", "N__c": n} for n in range(start, min(start + 200, ROWS))]
    results = fresh().restful("composite/sobjects", method="POST", json={"allOrNone": True, "records": batch})
    if not (isinstance(results, list) and len(results) == len(batch) and all(r.get("success") for r in results)):
        step("collections: create 200 per call", False, str(results)[:500])
step("collections: created 2101 rows in calls of at most 200", True)
sf = fresh()
first = sf.query("SELECT Id, Title__c, N__c FROM Memo__c")
step("query: the first page holds 2000 rows, totalSize is all of them", first.get("totalSize") == ROWS and first.get("done") is False
     and len(first.get("records", [])) == 2000 and first.get("nextRecordsUrl", "").startswith(f"/services/data/v{VERSION}/query/"),
     {k: v for k, v in first.items() if k != "records"})
everything = sf.query_all("SELECT Id, Title__c, N__c FROM Memo__c")
ids = {r["Id"] for r in everything["records"]}
step("query_all: every row once across the pages", everything.get("totalSize") == ROWS and len(everything["records"]) == ROWS
     and len(ids) == ROWS and sorted(r["N__c"] for r in everything["records"]) == list(range(ROWS)), str(len(ids)))
count = sf.query("SELECT COUNT() FROM Memo__c WHERE N__c >= 2000")
step("query: COUNT()", count.get("totalSize") == ROWS - 2000 and count.get("records") == [], str(count))
raises("SOQL that does not parse raises SalesforceMalformedRequest (MALFORMED_QUERY)", SalesforceMalformedRequest,
       lambda: sf.query("SELEKT Id FROM Memo__c"), lambda e: error_code(e) == "MALFORMED_QUERY")

# Sessions that end: an expired token, a revoked one.
short = fresh()
short.query("SELECT COUNT() FROM Memo__c")
time.sleep(LIFETIME + 1.0)
raises("an expired token raises SalesforceExpiredSession (INVALID_SESSION_ID)", SalesforceExpiredSession,
       lambda: short.query("SELECT COUNT() FROM Memo__c"), lambda e: error_code(e) == "INVALID_SESSION_ID")
revoked_token = token().json()["access_token"]
revoked = session.post(BASE + "/services/oauth2/revoke", data={"token": revoked_token})
step("revoke: 200", revoked.status_code == 200, f"{revoked.status_code} {revoked.text}")
raises("a revoked token raises SalesforceExpiredSession", SalesforceExpiredSession,
       lambda: client(revoked_token).query("SELECT COUNT() FROM Memo__c"))

print(f"salesforce-python-client: {passed} passed")
