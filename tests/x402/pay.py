"""Makes an x402 payment header with the x402 client library (PyPI `x402`), as a paying agent would.

Reads one JSON object on stdin: {"key": private key hex, "headers": the 402's headers, "body": the 402's body}.
Writes {"name": header name, "value": header value}: X-PAYMENT for a v1 offer (body only), PAYMENT-SIGNATURE for
a v2 one (the PAYMENT-REQUIRED header). The library signs the EIP-3009 authorization locally; no network is used.
"""

import json
import sys

from eth_account import Account
from x402 import x402ClientSync
from x402.http.x402_http_client import x402HTTPClientSync
from x402.mechanisms.evm.exact.register import register_exact_evm_client


def main() -> None:
    given = json.load(sys.stdin)
    client = register_exact_evm_client(x402ClientSync(), Account.from_key(given["key"]))
    http = x402HTTPClientSync(client)
    headers = {k.upper(): v for k, v in given.get("headers", {}).items()}
    required = http.get_payment_required_response(lambda name: headers.get(name.upper()), given.get("body"))
    payload = client.create_payment_payload(required)
    ((name, value),) = http.encode_payment_signature_header(payload).items()
    json.dump({"name": name, "value": value}, sys.stdout)


if __name__ == "__main__":
    main()
