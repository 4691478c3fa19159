//! The partner bodies: provisioning, claiming an account, usage, revenue share and the partner's webhook events.

use poem_openapi::Object;

/// Body of POST /api/v1/partner/provision.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct ProvisionRequest {
    /// The partner's id for its user, 1 to 256 characters, no control characters (U+0000–U+001F, U+007F–U+009F): the idempotency key. A repeat
    /// finds the account provisioned before.
    pub external_id: super::param::ExternalId,
    /// The user's email as the partner knows it (kept with the partner user; the account's own email is the one
    /// set when the user claims it).
    pub email: Option<super::param::Email>,
    #[oai(validator(max_length = 200))]
    pub display_name: Option<String>,
}

/// The account provisioned for a partner's user.
#[derive(Object)]
pub struct ProvisionResponse {
    /// The account's id (`ent_…`; the field name is a wire identifier).
    pub agenttax_account_id: String,
    /// The partner user's id (`pu_…`).
    pub partner_user_id: String,
    /// False on the first provision (201), true on a repeat (200).
    pub already_provisioned: bool,
    /// The account's API key (`svc_live_…`), on the first provision only: store it, it is not shown again.
    pub api_key: Option<String>,
    /// The single-use link with which the user takes the account over (POST to it with an email and a password),
    /// on the first provision only.
    pub claim_url: Option<String>,
    /// When the claim link expires (ISO 8601; 7 days after provisioning).
    pub claim_expires_at: String,
    /// True once the user has claimed the account.
    pub claimed: bool,
}

/// Body of POST /api/v1/partner/claim.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct ClaimRequest {
    /// The email the user logs in with from now on.
    pub email: super::param::Email,
    /// At least 8 characters.
    #[oai(validator(min_length = 8, max_length = 1024))]
    pub password: String,
}

/// An account taken over by its user.
#[derive(Object)]
pub struct ClaimResponse {
    pub success: bool,
    pub agenttax_account_id: String,
    pub partner_user_id: String,
    /// Always true.
    pub claimed: bool,
    /// The email the account now logs in with (POST /api/v1/auth/login).
    pub email: String,
}

/// A partner, as its reports name it.
#[derive(Object)]
pub struct PartnerRef {
    /// `ptn_…`.
    pub id: String,
    pub slug: String,
}

/// A report's period: UTC dates, both included.
#[derive(Object)]
pub struct PeriodView {
    /// YYYY-MM-DD.
    pub from: String,
    /// YYYY-MM-DD.
    pub to: String,
}

/// Usage totals over all the partner's users.
#[derive(Object)]
pub struct UsageTotals {
    /// Ledger rows of the period: keyed calculate calls and ingested records.
    pub calls: i64,
    /// Calls within each user's free calls of their calendar month.
    pub free_tier_calls: i64,
    /// Calls past them, billed at the partner's wholesale price.
    pub billable_calls: i64,
    /// Billable calls at the partner's wholesale price: a decimal string with 6 places.
    pub wholesale_cost_usd: String,
    /// The partner's provisioned users (deleted ones included: their calls still count).
    pub total_users: i64,
}

/// One user's usage.
#[derive(Object)]
pub struct UserUsage {
    /// The partner's id for its user.
    pub external_id: String,
    /// `pu_…`.
    pub partner_user_id: String,
    pub calls: i64,
    /// Calls within the free calls of their month.
    pub free: i64,
    /// Calls past them.
    pub billable: i64,
    /// A decimal string with 6 places.
    pub cost_usd: String,
}

/// How much of `per_user` was returned.
#[derive(Object)]
pub struct UsagePagination {
    /// Users listed in `per_user`.
    pub per_user_returned: i64,
    /// 5000 unless the query's `per_user_cap` is lower.
    pub per_user_cap: i64,
    /// True when the partner has more users than `per_user` lists.
    pub truncated: bool,
    /// Why the list is short, when it is; null otherwise.
    pub truncation_note: Option<String>,
}

/// GET /api/v1/partner/usage.
#[derive(Object)]
pub struct PartnerUsage {
    pub partner: PartnerRef,
    pub period: PeriodView,
    pub totals: UsageTotals,
    pub pagination: UsagePagination,
    /// In the order the users were provisioned.
    pub per_user: Vec<UserUsage>,
}

/// A partner with its current revenue share.
#[derive(Object)]
pub struct RevsharePartner {
    pub id: String,
    pub slug: String,
    /// The partner's rate now (percent, decimal string); each account keeps the rate of its first upgrade.
    pub revshare_pct: String,
    /// The first upgrade of any of the partner's users (ISO 8601), or null.
    pub revshare_triggered_at: Option<String>,
}

/// Revenue-share totals over the accounts contributing in the period.
#[derive(Object)]
pub struct RevshareTotals {
    /// Accounts contributing in the period (those listed in `per_entity`).
    pub attributed_entities: i64,
    /// The sum of their `mrr_usd` (decimal string, 6 places).
    pub attributed_mrr_usd: String,
    /// The sum of their `payout_usd` (decimal string, 6 places).
    pub payout_usd: String,
}

/// One account's share.
#[derive(Object)]
pub struct EntityShare {
    /// The partner's id for its user.
    pub external_id: String,
    /// `pu_…`.
    pub partner_user_id: String,
    /// The account (`ent_…`).
    pub entity_id: String,
    /// Locked at the account's first upgrade (percent, decimal string).
    pub revshare_pct: String,
    /// The monthly price of the account's tax plan now (decimal string, 6 places).
    pub mrr_usd: String,
    /// `mrr_usd` × `revshare_pct` / 100 for each calendar month of the period in the window (6 places).
    pub payout_usd: String,
    /// The first upgrade plus 12 months (ISO 8601); the account stops contributing after it.
    pub window_ends_at: String,
}

/// GET /api/v1/partner/revshare.
#[derive(Object)]
pub struct PartnerRevshare {
    pub partner: RevsharePartner,
    pub period: PeriodView,
    pub totals: RevshareTotals,
    /// The accounts contributing in the period, in the order their users were provisioned.
    pub per_entity: Vec<EntityShare>,
}

/// Body of POST /api/v1/partner/webhook. `user.created` takes all three fields; `user.deleted` takes `external_id`
/// only.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct PartnerEventBody {
    /// The partner's id for its user, 1 to 256 characters, no control characters (U+0000–U+001F, U+007F–U+009F).
    pub external_id: super::param::ExternalId,
    pub email: Option<super::param::Email>,
    #[oai(validator(max_length = 200))]
    pub display_name: Option<String>,
}

/// What a partner's event did.
#[derive(Object, Default)]
pub struct PartnerEventAck {
    /// Always true.
    pub ok: bool,
    /// `user.created` or `user.deleted`.
    pub event: String,
    /// user.created (and user.deleted when found): the partner user.
    pub partner_user_id: Option<String>,
    /// user.created: the account.
    pub agenttax_account_id: Option<String>,
    /// user.created: true when the external id was provisioned before (nothing changed).
    pub already_provisioned: Option<bool>,
    /// user.deleted: whether the partner has a user with this external id.
    pub found: Option<bool>,
    /// user.deleted: true when it was deleted before (nothing changed).
    pub already_deleted: Option<bool>,
    /// user.deleted: the account (its keys no longer work; its ledger is kept).
    pub entity_id: Option<String>,
}
