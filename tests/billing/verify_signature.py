"""Checks Stripe-Signature headers with the official Stripe library (PyPI `stripe`), as a webhook receiver built on
it would: one JSON object per stdin line, {payload, header, secret, tolerance}; prints `ok` or `refused: <reason>`
per line, after a first line `ready`."""

import json
import sys

import stripe

print("ready", flush=True)
for line in sys.stdin:
    case = json.loads(line)
    try:
        stripe.WebhookSignature.verify_header(case["payload"], case["header"], case["secret"], tolerance=case["tolerance"])
        print("ok", flush=True)
    except stripe.SignatureVerificationError as e:
        print(f"refused: {e.user_message or e}", flush=True)
