"""A stand-in for the Stripe endpoints an MPP Stripe charge touches, on loopback, for the API tests.

- POST /v1/test_helpers/shared_payment/granted_tokens (form: payment_method, usage_limits[currency],
  usage_limits[max_amount], usage_limits[expires_at], seller_details[network_id]): grants a Shared Payment Token
  (`spt_…`), as Stripe's test helper does for a seller testing SPTs.
- POST /v1/payment_intents (form, HTTP Basic with the secret key given on the command line, Idempotency-Key):
  creates and confirms a PaymentIntent with `shared_payment_granted_token`. It checks the token's usage limits
  (currency, max_amount, expiry, network), single use, and the payment method: `pm_card_chargeDeclined` is declined
  with 402 `card_declined` (as Stripe's test card of that name is), `pm_card_authenticationRequired` leaves the
  intent in `requires_action`. A repeated Idempotency-Key answers the stored response with
  `Idempotent-Replayed: true`, as Stripe does.
- GET /intents lists the PaymentIntents created (succeeded or not); GET /calls counts the POSTs to payment_intents.

Plain HTTP on 127.0.0.1 only (tests; Stripe is reached over TLS). Prints the port it listens on, then serves
until killed. Usage: stripe.py <secret key> <network id>
"""

import base64
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

SECRET_KEY, NETWORK_ID = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
COUNTER = itertools.count(1)
TOKENS = {}
INTENTS = []
IDEMPOTENT = {}
CALLS = {"payment_intents": 0}


def error(status, kind, code, message, decline_code=None):
    body = {"error": {"type": kind, "code": code, "message": message}}
    if decline_code:
        body["error"]["decline_code"] = decline_code
    return status, body


def create_intent(form):
    spt = form.get("shared_payment_granted_token", "")
    token = TOKENS.get(spt)
    if token is None:
        return error(400, "invalid_request_error", "resource_missing", f"No such shared payment granted token: '{spt}'")
    if token["used"]:
        return error(400, "invalid_request_error", "shared_payment_granted_token_used", "This token has already been used.")
    amount, currency = int(form.get("amount", "0")), form.get("currency", "")
    limits = token["usage_limits"]
    if currency != limits["currency"] or amount > int(limits["max_amount"]):
        return error(400, "invalid_request_error", "shared_payment_granted_token_usage_limit_exceeded",
                     "The amount or currency exceeds the token's usage limits.")
    if int(limits["expires_at"]) < int(time.time()):
        return error(400, "invalid_request_error", "shared_payment_granted_token_expired", "This token has expired.")
    if form.get("confirm") != "true" or not form.get("payment_method_types[0]"):
        return error(400, "invalid_request_error", "parameter_missing", "confirm and payment_method_types are required.")
    token["used"] = True
    intent = {
        "id": f"pi_standin{next(COUNTER):06d}",
        "object": "payment_intent",
        "amount": amount,
        "currency": currency,
        "metadata": {k[len("metadata["):-1]: v for k, v in form.items() if k.startswith("metadata[")},
        "payment_method": token["payment_method"],
    }
    if token["payment_method"] == "pm_card_chargeDeclined":
        intent["status"] = "requires_payment_method"
        INTENTS.append(intent)
        return error(402, "card_error", "card_declined", "Your card was declined.", "generic_decline")
    intent["status"] = "requires_action" if token["payment_method"] == "pm_card_authenticationRequired" else "succeeded"
    INTENTS.append(intent)
    return 200, intent


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def answer(self, status, value, replayed=False) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if replayed:
            self.send_header("Idempotent-Replayed", "true")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        with LOCK:
            self.answer(200, INTENTS if self.path == "/intents" else CALLS)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        form = dict(parse_qsl(raw, keep_blank_values=True))
        if self.path == "/v1/test_helpers/shared_payment/granted_tokens":
            with LOCK:
                spt = f"spt_standin{next(COUNTER):06d}"
                TOKENS[spt] = {
                    "payment_method": form["payment_method"],
                    "usage_limits": {
                        "currency": form["usage_limits[currency]"],
                        "max_amount": form["usage_limits[max_amount]"],
                        "expires_at": form["usage_limits[expires_at]"],
                    },
                    "network_id": form.get("seller_details[network_id]"),
                    "used": False,
                }
            self.answer(200, {"id": spt, "object": "shared_payment.granted_token"})
            return
        if self.path != "/v1/payment_intents":
            self.answer(404, {"error": {"type": "invalid_request_error", "message": "Unrecognized request URL"}})
            return
        expected = "Basic " + base64.b64encode(f"{SECRET_KEY}:".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.answer(401, {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}})
            return
        key = self.headers.get("Idempotency-Key")
        with LOCK:
            CALLS["payment_intents"] += 1
            if key in IDEMPOTENT:
                status, body = IDEMPOTENT[key]
                self.answer(status, body, replayed=True)
                return
            status, body = create_intent(form)
            if key:
                IDEMPOTENT[key] = (status, body)
        self.answer(status, body)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
