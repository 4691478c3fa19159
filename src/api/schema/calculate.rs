//! Calculate request and responses (interface spec: "Calculate request", "Calculate response, full" and "demo").

use poem_openapi::{Object, Union};
use std::collections::BTreeMap;

use serde_json::Value;

/// A JSON object whose keys are described in the field's documentation.
pub type Obj = BTreeMap<String, Value>;

use crate::listed_enum;
use crate::rules::schema as engine;

listed_enum!(
    /// US state or DC, two letters.
    StateCode = engine::STATES
);
listed_enum!(Role = engine::ROLES);
listed_enum!(
    /// What is being sold (19 values).
    TransactionType = engine::TRANSACTION_TYPES
);
listed_enum!(
    /// The work behind the sale (11 values); wins over the work type inferred from transaction_type.
    WorkType = engine::WORK_TYPES
);
listed_enum!(UseContext = engine::USE_CONTEXTS);
listed_enum!(DigitalContentType = engine::DIGITAL_CONTENT_TYPES);
listed_enum!(PaymentProviderType = engine::PAYMENT_PROVIDER_TYPES);
listed_enum!(ItSupportScope = engine::IT_SUPPORT_SCOPES);
listed_enum!(MarketplaceRole = engine::MARKETPLACE_ROLES);
listed_enum!(
    /// What the buyer receives: source_code or compiled_artifact complete the attestation; hosted_access or other leave it incomplete.
    Deliverable = engine::DELIVERABLES
);
listed_enum!(Delivery = engine::DELIVERIES);
listed_enum!(
    /// help_desk_only (advice only: releases the support leg in PA, TN, NC) or technical (hands-on support).
    SupportKind = engine::SUPPORT_KINDS
);

/// Facts that make a sale custom software rather than prewritten software.
/// Complete when written_for_buyer and not_offered_to_others are true, deliverable is set, is_modification_of_prewritten
/// is set, and (when that is true) separately_stated_charge is true. Incomplete → answered as prewritten software / SaaS
/// with advisory CUSTOM_SOFTWARE_ATTESTATION_INCOMPLETE.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct CustomSoftwareAttestation {
    pub written_for_buyer: Option<bool>,
    pub not_offered_to_others: Option<bool>,
    pub deliverable: Option<Deliverable>,
    pub is_modification_of_prewritten: Option<bool>,
    /// Required true for a modification; AL also looks at it.
    pub separately_stated_charge: Option<bool>,
    /// TX.
    pub all_rights_transferred: Option<bool>,
    /// AR, SC.
    pub delivery: Option<Delivery>,
    /// IL.
    pub il_requirements_analysis_and_adaptation: Option<bool>,
    /// IL.
    pub il_assembled_modules_50pct: Option<bool>,
}

/// The updates and support parts of a maintenance contract; they must add up to `amount`.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct ItemizedAmounts {
    pub updates: f64,
    pub support: f64,
}

/// Software-maintenance facts; each missing fact is answered conservatively (advisory SOFTWARE_MAINTENANCE_LEG).
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct MaintenanceContract {
    pub mandatory: Option<bool>,
    pub includes_upgrades: Option<bool>,
    pub includes_support: Option<bool>,
    pub separately_itemized: Option<bool>,
    pub itemized_amounts: Option<ItemizedAmounts>,
    /// Default electronic.
    pub update_delivery: Option<Delivery>,
    /// help_desk_only releases support legs in PA, TN, NC.
    pub support_kind: Option<SupportKind>,
    /// CT 1%, IA and NJ exempt, MD 3%.
    pub business_use: Option<bool>,
    /// Recorded only.
    pub seller_sold_software: Option<bool>,
}

/// One state's entry in nexus_override.
#[derive(Object)]
pub struct NexusOverrideEntry {
    #[oai(rename = "hasNexus")]
    pub has_nexus: bool,
}

/// Body of POST /api/v1/calculate. Unknown fields are rejected; every invalid field is reported at once.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct CalculateRequest {
    /// seller (sales tax, default) or buyer (use tax).
    pub role: Option<Role>,
    /// USD, greater than 0 and at most 100000000. Decimal strings such as "100.50" are accepted and normalised.
    /// Amounts keep 28 decimal places (cut toward zero), so the smallest is 0.0000000000000000000000000001.
    #[oai(validator(minimum(value = "0.0000000000000000000000000001"), maximum(value = "100000000")))]
    pub amount: f64,
    pub buyer_state: StateCode,
    /// Two-letter code (upper case) or empty.
    pub seller_state: Option<super::param::StateCodeOrEmpty>,
    /// Five digits or empty; adds the zip's local rate layers.
    #[oai(validator(pattern = r"^([0-9]{5})?$"))]
    pub buyer_zip: Option<String>,
    /// Five digits or empty; required for origin-sourced intrastate sales (TX, UT, AZ, TN; OH license and digital_good).
    #[oai(validator(pattern = r"^([0-9]{5})?$"))]
    pub seller_zip: Option<String>,
    /// Default saas.
    pub transaction_type: Option<TransactionType>,
    pub work_type: Option<WorkType>,
    /// The other party, 1 to 200 characters of A–Z a–z 0–9 _ - . : @.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"^[A-Za-z0-9_\-.:@]+$"))]
    pub counterparty_id: String,
    /// Triggers B2B exemptions (IA) and the MD split rate.
    pub is_b2b: Option<bool>,
    /// MD only, with is_b2b: enterprise_system keeps the 3% leg; individual or mixed moves to 6%. Never lowers tax.
    pub use_context: Option<UseContext>,
    /// With transaction_type digital_good only (otherwise ignored with advisory DIGITAL_CONTENT_TYPE_NOT_APPLIED).
    pub digital_content_type: Option<DigitalContentType>,
    /// For payment_processing_fee; changes the answer in TX, SD, IA; absent gives the conservative answer.
    pub payment_provider_type: Option<PaymentProviderType>,
    /// For it_support; absent means managed_bundle.
    pub it_support_scope: Option<ItSupportScope>,
    /// web_hosting only: true applies the state's SaaS rule where it differs.
    pub includes_prewritten_software_access: Option<bool>,
    /// Required with work_type custom_software.
    pub custom_software_attestation: Option<CustomSoftwareAttestation>,
    /// software_maintenance only.
    pub maintenance_contract: Option<MaintenanceContract>,
    /// Default direct.
    pub marketplace_role: Option<MarketplaceRole>,
    #[oai(validator(max_length = 1000))]
    pub description: Option<String>,
    #[oai(validator(max_length = 200))]
    pub exemption_certificate: Option<String>,
    /// Demo calls and calls paid per call (x402, MPP) only; keyed calls use the account's stored nexus and reject
    /// this field: state → {hasNexus}.
    pub nexus_override: Option<super::param::StateMap<NexusOverrideEntry>>,
    /// Demo calls only: the counterparty's year-to-date payments before this one (at least 0).
    #[oai(validator(minimum(value = "0")))]
    pub vendor_ytd_override: Option<f64>,
    /// Buyer role: true means the seller already collected (use tax 0); false means the buyer self-assesses.
    pub seller_remitting: Option<bool>,
}

/// A sales- or use-tax line.
#[derive(Object)]
pub struct TaxLine {
    /// The jurisdiction that taxes the sale: the locality and state (e.g. "Austin, TX"), or the state.
    pub jurisdiction: String,
    /// Two-letter state code.
    pub state: String,
    /// The rate applied (fraction: 0.0825 is 8.25%).
    pub rate: f64,
    /// Tax in USD, rounded half away from zero to cents.
    pub amount: f64,
    /// sales_tax or use_tax.
    #[oai(rename = "type")]
    pub kind: Option<String>,
    /// Why the line is what it is (an exemption, missing nexus, a marketplace collection).
    pub reason: Option<String>,
    /// The exemption applied, when one applied.
    pub exemption: Option<Value>,
    /// The state rate.
    pub state_rate: Option<f64>,
    /// The sum of the local layers for the zip (0 without a zip or a locality).
    pub local_rate: Option<f64>,
    /// State plus local rate.
    pub combined_rate: Option<f64>,
    /// The amount before any partial base.
    pub gross_amount: Option<f64>,
    /// The part of the amount the rate applies to.
    pub taxable_amount: Option<f64>,
    /// taxable_amount as a percentage of gross_amount.
    pub taxable_percentage: Option<f64>,
    /// A remark for the reader.
    pub note: Option<String>,
    /// Maintenance contracts: one entry per leg.
    pub legs: Option<Vec<Value>>,
}

#[derive(Object)]
pub struct SellerRemitting {
    /// collected or not_collected.
    pub status: String,
    /// network_verified or self_reported.
    pub source: String,
}

/// The counterparty's running total for the information-return threshold (600 USD to tax year 2025, 2000 USD from 2026).
#[derive(Object)]
pub struct Tracking1099 {
    /// The counterparty as sent.
    pub counterparty_id: String,
    /// This payment (USD).
    pub payment_this_transaction: f64,
    /// Payments to the counterparty in the tax year, this one included (USD).
    pub vendor_ytd_total: f64,
    /// The information-return threshold for the tax year (USD).
    pub threshold: f64,
    /// True once vendor_ytd_total reaches the threshold.
    pub threshold_exceeded: bool,
    /// The form to file once the threshold is reached, else null.
    pub form_required: Option<String>,
    /// The calendar tax year.
    pub tax_year: i32,
}

#[derive(Object)]
pub struct Confidence {
    /// 0 to 100.
    pub score: u32,
    /// complete, high, partial or minimal.
    pub level: String,
    /// What raised or lowered the confidence.
    pub factors: Vec<String>,
}

#[derive(Object)]
pub struct ConfidenceSummary {
    /// 0 to 100.
    pub score: u32,
    /// complete, high, partial or minimal.
    pub level: String,
}

/// Something the caller should know; codes are listed in rules/advisories.yaml.
#[derive(Object)]
pub struct Advisory {
    #[oai(rename = "type")]
    pub kind: String,
    /// The message.
    pub advisory: String,
    /// Stable advisory code.
    pub code: Option<String>,
    /// Two-letter state code.
    pub state: Option<String>,
    /// True when the caller should act on it.
    pub flagged: Option<bool>,
    /// How settled the answer is.
    pub confidence: Option<String>,
}

/// Where a tax amount goes.
#[derive(Object)]
pub struct RoutingEntry {
    #[oai(rename = "type")]
    pub kind: String,
    /// Amount in USD.
    pub amount: f64,
    /// Who receives the amount.
    pub destination: String,
    /// The jurisdiction that taxes the sale: the locality and state (e.g. "Austin, TX"), or the state.
    pub jurisdiction: String,
}

/// The tax a seller call would owe with nexus; never included in total_tax.
#[derive(Object)]
pub struct TaxIfNexus {
    /// Tax in USD.
    pub total_tax: f64,
    /// State plus local rate.
    pub combined_rate: Option<f64>,
    /// What the hypothetical assumes.
    pub basis: String,
}

#[derive(Object)]
pub struct B2bDetection {
    /// Whether the sale is treated as business-to-business.
    pub is_b2b: bool,
    /// How that was decided: declared (the caller's is_b2b), network_verified (the counterparty's network profile,
    /// when the caller did not declare it) or default (neither: not business-to-business).
    pub method: String,
    /// The business behind the counterparty, when its network profile says whether it is one.
    pub counterparty_principal: Option<String>,
    /// A remark for the reader.
    pub note: String,
}

/// The counterparty's network profile, when `counterparty_id` names an agent on the network (a public profile,
/// or one of the caller's own).
#[derive(Object)]
pub struct CounterpartyProfile {
    pub agent_id: String,
    pub entity_name: String,
    pub entity_state: Option<String>,
    pub work_type: Option<String>,
    /// The principal's legal name.
    pub legal_name: Option<String>,
    /// Whether the principal is a business.
    pub is_business: Option<bool>,
}

/// What the counterparty should know, for the caller to forward: that the buyer owes use tax a seller without
/// nexus does not collect; that a 1099 form will be due to a vendor whose payments this year reached the threshold.
#[derive(Object)]
pub struct CounterpartyNotice {
    pub counterparty_id: String,
    /// Whether the counterparty is on the network (see network_profile).
    pub on_agenttax: bool,
    /// Addressed to the counterparty.
    pub message: String,
    /// True: pass the message on.
    pub forward_to_counterparty: bool,
}

/// A state where this account's sales reached 80% or more of the economic-nexus threshold.
#[derive(Object)]
pub struct NexusAlert {
    /// Two-letter state code.
    pub state: String,
    /// approaching (80% to 99%) or reached (100% or more).
    pub level: String,
    /// Sales counted over the threshold's period.
    pub revenue: f64,
    pub transactions: i64,
    pub threshold_amount: Option<f64>,
    pub threshold_transactions: Option<i64>,
    /// The larger of the prongs' percentages.
    pub percent_of_threshold: f64,
    /// The period the threshold is measured over (e.g. previous_or_current_calendar_year).
    pub period: String,
    pub period_start: String,
    pub period_end: String,
    pub has_nexus: bool,
    /// What to do.
    pub message: String,
}

/// How the answer was reached, with the law it applied.
#[derive(Object)]
pub struct AuditTrail {
    /// The tax engine version (1.5).
    pub engine_version: String,
    pub rules_version: String,
    /// The date the rules were applied as of.
    pub as_of: String,
    /// level (state, local, special_rule), name, rate, applied, source (citation).
    pub jurisdiction_chain: Vec<Obj>,
    /// State plus local rate.
    pub combined_rate: f64,
    /// input_transaction_type, input_work_type, resolved_work_type, work_type_source, economic_category, derivation (how the work type was reached), label, digital_content_type_applied.
    pub classification: Obj,
    /// source, state, category, taxable, note, digital_content_type_override, digital_content_type_rule.
    pub taxability: Obj,
    /// check, result, detail: every rule considered.
    pub exemptions_evaluated: Vec<Obj>,
    /// taxable, an exemption type, or no_nexus.
    pub final_determination: String,
    /// id, settlement (citation), note.
    pub policy_references: Vec<Obj>,
}

/// The full answer (calls with an API key, or paid per call with x402 or MPP).
#[derive(Object)]
pub struct FullCalculation {
    /// Always true on success.
    pub success: bool,
    /// The tax engine version (1.5).
    pub engine_version: String,
    /// live (an API key), x402 or mpp (paid per call, no key).
    pub mode: String,
    /// The response format version.
    pub api_version: String,
    /// Server-generated.
    pub transaction_id: String,
    /// When the answer was computed (UTC, ISO 8601).
    pub timestamp: String,
    /// The account the call was made for.
    pub entity_id: String,
    /// seller (sales tax) or buyer (use tax).
    pub role: String,
    /// Amount in USD.
    pub amount: f64,
    /// The buyer's state.
    pub buyer_state: String,
    /// The buyer's zip, or null.
    pub buyer_zip: Option<String>,
    /// The seller's state, or empty.
    pub seller_state: String,
    /// The seller's zip, or null.
    pub seller_zip: Option<String>,
    /// origin or destination.
    pub sourcing_rule: String,
    /// seller, facilitator or direct.
    pub marketplace_role: String,
    /// The sum of the local layers for the zip (0 without a zip or a locality).
    pub local_rate: f64,
    /// State plus local rate.
    pub combined_rate: f64,
    /// The locality and state, e.g. "Austin, TX".
    pub jurisdiction: String,
    /// The transaction type (default saas).
    pub transaction_type: String,
    /// The economic category the taxability rules look at.
    pub transaction_category: String,
    /// The work type, declared or inferred.
    pub work_type: String,
    /// A readable label for the work type.
    pub work_type_label: String,
    /// The economic category the work type (declared or inferred) maps to: data_processing for compute,
    /// financial_service for trading. How it was reached is in classification_note and audit_trail.classification.
    pub classification_basis: String,
    /// Whether the sale is treated as business-to-business.
    pub is_b2b: bool,
    /// The MD use context as sent, or null.
    pub use_context: Option<String>,
    /// The counterparty as sent.
    pub counterparty_id: String,
    /// The declared digital content type, echoed, or null.
    pub digital_content_type: Option<String>,
    /// The classification facts declared with the request (empty when none).
    pub classification_facts: Option<Obj>,
    /// The sales-tax line (seller role), or null.
    pub sales_tax: Option<TaxLine>,
    /// The use-tax line (buyer role), or null.
    pub use_tax: Option<TaxLine>,
    /// Buyer role: whether the seller collected.
    pub seller_remitting: Option<SellerRemitting>,
    /// The counterparty's 1099 running total.
    pub tracking_1099: Option<Tracking1099>,
    /// Present when there is something the counterparty should know.
    pub counterparty_notice: Option<CounterpartyNotice>,
    /// How settled the answer is.
    pub confidence: Confidence,
    /// Things the caller should know.
    pub advisories: Vec<Advisory>,
    /// Where each tax amount goes.
    pub routing: Vec<RoutingEntry>,
    /// The tax the caller is responsible for.
    pub total_tax: f64,
    /// False when the account never configured nexus (seller calls then answer 0).
    pub nexus_configured: bool,
    /// The classification in words.
    pub classification_note: String,
    /// Estimates, not legal or tax advice.
    pub disclaimer: String,
    /// True when a marketplace facilitator collects the tax (marketplace_remitted_tax).
    pub collected_by_marketplace: bool,
    /// The tax the facilitator collects and remits.
    pub marketplace_remitted_tax: Option<f64>,
    /// Marketplace-seller calls only; false only where a statute excludes facilitated sales (VA).
    pub counts_toward_nexus_threshold: Option<bool>,
    /// The exemption applied, when one applied.
    pub exemption: Option<Value>,
    pub tax_if_nexus: Option<TaxIfNexus>,
    /// How is_b2b was determined.
    pub b2b_detection: Option<B2bDetection>,
    /// The counterparty's network profile, when it is on the network.
    pub network_profile: Option<CounterpartyProfile>,
    /// Present when any state is at 80% or more of its economic-nexus threshold.
    pub nexus_alerts: Option<Vec<NexusAlert>>,
    /// Taxes that apply without the seller's nexus (e.g. the Chicago lease tax).
    pub special_taxes: Option<Vec<Value>>,
    pub audit_trail: Option<AuditTrail>,
    /// On calls paid per call (mode x402 or mpp): what an API key adds, where to sign up, and the free plan's
    /// allowance. Absent with an API key.
    pub upgrade: Option<Upgrade>,
}

/// How to move past the demo, or past paying per call.
#[derive(Object)]
pub struct Upgrade {
    /// What to do.
    pub message: String,
    /// Where to sign up.
    pub signup: String,
    /// What the free plan includes.
    pub free_tier: String,
}

/// The demo answer (calls without a key): totals without the breakdown.
#[derive(Object)]
pub struct DemoCalculation {
    /// Always true on success.
    pub success: bool,
    /// The tax engine version (1.5).
    pub engine_version: String,
    pub transaction_id: String,
    /// When the answer was computed (UTC, ISO 8601).
    pub timestamp: String,
    /// demo.
    pub mode: String,
    /// seller (sales tax) or buyer (use tax).
    pub role: String,
    /// Amount in USD.
    pub amount: f64,
    /// The buyer's state.
    pub buyer_state: String,
    /// The buyer's zip, or null.
    pub buyer_zip: Option<String>,
    /// The transaction type (default saas).
    pub transaction_type: String,
    /// The work type, declared or inferred.
    pub work_type: String,
    /// The economic category the work type (declared or inferred) maps to: data_processing for compute,
    /// financial_service for trading. How it was reached is in classification_note and audit_trail.classification.
    pub classification_basis: String,
    /// Whether the sale is treated as business-to-business.
    pub is_b2b: bool,
    /// The declared digital content type, echoed, or null.
    pub digital_content_type: Option<String>,
    /// The classification facts declared with the request (empty when none).
    pub classification_facts: Obj,
    /// Tax in USD.
    pub total_tax: f64,
    /// State plus local rate.
    pub combined_rate: f64,
    /// The effective rate on the whole amount (tax ÷ amount).
    pub applied_rate: f64,
    /// Whether nexus was declared for buyer_state (demo: via nexus_override).
    pub nexus_configured_for_state: bool,
    /// How settled the answer is.
    pub confidence: ConfidenceSummary,
    /// Estimates, not legal or tax advice.
    pub disclaimer: String,
    /// How to get full answers.
    pub upgrade: Upgrade,
    /// When 0.00 comes from an exemption.
    pub exemption: Option<Value>,
    /// When 0.00 comes from missing nexus (see nexus_override).
    pub tax_if_nexus: Option<TaxIfNexus>,
}

/// Full with an API key; demo without.
#[derive(Union)]
pub enum Calculation {
    Full(Box<FullCalculation>),
    Demo(Box<DemoCalculation>),
}
