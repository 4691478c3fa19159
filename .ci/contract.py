"""Helpers for the contract step of .ci/run (standard library only).

  contract.py wait URL                      wait up to 60 s for URL to answer 200
  contract.py account BASE DB EMAIL PLAN    sign up EMAIL, move the account to PLAN in the SQLite file DB,
                                            log in; prints the API key and the session token, one a line
"""
import json
import sqlite3
import sys
import time
import urllib.request


def call(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def wait(url):
    deadline = time.time() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.time() > deadline:
            sys.exit(f"{url} did not answer within 60 s")
        time.sleep(0.2)


def account(base, db, email, plan):
    password = "contract-check-password"
    signup = call(f"{base}/api/v1/auth/signup", {"email": email, "password": password, "agent_name": "contract-check",
                                                  "agent_work_type": "compute"})
    # No command or endpoint sets a plan yet (checkout is not built): set it in the data file, as billing would.
    with sqlite3.connect(db) as conn:
        changed = conn.execute("UPDATE entities SET plan = ? WHERE email = ?", (plan, email)).rowcount
    if changed != 1:
        sys.exit(f"expected one account {email} in {db}, updated {changed}")
    login = call(f"{base}/api/v1/auth/login", {"email": email, "password": password})
    print(signup["api_key"]["key"])
    print(login["session_token"])


if __name__ == "__main__":
    {"wait": wait, "account": account}[sys.argv[1]](*sys.argv[2:])
