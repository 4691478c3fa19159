"""Makes an MPP credential with the MPP client library (PyPI `pympp`, import `mpp`), as a paying agent would.

Reads one JSON object on stdin:
  {"www_authenticate": the 402's challenge, "stripe": the Stripe stand-in's base URL,
   "payment_method": a Stripe test payment method (pm_card_visa, pm_card_chargeDeclined, ...),
   "forge": optional {"secret", "request"}: a challenge for another request, made with the library's own
            Challenge.create and the server's secret (an HMAC-valid challenge this route did not issue),
   "tamper": optional request object put in place of the challenge's, its id left as issued}
Writes {"authorization": the Authorization value, "verified": whether the library's Challenge.verify accepts the
server's challenge id under the secret, when "secret" is given}.

The library's Stripe client method (mpp.methods.stripe.client.StripeMethod) reads the challenge's amount, currency,
networkId and paymentMethodTypes, asks the create_token callback for a Shared Payment Token, and wraps it in the
credential. The callback stands for the payer's own backend: it asks Stripe's test helper (the stand-in) to grant a
token with those usage limits.
"""

import asyncio
import json
import sys

import httpx
from mpp import Challenge
from mpp._canonical import canonical_b64url
from mpp.methods.stripe.client import StripeMethod


def main() -> None:
    given = json.load(sys.stdin)
    challenge = Challenge.from_www_authenticate(given["www_authenticate"])
    verified = None
    if "secret" in given:
        verified = challenge.verify(given["secret"], challenge.realm)
    if "forge" in given:
        forge = given["forge"]
        challenge = Challenge.create(
            secret_key=forge["secret"],
            realm=challenge.realm,
            method=challenge.method,
            intent=challenge.intent,
            request=forge["request"],
            expires=challenge.expires,
            description=challenge.description,
        )
    if "tamper" in given:
        request = given["tamper"]
        challenge = Challenge(
            id=challenge.id,
            method=challenge.method,
            intent=challenge.intent,
            request=request,
            realm=challenge.realm,
            request_b64=canonical_b64url(request),
            expires=challenge.expires,
            description=challenge.description,
        )

    async def create_token(params) -> str:
        form = {
            "payment_method": params.payment_method,
            "usage_limits[currency]": params.currency,
            "usage_limits[max_amount]": params.amount,
            "usage_limits[expires_at]": str(params.expires_at),
            "seller_details[network_id]": params.network_id,
        }
        async with httpx.AsyncClient() as client:
            r = await client.post(f"{given['stripe']}/v1/test_helpers/shared_payment/granted_tokens", data=form)
            r.raise_for_status()
            return r.json()["id"]

    method = StripeMethod(create_token=create_token, payment_method=given["payment_method"])
    credential = asyncio.run(method.create_credential(challenge))
    json.dump({"authorization": credential.to_authorization(), "verified": verified}, sys.stdout)


if __name__ == "__main__":
    main()
