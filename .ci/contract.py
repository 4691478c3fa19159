"""Helpers for the contract step of .ci/run (standard library only).

  contract.py wait URL                      wait up to 60 s for URL to answer 200
  contract.py account BASE LEVY DIR EMAIL PLAN
                                            sign up EMAIL, put the account on PLAN with LEVY (the binary) in the
                                            server's data directory DIR, log in; prints the API key and the
                                            session token, one a line
"""
import json
import os
import subprocess
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


def account(base, levy, data_dir, email, plan):
    password = "contract-check-password"
    signup = call(f"{base}/api/v1/auth/signup", {"email": email, "password": password, "agent_name": "contract-check",
                                                  "agent_work_type": "compute"})
    # The operator's command puts the account on the plan, in the server's own data directory.
    subprocess.run([levy, "accounts", "set-plan", email, plan], env={**os.environ, "LEVY_DATA_DIR": data_dir},
                   check=True, stdout=subprocess.DEVNULL)
    login = call(f"{base}/api/v1/auth/login", {"email": email, "password": password})
    print(signup["api_key"]["key"])
    print(login["session_token"])


if __name__ == "__main__":
    {"wait": wait, "account": account}[sys.argv[1]](*sys.argv[2:])
