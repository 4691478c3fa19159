//! MPP pay per call: the `Payment` challenge a 402 carries, a credential's checks against it, and the Stripe charge.
//!
//! Protocol: the `Payment` HTTP authentication scheme (tempoxyz/mpp-specs `specs/core/draft-httpauth-payment-01.md`:
//! challenge parameters, the HMAC-bound challenge id, credentials, `Payment-Receipt`, the problem types) with the
//! `charge` intent of the `stripe` method (`specs/methods/stripe/draft-stripe-charge-00.md`, and the fields the
//! reference client PyPI `pympp` 0.16.0 requires: `methodDetails.networkId` and `paymentMethodTypes`). The payer
//! sends a Shared Payment Token (SPT); the server creates and confirms a Stripe PaymentIntent with it.

use std::time::Duration;

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use hmac::{Hmac, Mac};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_json::Value;
use sha2::Sha256;

use crate::config::Mpp as MppSettings;

/// The method and intent offered.
pub const METHOD: &str = "stripe";
pub const INTENT: &str = "charge";

/// The currency charged, and its decimals: an amount is in cents (the method's "smallest currency unit").
pub const CURRENCY: &str = "usd";
const CURRENCY_DECIMALS: u32 = 2;

/// The Stripe payment method types the challenge allows.
const PAYMENT_METHOD_TYPES: &[&str] = &["card"];

/// The Stripe API version PaymentIntents are created with: the machine-payments preview that the reference SDK
/// pympp 0.16.0 pins (`mpp/methods/stripe/_defaults.py`), which takes `shared_payment_granted_token`.
pub const STRIPE_API_VERSION: &str = "2026-07-29.preview";

/// How long a challenge may be answered (seconds); the core draft's reference servers default to five minutes.
pub const CHALLENGE_SECONDS: i64 = 300;

/// The response header of a paid answer's receipt.
pub const RECEIPT_HEADER: &str = "Payment-Receipt";

/// The largest credential read (the core draft asks servers to take at least 4 KB).
pub const MAX_CREDENTIAL_BYTES: usize = 8192;

/// Where the problem types live (core draft, "Error Codes").
pub const PROBLEM_BASE: &str = "https://paymentauth.org/problems/";

/// Why a credential is refused: a problem type of the core draft (`malformed-credential`, `invalid-challenge`,
/// `payment-expired`, `payment-insufficient`, `invalid-payload`, `verification-failed`,
/// `payment-action-required`) and a sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub kind: &'static str,
    pub message: String,
}

impl Problem {
    /// The problem type's URI.
    pub fn type_uri(&self) -> String {
        format!("{PROBLEM_BASE}{}", self.kind)
    }
}

fn problem(kind: &'static str, message: impl Into<String>) -> Problem {
    Problem { kind, message: message.into() }
}

/// Stripe did not answer, or not in its API's terms: nothing is known to be charged.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable(pub String);

/// A challenge as the credential echoes it.
#[derive(Deserialize, Clone, Debug)]
struct Echoed {
    id: String,
    realm: String,
    method: String,
    intent: String,
    request: String,
    #[serde(default)]
    expires: Option<String>,
    #[serde(default)]
    digest: Option<String>,
    #[serde(default)]
    opaque: Option<String>,
    /// `Payment-Authorization` when a challenge selected that field; this server's never do.
    #[serde(default)]
    header: Option<String>,
}

#[derive(Deserialize, Clone, Debug)]
struct Wire {
    challenge: Echoed,
    payload: Value,
}

/// A credential that passed the checks: its challenge id (single use) and the SPT to charge.
#[derive(Clone)]
pub struct Credential {
    pub challenge_id: String,
    pub spt: String,
    external_id: Option<String>,
}

impl std::fmt::Debug for Credential {
    /// The token is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential").field("challenge_id", &self.challenge_id).finish_non_exhaustive()
    }
}

/// A PaymentIntent that succeeded: its id and the `Payment-Receipt` value sent with the answer.
pub struct Charged {
    pub reference: String,
    pub receipt: String,
}

/// MPP as configured: the secret, the Stripe account and network profile, and the price of a call in cents.
pub struct Mpp {
    secret: Vec<u8>,
    pub realm: String,
    /// The price of a call in the currency's smallest unit (cents), as the challenge's `amount` writes it.
    pub amount: String,
    network_id: String,
    stripe_key: String,
    stripe_api_base: String,
    http: reqwest::Client,
}

/// `usd` in cents, when it is a whole number of them.
fn cents(usd: Decimal) -> Option<u64> {
    let minor = usd * Decimal::from(10u64.pow(CURRENCY_DECIMALS));
    (minor.fract().is_zero() && minor > Decimal::ZERO).then(|| minor.to_u64()).flatten()
}

impl Mpp {
    /// MPP from the settings: `None` while no secret is set; an error for settings that cannot work, or for a
    /// price that is no whole number of cents (the Stripe method charges whole cents).
    pub fn from_settings(s: &MppSettings, price_usd: Decimal, realm: &str) -> Result<Option<Mpp>, String> {
        let Some(secret) = &s.secret else { return Ok(None) };
        if secret.len() < 32 {
            return Err("LEVY_MPP_SECRET must be at least 32 bytes (it keys the challenge ids' HMAC-SHA256)".into());
        }
        let stripe_key = s.stripe_secret_key.clone().ok_or("LEVY_MPP_SECRET is set but LEVY_MPP_STRIPE_SECRET_KEY is not")?;
        let network_id = s.stripe_network_id.clone().ok_or("LEVY_MPP_SECRET is set but LEVY_MPP_STRIPE_NETWORK_ID is not")?;
        let amount = cents(price_usd).ok_or_else(|| {
            format!(
                "LEVY_MPP_SECRET is set but the MPP price ({price_usd} USD, `mpp` in rules/plans.yaml) is not a whole number of \
                 cents, which is what the Stripe charge method charges; set a price in whole cents or leave MPP off"
            )
        })?;
        let base = s.stripe_api_base.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("https://") || base.starts_with("http://")) {
            return Err(format!("LEVY_MPP_STRIPE_API_BASE `{base}` is not an http(s) URL"));
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("Stripe client: {e}"))?;
        Ok(Some(Mpp {
            secret: secret.as_bytes().to_vec(),
            realm: realm.to_string(),
            amount: amount.to_string(),
            network_id,
            stripe_key,
            stripe_api_base: base,
            http,
        }))
    }

    /// The `request` parameter: base64url (no padding) of the JCS-canonical JSON (RFC 8785: members sorted, no
    /// whitespace) of the charge request.
    pub fn request(&self) -> String {
        let types: Vec<String> = PAYMENT_METHOD_TYPES.iter().map(|t| json_string(t)).collect();
        let canonical = format!(
            "{{\"amount\":{},\"currency\":{},\"description\":{},\"methodDetails\":{{\"networkId\":{},\"paymentMethodTypes\":[{}]}}}}",
            json_string(&self.amount),
            json_string(CURRENCY),
            json_string(&self.description()),
            json_string(&self.network_id),
            types.join(","),
        );
        URL_SAFE_NO_PAD.encode(canonical)
    }

    fn description(&self) -> String {
        "One US sales/use tax determination (POST /api/v1/calculate)".into()
    }

    /// The challenge id: base64url of HMAC-SHA256 over the seven pipe-joined slots realm, method, intent, request,
    /// expires, digest, opaque (empty when absent), as the core draft's recommended stateless binding.
    fn id_of(&self, slots: [&str; 7]) -> Vec<u8> {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("HMAC takes a key of any length");
        mac.update(slots.join("|").as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// The `WWW-Authenticate` value of a challenge issued at `now_ms`. Its `opaque` carries a random nonce
    /// (`{"nonce":…}`, echoed and bound by the id), so that no two challenges share an id: a challenge pays for one
    /// call, and two callers sent a challenge in the same second must not compete for it.
    pub fn challenge(&self, now_ms: i64) -> String {
        let expires = rfc3339(now_ms + CHALLENGE_SECONDS * 1000);
        let request = self.request();
        let opaque = URL_SAFE_NO_PAD.encode(format!("{{\"nonce\":{}}}", json_string(&crate::security::random_hex(16))));
        let id = URL_SAFE_NO_PAD.encode(self.id_of([&self.realm, METHOD, INTENT, &request, &expires, "", &opaque]));
        format!(
            "Payment id=\"{id}\", realm=\"{}\", method=\"{METHOD}\", intent=\"{INTENT}\", request=\"{request}\", expires=\"{expires}\", opaque=\"{opaque}\", description=\"{}\"",
            self.realm,
            self.description()
        )
    }

    /// A credential (the `Authorization` value) checked at `now_ms`: its form, that this server issued its challenge
    /// unchanged (the id's HMAC, compared in constant time), the pinned realm, method and intent, its expiry, the
    /// amount and the rest of the request against today's, and the SPT in its payload. Single use is the caller's
    /// (a claim in the database).
    pub fn check(&self, authorization: &str, now_ms: i64) -> Result<Credential, Problem> {
        let malformed = |detail: &str| problem("malformed-credential", format!("the credential is malformed: {detail}"));
        if authorization.len() > MAX_CREDENTIAL_BYTES {
            return Err(malformed("longer than 8192 bytes"));
        }
        let token = scheme_token(authorization).ok_or_else(|| malformed("not `Payment <base64url>`"))?;
        let bytes = URL_SAFE_NO_PAD.decode(token).or_else(|_| URL_SAFE.decode(token)).map_err(|_| malformed("not base64url"))?;
        let wire: Wire = serde_json::from_slice(&bytes).map_err(|_| malformed("not the JSON object {challenge, payload}"))?;
        let c = &wire.challenge;
        let expected = self.id_of([
            &c.realm,
            &c.method,
            &c.intent,
            &c.request,
            c.expires.as_deref().unwrap_or(""),
            c.digest.as_deref().unwrap_or(""),
            c.opaque.as_deref().unwrap_or(""),
        ]);
        let sent = URL_SAFE_NO_PAD.decode(c.id.trim_end_matches('=')).unwrap_or_default();
        if !constant_time_eq(&sent, &expected) {
            return Err(problem("invalid-challenge", "the challenge was not issued by this server, or was altered"));
        }
        if c.realm != self.realm || c.method != METHOD || c.intent != INTENT || c.header.is_some() {
            return Err(problem("invalid-challenge", format!("the challenge is not this route's ({METHOD}/{INTENT} in `{}`)", self.realm)));
        }
        let expires = c
            .expires
            .as_deref()
            .and_then(|e| DateTime::parse_from_rfc3339(e).ok())
            .ok_or_else(|| problem("invalid-challenge", "the challenge has no valid `expires`"))?;
        if expires.timestamp_millis() <= now_ms {
            return Err(problem("payment-expired", format!("the challenge expired at {}", c.expires.as_deref().unwrap_or_default())));
        }
        if c.request != self.request() {
            return Err(self.request_mismatch(&c.request));
        }
        let payload = wire.payload.as_object().ok_or_else(|| problem("invalid-payload", "the payload is not an object"))?;
        let spt = payload.get("spt").and_then(Value::as_str).unwrap_or_default();
        if !spt.starts_with("spt_") || spt.len() > 255 || !spt.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(problem("invalid-payload", "the payload's `spt` is not a Shared Payment Token (`spt_…`)"));
        }
        let external_id = payload.get("externalId").and_then(Value::as_str).map(str::to_string);
        Ok(Credential { challenge_id: c.id.clone(), spt: spt.to_string(), external_id })
    }

    /// Why a challenge this server did issue asks for another payment than a call costs now.
    fn request_mismatch(&self, sent: &str) -> Problem {
        let decoded: Option<Value> = URL_SAFE_NO_PAD.decode(sent).ok().and_then(|b| serde_json::from_slice(&b).ok());
        let amount = decoded.as_ref().and_then(|v| v.get("amount")).and_then(Value::as_str).and_then(|a| a.parse::<u64>().ok());
        let price = self.amount.parse::<u64>().unwrap_or(u64::MAX);
        match amount {
            Some(a) if a < price => {
                problem("payment-insufficient", format!("the challenge asks for {a} cents; a call costs {price} cents ({CURRENCY})"))
            }
            _ => problem(
                "invalid-challenge",
                format!("the challenge's request is not this route's: a call costs {price} cents ({CURRENCY})"),
            ),
        }
    }

    /// Creates and confirms the PaymentIntent (`POST /v1/payment_intents`), idempotent per challenge and SPT, so a
    /// retry after a lost answer is Stripe's stored result and never a second charge. Ok(Ok) when it succeeded;
    /// Ok(Err) with the problem when Stripe refused or the payment needs the payer's action.
    pub async fn charge(&self, c: &Credential, now_ms: i64) -> Result<Result<Charged, Problem>, Unavailable> {
        let mut form: Vec<(String, String)> = vec![
            ("amount".into(), self.amount.clone()),
            ("currency".into(), CURRENCY.into()),
            ("confirm".into(), "true".into()),
            ("shared_payment_granted_token".into(), c.spt.clone()),
            ("metadata[challenge_id]".into(), c.challenge_id.clone()),
        ];
        for (i, t) in PAYMENT_METHOD_TYPES.iter().enumerate() {
            form.push((format!("payment_method_types[{i}]"), (*t).into()));
        }
        let resp = self
            .http
            .post(format!("{}/v1/payment_intents", self.stripe_api_base))
            .basic_auth(&self.stripe_key, Some(""))
            .header("Idempotency-Key", format!("mpp_{}_{}", c.challenge_id, c.spt))
            .header("Stripe-Version", STRIPE_API_VERSION)
            .form(&form)
            .send()
            .await
            .map_err(|e| Unavailable(format!("payment_intents: {}", e.without_url())))?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(|e| Unavailable(format!("payment_intents: {}", e.without_url())))?;
        // Stripe down or busy, or refusing this server's own key (a configuration fault, not the payer's): no
        // answer about the payment.
        if status.is_server_error() || matches!(status.as_u16(), 401 | 403 | 429) {
            return Err(Unavailable(format!("payment_intents: HTTP {status}")));
        }
        let v: Value = serde_json::from_slice(&bytes).map_err(|_| Unavailable(format!("payment_intents: HTTP {status} without JSON")))?;
        if !status.is_success() {
            let e = &v["error"];
            let code = e["decline_code"].as_str().or(e["code"].as_str()).unwrap_or("payment_failed");
            let message = e["message"].as_str().unwrap_or("the payment was refused");
            return Ok(Err(problem("verification-failed", format!("Stripe refused the payment ({code}): {message}"))));
        }
        let id = v["id"].as_str().unwrap_or_default().to_string();
        match v["status"].as_str() {
            Some("succeeded") if !id.is_empty() => Ok(Ok(Charged { receipt: self.receipt(&id, c, now_ms), reference: id })),
            Some("requires_action") => {
                Ok(Err(problem("payment-action-required", "the PaymentIntent requires the payer's action (for example 3-D Secure)")))
            }
            Some(other) => Ok(Err(problem("verification-failed", format!("the PaymentIntent's status is `{other}`, not `succeeded`")))),
            None => Err(Unavailable("payment_intents: an answer without a status".into())),
        }
    }

    /// The `Payment-Receipt` value: base64url (no padding) of {externalId?, method, reference, status, timestamp}.
    fn receipt(&self, reference: &str, c: &Credential, now_ms: i64) -> String {
        let external = c.external_id.as_deref().map(|e| format!("\"externalId\":{},", json_string(e))).unwrap_or_default();
        let json = format!(
            "{{{external}\"method\":{},\"reference\":{},\"status\":\"success\",\"timestamp\":{}}}",
            json_string(METHOD),
            json_string(reference),
            json_string(&rfc3339(now_ms))
        );
        URL_SAFE_NO_PAD.encode(json)
    }
}

/// The token of `Payment <token>` (the scheme name is case-insensitive, RFC 9110 §11.1).
pub fn scheme_token(authorization: &str) -> Option<&str> {
    let (scheme, rest) = authorization.trim().split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("payment") && !token.is_empty()).then_some(token)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

fn rfc3339(ms: i64) -> String {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_else(Utc::now).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Equal length and bytes, in time that depends only on the length.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mpp() -> Mpp {
        let s = MppSettings {
            secret: Some("a".repeat(32)),
            stripe_secret_key: Some("sk_test_x".into()),
            stripe_network_id: Some("profile_test".into()),
            stripe_api_base: "http://127.0.0.1:9".into(),
        };
        Mpp::from_settings(&s, Decimal::new(1, 2), "levy").unwrap().unwrap()
    }

    #[test]
    fn a_price_in_part_of_a_cent_cannot_be_charged() {
        let s = MppSettings {
            secret: Some("a".repeat(32)),
            stripe_secret_key: Some("k".into()),
            stripe_network_id: Some("n".into()),
            ..Default::default()
        };
        let refused = Mpp::from_settings(&s, Decimal::new(5, 3), "levy").err().unwrap_or_default();
        assert!(refused.contains("whole number of cents"), "{refused}");
        assert_eq!(cents(Decimal::new(1, 2)), Some(1));
        assert_eq!(cents(Decimal::new(50, 2)), Some(50));
    }

    #[test]
    fn the_request_is_canonical_json() {
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(mpp().request()).unwrap()).unwrap();
        assert_eq!(
            text,
            r#"{"amount":"1","currency":"usd","description":"One US sales/use tax determination (POST /api/v1/calculate)","methodDetails":{"networkId":"profile_test","paymentMethodTypes":["card"]}}"#
        );
    }

    /// The parameters of a `WWW-Authenticate: Payment` value.
    fn params(header: &str) -> serde_json::Map<String, Value> {
        header
            .trim_start_matches("Payment ")
            .split(", ")
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_string(), Value::String(v.trim_matches('"').to_string())))
            .collect()
    }

    fn credential(challenge: serde_json::Map<String, Value>) -> String {
        let wire = serde_json::json!({"challenge": challenge, "payload": {"spt": "spt_test123"}});
        format!("Payment {}", URL_SAFE_NO_PAD.encode(wire.to_string()))
    }

    #[test]
    fn a_credential_echoes_the_challenge_as_issued() {
        let m = mpp();
        let now = 1_790_000_000_000;
        let issued = params(&m.challenge(now));
        assert_ne!(issued["id"], params(&m.challenge(now))["id"], "two challenges of one second differ (opaque nonce)");
        let c = m.check(&credential(issued.clone()), now).unwrap();
        assert_eq!((c.challenge_id.as_str(), c.spt.as_str()), (issued["id"].as_str().unwrap(), "spt_test123"));
        let kind = |mut ch: serde_json::Map<String, Value>, k: &str, v: &str, at: i64| {
            ch.insert(k.into(), Value::String(v.into()));
            m.check(&credential(ch), at).err().map(|p| p.kind)
        };
        assert_eq!(kind(issued.clone(), "realm", "other", now), Some("invalid-challenge"));
        assert_eq!(kind(issued.clone(), "opaque", "e30", now), Some("invalid-challenge"));
        assert_eq!(kind(issued.clone(), "header", "Payment-Authorization", now), Some("invalid-challenge"));
        assert_eq!(kind(issued.clone(), "id", "AAAA", now), Some("invalid-challenge"));
        assert_eq!(kind(issued.clone(), "method", "stripe", now + 301_000), Some("payment-expired"));
        assert_eq!(m.check("Payment %%%", now).err().map(|p| p.kind), Some("malformed-credential"));
    }

    #[test]
    fn the_scheme_is_case_insensitive() {
        assert_eq!(scheme_token("payment abc"), Some("abc"));
        assert_eq!(scheme_token("Bearer abc"), None);
        assert_eq!(scheme_token("Payment"), None);
    }
}
