"""A stand-in x402 facilitator on loopback for the API tests: POST /verify and /settle as the x402 specification
describes them (v1 and v2 bodies), checking the EIP-3009 authorization's EIP-712 signature with `eth-account`,
its recipient, value and validity window against the requirements, and that its nonce has not been settled.
Settling records the authorization instead of sending a transaction; GET /settlements lists what was settled and
GET /calls counts the requests. Plain HTTP on 127.0.0.1 only (tests; a real facilitator is reached over TLS).

Prints the port it listens on, then serves until killed.
"""

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from eth_account import Account
from eth_account.messages import encode_typed_data

CHAIN_IDS = {"base": 8453, "base-sepolia": 84532}
LOCK = threading.Lock()
SETTLED = []
CALLS = {"verify": 0, "settle": 0}


def chain_id(network: str) -> int:
    if network.startswith("eip155:"):
        return int(network.split(":", 1)[1])
    return CHAIN_IDS[network]


def check(body: dict) -> tuple[str | None, str]:
    """The reason the payment is invalid (None when valid) and the payer."""
    payload = body["paymentPayload"]
    req = body["paymentRequirements"]
    auth = payload["payload"]["authorization"]
    signature = payload["payload"]["signature"]
    amount = req.get("amount") or req.get("maxAmountRequired")
    typed = {
        "types": {
            "EIP712Domain": [
                {"name": "name", "type": "string"},
                {"name": "version", "type": "string"},
                {"name": "chainId", "type": "uint256"},
                {"name": "verifyingContract", "type": "address"},
            ],
            "TransferWithAuthorization": [
                {"name": "from", "type": "address"},
                {"name": "to", "type": "address"},
                {"name": "value", "type": "uint256"},
                {"name": "validAfter", "type": "uint256"},
                {"name": "validBefore", "type": "uint256"},
                {"name": "nonce", "type": "bytes32"},
            ],
        },
        "primaryType": "TransferWithAuthorization",
        "domain": {
            "name": req["extra"]["name"],
            "version": req["extra"]["version"],
            "chainId": chain_id(req["network"]),
            "verifyingContract": req["asset"],
        },
        "message": {
            "from": auth["from"],
            "to": auth["to"],
            "value": int(auth["value"]),
            "validAfter": int(auth["validAfter"]),
            "validBefore": int(auth["validBefore"]),
            "nonce": bytes.fromhex(auth["nonce"][2:]),
        },
    }
    payer = auth["from"]
    try:
        signer = Account.recover_message(encode_typed_data(full_message=typed), signature=signature)
    except Exception:  # a signature that does not recover is a bad signature
        return "invalid_exact_evm_payload_signature", payer
    if signer.lower() != payer.lower():
        return "invalid_exact_evm_payload_signature", payer
    if auth["to"].lower() != req["payTo"].lower():
        return "invalid_exact_evm_payload_recipient_mismatch", payer
    if int(auth["value"]) != int(amount):
        return "invalid_exact_evm_payload_authorization_value", payer
    now = int(time.time())
    if int(auth["validAfter"]) > now:
        return "invalid_exact_evm_payload_authorization_valid_after", payer
    if int(auth["validBefore"]) <= now:
        return "invalid_exact_evm_payload_authorization_valid_before", payer
    with LOCK:
        if any(s["payer"].lower() == payer.lower() and s["nonce"] == auth["nonce"] for s in SETTLED):
            return "invalid_transaction_state", payer
    return None, payer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass

    def answer(self, value) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        with LOCK:
            self.answer(SETTLED if self.path == "/settlements" else CALLS)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        network = body["paymentRequirements"]["network"]
        if self.path == "/verify":
            with LOCK:
                CALLS["verify"] += 1
            reason, payer = check(body)
            self.answer({"isValid": reason is None, "invalidReason": reason, "payer": payer})
        elif self.path == "/settle":
            with LOCK:
                CALLS["settle"] += 1
            reason, payer = check(body)
            if reason is not None:
                self.answer({"success": False, "errorReason": reason, "payer": payer, "transaction": "", "network": network})
                return
            auth = body["paymentPayload"]["payload"]["authorization"]
            with LOCK:
                SETTLED.append({"payer": payer, "nonce": auth["nonce"], "to": auth["to"], "value": auth["value"]})
            tx = "0x" + hashlib.sha256(auth["nonce"].encode()).hexdigest()
            self.answer({"success": True, "payer": payer, "transaction": tx, "network": network})
        else:
            self.send_error(404)


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
