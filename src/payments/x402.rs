//! x402 pay per call: what a 402 asks for, a payment's checks against it, and the facilitator's /verify and /settle.
//!
//! Protocol: x402 v1 (`X-PAYMENT`, `X-PAYMENT-RESPONSE`, the 402 body's `accepts`) and v2 (`PAYMENT-REQUIRED`,
//! `PAYMENT-SIGNATURE`, `PAYMENT-RESPONSE`), scheme `exact` on EVM: the payer signs an EIP-3009
//! `transferWithAuthorization` of USDC to the payee (EIP-712), and the facilitator checks and submits it
//! (coinbase/x402 `specs/x402-specification-v1.md` §5–7, `specs/x402-specification-v2.md`,
//! `specs/schemes/exact/scheme_exact_evm.md`). The amount must equal the price (v2's rule; v1 allowed more).

use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine;
use poem_openapi::Object;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::config::X402 as X402Settings;
use crate::security::sha256_hex;

/// A chain on which x402 payments are taken in USDC.
pub struct Network {
    /// The v1 name (`network` of v1 requirements, LEVY_X402_NETWORK).
    pub name: &'static str,
    /// The CAIP-2 id (`network` of v2 requirements).
    pub caip2: &'static str,
    /// The USDC token contract: the asset paid and the EIP-712 domain's verifyingContract.
    pub usdc: &'static str,
    /// The token's EIP-712 domain name and version, which the payer signs over.
    pub eip712_name: &'static str,
    pub eip712_version: &'static str,
}

/// The networks offered. USDC contract addresses: Circle, "USDC Contract Addresses"
/// (developers.circle.com/stablecoins/usdc-contract-addresses, read 2026-11-26); EIP-712 domains as the tokens
/// report them (`name()`, `version()` of FiatTokenV2_2), and as the x402 Python SDK 2.25.0 lists them
/// (`x402/mechanisms/evm/default_assets.py`).
pub const NETWORKS: &[Network] = &[
    // Base mainnet, chain id 8453.
    Network {
        name: "base",
        caip2: "eip155:8453",
        usdc: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        eip712_name: "USD Coin",
        eip712_version: "2",
    },
    // Base Sepolia (testnet), chain id 84532.
    Network {
        name: "base-sepolia",
        caip2: "eip155:84532",
        usdc: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        eip712_name: "USDC",
        eip712_version: "2",
    },
];

/// USDC's decimals: an amount in atomic units is USD × 10^6.
const USDC_DECIMALS: u32 = 6;

/// A price in USD in USDC atomic units, as x402 writes amounts (a decimal string): 0.005 USD is "5000".
pub fn atomic(usd: Decimal) -> String {
    (usd * Decimal::from(10u64.pow(USDC_DECIMALS))).trunc().to_u64().unwrap_or(0).to_string()
}

/// How long a payment authorization may take to settle, stated in the requirements (seconds).
pub const MAX_TIMEOUT_SECONDS: i64 = 60;

/// The largest payment header read (a v2 payload echoes the requirements; 8 KiB is several times one).
pub const MAX_HEADER_BYTES: usize = 8192;

/// The EIP-712 domain of the token, which the payer's wallet needs to sign.
#[derive(Object, Serialize, Clone, Debug)]
pub struct TokenDomain {
    /// The token's EIP-712 domain name ("USD Coin" on Base, "USDC" on Base Sepolia).
    pub name: String,
    /// The token's EIP-712 domain version ("2").
    pub version: String,
}

/// One way to pay (x402 v1 `PaymentRequirements`): an `exact` USDC transfer authorization to the payee.
#[derive(Object, Serialize, Clone, Debug)]
#[oai(rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
pub struct PaymentRequirements {
    /// Always `exact`: the authorization's value must equal maxAmountRequired.
    pub scheme: String,
    /// The chain, by its x402 v1 name (`base`, `base-sepolia`).
    pub network: String,
    /// The price in USDC atomic units (6 decimals): "5000" is 0.005 USD.
    pub max_amount_required: String,
    /// The USDC token contract on that network.
    pub asset: String,
    /// The address paid.
    pub pay_to: String,
    /// The URL paid for.
    pub resource: String,
    pub description: String,
    /// The paid answer's media type (application/json).
    pub mime_type: String,
    /// Seconds the authorization must stay valid for settlement.
    pub max_timeout_seconds: i64,
    pub extra: TokenDomain,
}

/// Why a payment is refused: an x402 error code (`specs/x402-specification-v1.md` §9) and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub reason: String,
    pub message: String,
}

fn refused(reason: &str, message: impl Into<String>) -> Refused {
    Refused { reason: reason.into(), message: message.into() }
}

/// The facilitator did not answer, or not in the protocol's terms: nothing was charged.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable(pub String);

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct Authorization {
    pub from: String,
    pub to: String,
    pub value: String,
    pub valid_after: String,
    pub valid_before: String,
    pub nonce: String,
}

#[derive(Deserialize, Clone, Debug)]
struct ExactPayload {
    signature: String,
    authorization: Authorization,
}

/// The requirements a v2 payload says it accepted.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct Accepted {
    scheme: String,
    network: String,
    amount: String,
    asset: String,
    pay_to: String,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    x402_version: u8,
    #[serde(default)]
    scheme: Option<String>,
    #[serde(default)]
    network: Option<String>,
    #[serde(default)]
    accepted: Option<Accepted>,
    payload: ExactPayload,
}

/// A payment as sent, decoded.
#[derive(Clone, Debug)]
pub struct Payment {
    /// 1 (`X-PAYMENT`) or 2 (`PAYMENT-SIGNATURE`).
    pub version: u8,
    /// The decoded payload, passed to the facilitator as sent.
    pub raw: Value,
    pub authorization: Authorization,
    scheme: String,
    network: String,
    accepted: Option<Accepted>,
}

impl Payment {
    /// The payer's address, lowercase.
    pub fn payer(&self) -> String {
        self.authorization.from.to_ascii_lowercase()
    }
}

fn is_hex(s: &str, digits: usize) -> bool {
    s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).is_some_and(|h| h.len() == digits && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Whether `s` is an EVM address: `0x` and 40 hex digits, any case.
pub fn is_address(s: &str) -> bool {
    is_hex(s, 40)
}

/// Decodes a payment header (base64 of the JSON `PaymentPayload`) sent as `version`'s header.
pub fn decode(header: &str, version: u8) -> Result<Payment, Refused> {
    let bad = |detail: &str| refused("invalid_payload", format!("the payment header is not an x402 payment: {detail}"));
    if header.len() > MAX_HEADER_BYTES {
        return Err(bad("longer than 8192 bytes"));
    }
    let text = header.trim();
    let bytes = STANDARD.decode(text).or_else(|_| STANDARD_NO_PAD.decode(text)).map_err(|_| bad("not base64"))?;
    let raw: Value = serde_json::from_slice(&bytes).map_err(|_| bad("not JSON"))?;
    let env: Envelope = serde_json::from_value(raw.clone()).map_err(|e| bad(&e.to_string()))?;
    if env.x402_version != version {
        return Err(refused(
            "invalid_x402_version",
            format!("x402Version {} sent in the header of version {version} (X-PAYMENT is 1, PAYMENT-SIGNATURE is 2)", env.x402_version),
        ));
    }
    let (scheme, network) = match (&env.accepted, version) {
        (Some(a), 2) => (a.scheme.clone(), a.network.clone()),
        (_, 1) => (env.scheme.clone().unwrap_or_default(), env.network.clone().unwrap_or_default()),
        _ => return Err(bad("a version 2 payment names the requirements it accepted")),
    };
    let a = &env.payload.authorization;
    let sig = env.payload.signature.trim_start_matches("0x");
    let well_formed = is_address(&a.from)
        && is_address(&a.to)
        && is_hex(&a.nonce, 64)
        && sig.len() >= 130
        && sig.len() <= 4096
        && sig.len().is_multiple_of(2)
        && sig.bytes().all(|b| b.is_ascii_hexdigit());
    if !well_formed {
        return Err(bad("authorization.from and .to are addresses, nonce 32 bytes, signature at least 65 bytes, all hex"));
    }
    Ok(Payment { version, raw, authorization: env.payload.authorization.clone(), scheme, network, accepted: env.accepted })
}

/// x402 as configured: the network, the payee and the facilitator (the service's settings), and the price of a
/// call (the plans' pay-per-call entry, `rules/plans.yaml`).
pub struct X402 {
    pub network: &'static Network,
    /// USD per call.
    pub price: Decimal,
    pub payee: String,
    pub facilitator: String,
    http: reqwest::Client,
}

impl X402 {
    /// x402 from the settings: `None` while no payee is set; an error for a payee, network or facilitator that
    /// cannot work.
    pub fn from_settings(s: &X402Settings, price: Decimal) -> Result<Option<X402>, String> {
        let Some(payee) = &s.payee else { return Ok(None) };
        if !is_address(payee) {
            return Err(format!("LEVY_X402_PAYEE `{payee}` is not an address (0x and 40 hex digits)"));
        }
        let network = NETWORKS.iter().find(|n| n.name == s.network).ok_or_else(|| {
            let names: Vec<&str> = NETWORKS.iter().map(|n| n.name).collect();
            format!("LEVY_X402_NETWORK `{}` is not one of {}", s.network, names.join(", "))
        })?;
        let facilitator = s.facilitator.trim().to_string();
        if !(facilitator.starts_with("https://") || facilitator.starts_with("http://")) {
            return Err(format!("LEVY_X402_FACILITATOR `{facilitator}` is not an http(s) URL"));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| format!("x402 facilitator client: {e}"))?;
        Ok(Some(X402 { network, price, payee: payee.clone(), facilitator: facilitator.trim_end_matches('/').to_string(), http }))
    }

    /// The v1 requirements for `resource`.
    pub fn requirements(&self, resource: &str) -> PaymentRequirements {
        PaymentRequirements {
            scheme: "exact".into(),
            network: self.network.name.into(),
            max_amount_required: self.price_atomic(),
            asset: self.network.usdc.into(),
            pay_to: self.payee.clone(),
            resource: resource.into(),
            description: self.description(),
            mime_type: "application/json".into(),
            max_timeout_seconds: MAX_TIMEOUT_SECONDS,
            extra: TokenDomain { name: self.network.eip712_name.into(), version: self.network.eip712_version.into() },
        }
    }

    /// The v2 requirements (CAIP-2 network, `amount`).
    fn requirements_v2(&self) -> Value {
        json!({
            "scheme": "exact",
            "network": self.network.caip2,
            "amount": self.price_atomic(),
            "asset": self.network.usdc,
            "payTo": self.payee,
            "maxTimeoutSeconds": MAX_TIMEOUT_SECONDS,
            "extra": {"name": self.network.eip712_name, "version": self.network.eip712_version},
        })
    }

    /// The v2 `PAYMENT-REQUIRED` header's value: base64 of the `PaymentRequired` object.
    pub fn payment_required_header(&self, resource: &str, error: &str) -> String {
        let v = json!({
            "x402Version": 2,
            "error": error,
            "resource": {"url": resource, "description": self.description(), "mimeType": "application/json"},
            "accepts": [self.requirements_v2()],
        });
        STANDARD.encode(v.to_string())
    }

    /// The payment's checks against what this server asks for, at Unix time `now` (seconds).
    pub fn check(&self, p: &Payment, now: i64) -> Result<(), Refused> {
        let net = self.network;
        if p.scheme != "exact" {
            return Err(refused("unsupported_scheme", format!("scheme `{}` is not offered; pay with `exact`", p.scheme)));
        }
        let network_ok = if p.version == 1 { p.network == net.name } else { p.network == net.caip2 };
        if !network_ok {
            return Err(refused("invalid_network", format!("network `{}` is not offered; pay on {} ({})", p.network, net.name, net.caip2)));
        }
        if let Some(a) = &p.accepted {
            if !a.asset.eq_ignore_ascii_case(net.usdc) || !a.pay_to.eq_ignore_ascii_case(&self.payee) || a.amount != self.price_atomic() {
                return Err(refused("invalid_payment_requirements", "the accepted requirements are not the ones this server offers"));
            }
        }
        let a = &p.authorization;
        if !a.to.eq_ignore_ascii_case(&self.payee) {
            return Err(refused(
                "invalid_exact_evm_payload_recipient_mismatch",
                format!("the authorization pays {}, not the payee {}", a.to, self.payee),
            ));
        }
        if a.value.parse::<u128>().ok() != self.price_atomic().parse::<u128>().ok() {
            return Err(refused(
                "invalid_exact_evm_payload_authorization_value",
                format!("the authorization's value is {}; one call costs {} (USDC atomic units)", a.value, self.price_atomic()),
            ));
        }
        let after = a.valid_after.parse::<i64>().map_err(|_| refused("invalid_payload", "validAfter is not a whole number"))?;
        let before = a.valid_before.parse::<i64>().map_err(|_| refused("invalid_payload", "validBefore is not a whole number"))?;
        if after > now {
            return Err(refused("invalid_exact_evm_payload_authorization_valid_after", "the authorization is not valid yet"));
        }
        if before <= now {
            return Err(refused("invalid_exact_evm_payload_authorization_valid_before", "the authorization has expired"));
        }
        Ok(())
    }

    /// The claim that makes an authorization pay for one call: EIP-3009 nonces are unique per token and authorizer.
    pub fn payment_id(&self, p: &Payment) -> String {
        let key = format!("{}|{}|{}|{}", self.network.caip2, self.network.usdc, p.payer(), p.authorization.nonce).to_ascii_lowercase();
        sha256_hex(key.as_bytes())
    }

    /// The body of /verify and /settle: the payload as sent and the requirements of its version.
    fn facilitator_body(&self, p: &Payment, resource: &str) -> Value {
        let requirements =
            if p.version == 1 { serde_json::to_value(self.requirements(resource)).unwrap_or(Value::Null) } else { self.requirements_v2() };
        json!({"x402Version": p.version, "paymentPayload": p.raw, "paymentRequirements": requirements})
    }

    async fn post(&self, path: &str, body: &Value) -> Result<Value, Unavailable> {
        let url = format!("{}/{path}", self.facilitator);
        let resp = self.http.post(&url).json(body).send().await.map_err(|e| Unavailable(format!("{path}: {e}")))?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| Unavailable(format!("{path}: {e}")))?;
        if bytes.len() > 64 << 10 {
            return Err(Unavailable(format!("{path}: an answer of {} bytes", bytes.len())));
        }
        // A facilitator may refuse with a 4xx whose body still says why; anything else is not an answer.
        serde_json::from_slice(&bytes).map_err(|_| Unavailable(format!("{path}: HTTP {status} without a JSON answer")))
    }

    /// POST /verify: Ok(Ok(payer)) when valid; Ok(Err) with the facilitator's reason when not.
    pub async fn verify(&self, p: &Payment, resource: &str) -> Result<Result<(), Refused>, Unavailable> {
        let v = self.post("verify", &self.facilitator_body(p, resource)).await?;
        match v.get("isValid").and_then(Value::as_bool) {
            Some(true) => Ok(Ok(())),
            Some(false) => {
                let reason = v.get("invalidReason").and_then(Value::as_str).unwrap_or("unexpected_verify_error");
                Ok(Err(refused(reason, format!("the facilitator refused the payment: {reason}"))))
            }
            None => Err(Unavailable("verify: the answer has no isValid".into())),
        }
    }

    /// POST /settle: Ok(Ok(settlement)) when settled, the receipt's content; Ok(Err) with the reason when not.
    pub async fn settle(&self, p: &Payment, resource: &str) -> Result<Result<Value, Refused>, Unavailable> {
        let v = self.post("settle", &self.facilitator_body(p, resource)).await?;
        match v.get("success").and_then(Value::as_bool) {
            Some(true) => {
                let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
                let network = if text("network").is_empty() { self.network_of(p).to_string() } else { text("network") };
                let payer = if text("payer").is_empty() { p.authorization.from.clone() } else { text("payer") };
                Ok(Ok(json!({"success": true, "transaction": text("transaction"), "network": network, "payer": payer})))
            }
            Some(false) => {
                let reason = v.get("errorReason").and_then(Value::as_str).unwrap_or("unexpected_settle_error");
                Ok(Err(refused(reason, format!("the facilitator did not settle the payment: {reason}"))))
            }
            None => Err(Unavailable("settle: the answer has no success".into())),
        }
    }

    fn network_of(&self, p: &Payment) -> &'static str {
        if p.version == 1 {
            self.network.name
        } else {
            self.network.caip2
        }
    }
}

/// The response header of a receipt for a payment of `version`: v2's `PAYMENT-RESPONSE`, v1's `X-PAYMENT-RESPONSE`.
pub fn receipt_header_name(version: u8) -> &'static str {
    if version == 2 {
        "PAYMENT-RESPONSE"
    } else {
        "X-PAYMENT-RESPONSE"
    }
}

/// The receipt header's value: base64 of the `SettlementResponse` JSON.
pub fn receipt_header(settlement: &Value) -> String {
    STANDARD.encode(settlement.to_string())
}

impl X402 {
    /// The price of a call in USDC atomic units.
    pub fn price_atomic(&self) -> String {
        atomic(self.price)
    }

    fn description(&self) -> String {
        format!("One US sales/use tax determination (POST /api/v1/calculate): {} USD in USDC", self.price)
    }
}
