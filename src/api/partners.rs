//! The partner program over HTTP: POST /api/v1/partner/provision (an account for a partner's user, once per
//! external id), POST /api/v1/partner/claim (the user takes the account over with its claim link), GET
//! /api/v1/partner/usage and /api/v1/partner/revshare (a period's figures), and POST /api/v1/partner/webhook (the
//! partner's signed events). Partners themselves are created out of band (`levy partners`).

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::param::{Header, Query};
use poem_openapi::OpenApi;
use rust_decimal::Decimal;

use super::auth::PartnerAuth;
use super::context::{public_url, set_header};
use super::error::{ApiError, ErrorCode};
use super::payload::{Body, Json};
use super::schema::param::{ClaimToken, IsoDate, Param, PerUserCap, ShortText};
use super::schema::partners::{
    ClaimRequest, ClaimResponse, EntityShare, PartnerEventAck, PartnerEventBody, PartnerRef, PartnerRevshare, PartnerUsage, PeriodView,
    ProvisionRequest, ProvisionResponse, RevsharePartner, RevshareTotals, UsagePagination, UsageTotals, UserUsage,
};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::partners::events::{self, Applied, Signed};
use crate::partners::users::{self, UserFields};
use crate::partners::{self as terms, reports, Period};
use crate::security::sha256_hex;
use crate::store::entity::{partner, partner_user};
use crate::store::partners::Provisioned;
use crate::{error_responses, ok_responses};

pub struct PartnersApi(pub Arc<AppState>);

const MINUTE_MS: i64 = 60_000;

impl From<terms::Refused> for ApiError {
    fn from(r: terms::Refused) -> Self {
        use terms::Refused;
        match r {
            Refused::NotFound(m) => ApiError::not_found(m),
            Refused::Forbidden(m) => forbidden(m),
            Refused::Conflict(m) => ApiError::conflict(m),
            Refused::Field(field, m) => ApiError::field(field, m),
            Refused::SignatureInvalid(m) => ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::WebhookSignatureInvalid, m),
            Refused::Internal(m) => ApiError::internal(m),
            Refused::Store(e) => e.into(),
        }
    }
}

fn forbidden(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, message)
}

impl AppState {
    /// The partner behind a partner key: 401 for a malformed or unknown key, 403 for a deactivated partner, 429 past
    /// the partner's calls per minute (counted in the shared database, so across instances; Retry-After sent).
    async fn partner(&self, auth: &PartnerAuth) -> Result<partner::Model, ApiError> {
        let raw = auth.raw().trim();
        if !terms::looks_like_partner_key(raw) {
            return Err(ApiError::unauthorized("invalid partner key: expected partner_live_ followed by 32 hex characters"));
        }
        let p = self
            .store
            .partner_by_key_hash(&sha256_hex(raw.as_bytes()))
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown partner key"))?;
        if !p.active {
            return Err(forbidden("this partner is deactivated; its operator can reactivate it"));
        }
        let now = self.clock.now_ms();
        let start = now - now.rem_euclid(MINUTE_MS);
        let count = self.store.hit_counter_by(&format!("partner-minute:{}", p.id), start, start + 2 * MINUTE_MS, 1).await?;
        let limit = p.rate_limit_per_minute;
        set_header("X-RateLimit-Limit", limit);
        set_header("X-RateLimit-Remaining", (limit - count).max(0));
        set_header("X-RateLimit-Reset", (start + MINUTE_MS) / 1000);
        if count > limit {
            set_header("Retry-After", ((start + MINUTE_MS - now + 999) / 1000).max(1));
            return Err(ApiError::rate_limited(format!(
                "this partner's limit of {limit} calls per minute is reached; retry after the window resets"
            )));
        }
        Ok(p)
    }
}

impl From<ProvisionRequest> for UserFields {
    fn from(r: ProvisionRequest) -> Self {
        UserFields {
            external_id: r.external_id.text().to_string(),
            email: r.email.map(|e| e.text().trim().to_ascii_lowercase()),
            display_name: r.display_name,
        }
    }
}

/// The user of a partner's event: `user.deleted` names the user by its `external_id` and takes no other field.
fn event_user(body: PartnerEventBody, event: &str) -> Result<UserFields, ApiError> {
    if event != "user.created" {
        let extra: Vec<String> = [("email", body.email.is_some()), ("display_name", body.display_name.is_some())]
            .iter()
            .filter(|(_, sent)| *sent)
            .map(|(f, _)| format!("{f}: unknown field ({event} takes external_id only)"))
            .collect();
        if !extra.is_empty() {
            return Err(ApiError::invalid(extra));
        }
    }
    Ok(UserFields {
        external_id: body.external_id.text().to_string(),
        email: body.email.map(|e| e.text().trim().to_ascii_lowercase()),
        display_name: body.display_name,
    })
}

fn provision_view(u: &partner_user::Model, already: bool, secrets: Option<(&str, String)>) -> ProvisionResponse {
    ProvisionResponse {
        agenttax_account_id: u.entity_id.clone(),
        partner_user_id: u.id.clone(),
        already_provisioned: already,
        api_key: secrets.as_ref().map(|s| s.0.to_string()),
        claim_url: secrets.map(|s| s.1),
        claim_expires_at: iso(u.claim_expires_at),
        claimed: u.claimed_at.is_some(),
    }
}

fn period_of(from: Query<Option<Param<IsoDate>>>, to: Query<Option<Param<IsoDate>>>, now_ms: i64) -> Result<Period, ApiError> {
    Period::parse(from.0.as_ref().map(|p| p.0.as_str()), to.0.as_ref().map(|p| p.0.as_str()), now_ms).map_err(ApiError::invalid)
}

fn period_view(p: &Period) -> PeriodView {
    PeriodView { from: p.from.to_string(), to: p.to.to_string() }
}

ok_responses!(ProvisionResponses {
    201 => Created(Json<ProvisionResponse>): "A new account: `api_key` and `claim_url` are shown this once.",
    200 => Ok(Json<ProvisionResponse>): "The external id was provisioned before: the same account, no credentials (none are rotated).",
});

error_responses!(ProvisionErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field) or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED: no partner key, or a malformed or unknown one.",
    403 => Forbidden: "FORBIDDEN: the partner is deactivated.",
    429 => TooManyRequests: "RATE_LIMITED: the partner's calls per minute (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(ClaimResponses {
    200 => Ok(Json<ClaimResponse>): "The account is the user's: it logs in with the email and password sent.",
});

error_responses!(ClaimErrors {
    400 => BadRequest: "INVALID_INPUT: a field (errors names each), no token, or a claim link that expired; INVALID_JSON_BODY.",
    404 => NotFound: "RESOURCE_NOT_FOUND: no claim link has this token, or its account was deleted by the partner.",
    409 => Conflict: "RESOURCE_CONFLICT: the claim link was used before, or another account has the email.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(UsageResponses {
    200 => Ok(Json<PartnerUsage>): "The period's usage.",
});

error_responses!(UsageErrors {
    400 => BadRequest: "INVALID_INPUT: from, to, per_user_cap or partner_user_id is malformed, to is before from, or the period is longer than 366 days.",
    401 => Unauthorized: "UNAUTHORIZED.",
    403 => Forbidden: "FORBIDDEN: the partner is deactivated, or partner_user_id is another partner's user.",
    404 => NotFound: "RESOURCE_NOT_FOUND: no partner user has this partner_user_id.",
    429 => TooManyRequests: "RATE_LIMITED: the partner's calls per minute (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(RevshareResponses {
    200 => Ok(Json<PartnerRevshare>): "The period's revenue share.",
});

error_responses!(RevshareErrors {
    400 => BadRequest: "INVALID_INPUT: from or to is malformed, to is before from, or the period is longer than 366 days.",
    401 => Unauthorized: "UNAUTHORIZED.",
    403 => Forbidden: "FORBIDDEN: the partner is deactivated.",
    429 => TooManyRequests: "RATE_LIMITED: the partner's calls per minute (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(WebhookResponses {
    200 => Ok(Json<PartnerEventAck>): "The event is applied (or found applied before: `already_provisioned`, `already_deleted`).",
});

error_responses!(WebhookErrors {
    400 => BadRequest: "INVALID_INPUT or INVALID_JSON_BODY: a correctly signed body that is not the event's (nothing changed, the nonce is not used up).",
    401 => Unauthorized: "WEBHOOK_SIGNATURE_INVALID: a header missing or malformed, an unknown partner, an unknown event, a nonce not of 8 to 128 characters or used before, a timestamp more than 5 minutes from the server's clock, or no v1 that matches. Nothing changed.",
    403 => Forbidden: "FORBIDDEN: the partner is deactivated (the signature verified; nothing changed).",
    503 => DbUnavailable: "DB_UNAVAILABLE: nothing changed; send it again (with a new nonce).",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Partners")]
impl PartnersApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PARTNER_PROVISION_EXAMPLE: &'static str = r#"{
        "body": {"external_id": "user-42", "email": "ada@example.com", "display_name": "Ada"},
        "status": 201,
        "expect": {"/already_provisioned": false, "/claimed": false}
    }"#;

    /// Provision an account for a partner's user
    ///
    /// `external_id` is the idempotency key: the first call makes the account (free plans, one API key) and answers
    /// 201 with `api_key` and `claim_url`, shown this once; a repeat, even a concurrent one, answers 200 with the same
    /// account, `already_provisioned: true` and no credentials (none are rotated). The key works like any account's,
    /// and its calls count in the partner's usage. The user takes the account over with the claim link (POST to it
    /// with an email and a password) within 7 days.
    #[oai(
        path = "/partner/provision",
        method = "post",
        operation_id = "partnerProvision",
        code_sample(lang = "json", label = "example", source = "Self::PARTNER_PROVISION_EXAMPLE")
    )]
    async fn provision(
        &self,
        auth: PartnerAuth,
        req: &poem::Request,
        body: Body<ProvisionRequest>,
    ) -> Result<ProvisionResponses, ProvisionErrors> {
        let s = &self.0;
        let p = s.partner(&auth).await?;
        let user = UserFields::from(body.parse()?);
        match users::provision(&s.store, &p, &user, None, s.clock.now_ms()).await.map_err(ApiError::from)? {
            (Provisioned::New(u), new) => {
                let url = public_url(s.public_url.as_deref(), req, &format!("/api/v1/partner/claim?token={}", new.claim_token));
                Ok(ProvisionResponses::Created(Json(provision_view(&u, false, Some((&new.api_key, url))))))
            }
            (Provisioned::Existing(u), _) => Ok(ProvisionResponses::Ok(Json(provision_view(&u, true, None)))),
            (Provisioned::Replayed, _) => Err(ApiError::internal("provisioning without a nonce answered a replay").into()),
        }
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PARTNER_CLAIM_EXAMPLE: &'static str = r#"{
        "query": "token=clm_0000000000000000000000000000000000000000000000000000000000000000",
        "body": {"email": "ada@example.com", "password": "a long password"},
        "status": 404,
        "expect": {"/code": "RESOURCE_NOT_FOUND"}
    }"#;

    /// Claim a provisioned account
    ///
    /// The claim link a partner received for its user is this operation with the single-use `token`. The user sends
    /// the email and password it will log in with; the account is then the user's (`claimed` true), and the API key
    /// issued at provisioning keeps working. A link works once, for 7 days.
    #[oai(
        path = "/partner/claim",
        method = "post",
        operation_id = "partnerClaim",
        code_sample(lang = "json", label = "example", source = "Self::PARTNER_CLAIM_EXAMPLE")
    )]
    async fn claim(
        &self,
        /// The claim token of the link.
        token: Query<Param<ClaimToken>>,
        body: Body<ClaimRequest>,
    ) -> Result<ClaimResponses, ClaimErrors> {
        let s = &self.0;
        let token = token.0 .0;
        // The token's problem is told with the body's, all at once.
        let token_problem = (!terms::looks_like_claim_token(&token))
            .then(|| "token: is not a claim link's token: clm_ followed by 64 lowercase hex characters".to_string());
        let ClaimRequest { email, password } = match (body.parse(), token_problem) {
            (Ok(r), None) => r,
            (Ok(_), Some(t)) => return Err(ApiError::invalid(vec![t]).into()),
            (Err(mut e), Some(t)) if e.code == ErrorCode::InvalidInput => {
                e.errors.push(t);
                return Err(ApiError::invalid(e.errors).into());
            }
            (Err(e), _) => return Err(e.into()),
        };
        let email = email.text().trim().to_ascii_lowercase();
        let u = users::claim(&s.store, &token, &email, password, s.clock.now_ms()).await.map_err(ApiError::from)?;
        Ok(ClaimResponses::Ok(Json(ClaimResponse {
            success: true,
            agenttax_account_id: u.entity_id,
            partner_user_id: u.id,
            claimed: true,
            email,
        })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PARTNER_USAGE_EXAMPLE: &'static str = r#"{
        "query": "from=2026-11-01&to=2026-11-30",
        "status": 200,
        "expect": {"/period/from": "2026-11-01", "/totals/total_users": 1, "/pagination/truncated": false}
    }"#;

    /// A partner's usage
    ///
    /// Calls (ledger rows: keyed calculate calls and ingested records) of the partner's provisioned users in the
    /// period, `from` to `to` (UTC dates, both included; by default the current calendar month). The first
    /// `free_calls_per_user` calls of each user in each calendar month are free; the rest are billable at the
    /// partner's wholesale price. `to` may not be before `from`, and a period covers at most 366 days (400
    /// otherwise). `per_user` lists at most `per_user_cap` users (5000 by default), in the order they
    /// were provisioned; the totals cover all of them. `partner_user_id` narrows the report to one of the partner's
    /// users (another partner's is 403).
    #[oai(
        path = "/partner/usage",
        method = "get",
        operation_id = "partnerUsage",
        code_sample(lang = "json", label = "example", source = "Self::PARTNER_USAGE_EXAMPLE")
    )]
    async fn usage(
        &self,
        auth: PartnerAuth,
        from: Query<Option<Param<IsoDate>>>,
        to: Query<Option<Param<IsoDate>>>,
        per_user_cap: Query<Option<Param<PerUserCap>>>,
        /// One of the partner's users (`pu_…`).
        partner_user_id: Query<Option<Param<ShortText>>>,
    ) -> Result<UsageResponses, UsageErrors> {
        let s = &self.0;
        let p = s.partner(&auth).await?;
        let period = period_of(from, to, s.clock.now_ms())?;
        let cap = per_user_cap.0.map_or(Ok(terms::PER_USER_CAP), |c| c.checked_whole::<usize>("per_user_cap"))?;
        let partner_user_id = partner_user_id.0.map(|x| x.checked("partner_user_id")).transpose()?;
        let usage = reports::usage(&s.store, &p, &period, partner_user_id.as_deref()).await.map_err(ApiError::from)?;
        let cost = |calls: i64| terms::money(usage.price * Decimal::from(calls));
        let per_user: Vec<UserUsage> = usage
            .users
            .iter()
            .take(cap)
            .map(|u| UserUsage {
                external_id: u.user.external_id.clone(),
                partner_user_id: u.user.id.clone(),
                calls: u.free + u.billable,
                free: u.free,
                billable: u.billable,
                cost_usd: cost(u.billable),
            })
            .collect();
        let users = &usage.users;
        let truncated = users.len() > cap;
        let note = truncated.then(|| {
            format!(
                "per_user lists the first {cap} of {} users, in the order they were provisioned; the totals cover all of them. \
                 Ask for one user with partner_user_id",
                users.len()
            )
        });
        Ok(UsageResponses::Ok(Json(PartnerUsage {
            partner: PartnerRef { id: p.id, slug: p.slug },
            period: period_view(&period),
            totals: UsageTotals {
                calls: usage.free + usage.billable,
                free_tier_calls: usage.free,
                billable_calls: usage.billable,
                wholesale_cost_usd: cost(usage.billable),
                total_users: users.len() as i64,
            },
            pagination: UsagePagination {
                per_user_returned: per_user.len() as i64,
                per_user_cap: cap as i64,
                truncated,
                truncation_note: note,
            },
            per_user,
        })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PARTNER_REVSHARE_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/totals/attributed_entities": 0, "/totals/payout_usd": "0.000000"}
    }"#;

    /// A partner's revenue share
    ///
    /// For each of the partner's accounts that upgraded to a paid tax plan: the partner's percentage locked at the
    /// account's first upgrade (a later change of the partner's rate applies to later upgrades only), the monthly
    /// price of its plan now (`mrr_usd`) and the payout: `mrr_usd` × `revshare_pct` / 100 for each calendar month of
    /// the period (`from` to `to`, UTC dates; by default the current month) in the account's window. The window runs
    /// from the first upgrade to 12 months after it (`window_ends_at`); a month counts when the window holds its last
    /// moment, so the month of the upgrade counts and 12 months count in all. Accounts that contribute nothing in the
    /// period are not listed. `to` may not be before `from`, and a period covers at most 366 days (400 otherwise).
    #[oai(
        path = "/partner/revshare",
        method = "get",
        operation_id = "partnerRevshare",
        code_sample(lang = "json", label = "example", source = "Self::PARTNER_REVSHARE_EXAMPLE")
    )]
    async fn revshare(
        &self,
        auth: PartnerAuth,
        from: Query<Option<Param<IsoDate>>>,
        to: Query<Option<Param<IsoDate>>>,
    ) -> Result<RevshareResponses, RevshareErrors> {
        let s = &self.0;
        let p = s.partner(&auth).await?;
        let period = period_of(from, to, s.clock.now_ms())?;
        let share = reports::revshare(&s.store, &s.plans, &p, &period).await.map_err(ApiError::from)?;
        let per_entity: Vec<EntityShare> = share
            .shares
            .into_iter()
            .map(|x| EntityShare {
                external_id: x.user.external_id,
                partner_user_id: x.user.id,
                entity_id: x.user.entity_id,
                revshare_pct: x.pct.normalize().to_string(),
                mrr_usd: terms::money(x.mrr),
                payout_usd: terms::money(x.payout),
                window_ends_at: iso(x.window_end_ms),
            })
            .collect();
        Ok(RevshareResponses::Ok(Json(PartnerRevshare {
            partner: RevsharePartner {
                revshare_pct: crate::store::decimal(&p.revshare_pct).normalize().to_string(),
                revshare_triggered_at: share.triggered_at.map(iso),
                id: p.id,
                slug: p.slug,
            },
            period: period_view(&period),
            totals: RevshareTotals {
                attributed_entities: per_entity.len() as i64,
                attributed_mrr_usd: terms::money(share.mrr),
                payout_usd: terms::money(share.payout),
            },
            per_entity,
        })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PARTNER_WEBHOOK_EXAMPLE: &'static str = r#"{
        "headers": {"X-Service-Signature": "t=1795255200,v1=00", "X-Service-Partner": "acme-agents", "X-Service-Nonce": "nonce-0001", "X-Service-Event": "user.created"},
        "body": {"external_id": "user-43"},
        "status": 401,
        "expect": {"/code": "WEBHOOK_SIGNATURE_INVALID"}
    }"#;

    /// A partner's signed events
    ///
    /// `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of the raw body with the partner's signing
    /// secret>`, `X-Service-Partner` (the partner's slug), `X-Service-Nonce` (8 to 128 characters, once per request)
    /// and `X-Service-Event` (`user.created` or `user.deleted`) are all required; `t` may be 5 minutes from the
    /// server's clock either way. Any failure is 401 WEBHOOK_SIGNATURE_INVALID and changes nothing. `user.created`
    /// provisions as POST /partner/provision does (no credentials are answered); `user.deleted` marks the user deleted:
    /// its account's keys stop working and its ledger is kept.
    #[oai(
        path = "/partner/webhook",
        method = "post",
        operation_id = "partnerWebhook",
        code_sample(lang = "json", label = "example", source = "Self::PARTNER_WEBHOOK_EXAMPLE")
    )]
    async fn webhook(
        &self,
        /// `t=<unix seconds>,v1=<hex>`.
        #[oai(name = "X-Service-Signature")]
        _signature: Header<Option<String>>,
        /// The partner's slug.
        #[oai(name = "X-Service-Partner")]
        _partner: Header<Option<String>>,
        /// 8 to 128 characters, unique per request.
        #[oai(name = "X-Service-Nonce")]
        _nonce: Header<Option<String>>,
        /// `user.created` or `user.deleted`.
        #[oai(name = "X-Service-Event")]
        _event: Header<Option<String>>,
        req: &poem::Request,
        mut body: Body<PartnerEventBody>,
    ) -> Result<WebhookResponses, WebhookErrors> {
        let s = &self.0;
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| !v.is_empty());
        let raw = std::mem::take(&mut body.raw);
        let signed = Signed {
            signature: header("X-Service-Signature"),
            partner: header("X-Service-Partner"),
            nonce: header("X-Service-Nonce"),
            event: header("X-Service-Event"),
            body: &raw,
        };
        let now = s.clock.now_ms();
        let verified = events::verify(&s.store, &signed, now).await.map_err(ApiError::from)?;
        let user = event_user(body.parse()?, verified.event)?;
        let ack = PartnerEventAck { ok: true, event: verified.event.to_string(), ..PartnerEventAck::default() };
        let ack = match events::apply(&s.store, &verified, &user, now).await.map_err(ApiError::from)? {
            Applied::Provisioned { user, already } => PartnerEventAck {
                partner_user_id: Some(user.id),
                agenttax_account_id: Some(user.entity_id),
                already_provisioned: Some(already),
                ..ack
            },
            Applied::Deleted { user, already } => PartnerEventAck {
                found: Some(true),
                already_deleted: Some(already),
                entity_id: Some(user.entity_id),
                partner_user_id: Some(user.id),
                ..ack
            },
            Applied::NotFound => PartnerEventAck { found: Some(false), already_deleted: Some(false), ..ack },
        };
        Ok(WebhookResponses::Ok(Json(ack)))
    }
}
