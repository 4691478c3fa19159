//! Calculate request and responses (interface spec: "Calculate request", "Calculate response, full" and "demo").

use poem_openapi::{Enum, Object, Union};
use std::collections::BTreeMap;

use serde_json::Value;

/// A JSON object whose keys are described in the field's documentation.
pub type Obj = BTreeMap<String, Value>;

/// US state or DC, two letters.
#[derive(Enum, Clone, Copy)]
#[allow(clippy::upper_case_acronyms)]
pub enum StateCode { AL, AK, AZ, AR, CA, CO, CT, DE, FL, GA, HI, ID, IL, IN, IA, KS, KY, LA, ME, MD, MA, MI, MN, MS, MO, MT, NE, NV, NH, NJ, NM, NY, NC, ND, OH, OK, OR, PA, RI, SC, SD, TN, TX, UT, VT, VA, WA, WV, WI, WY, DC }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum Role { Seller, Buyer }

/// What is being sold (19 values).
#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum TransactionType { Compute, ApiAccess, DataPurchase, Saas, AiLabor, Storage, DigitalGood, Consulting, DataProcessing, CloudInfrastructure, AiModelAccess, MarketplaceFee, Subscription, License, Service, PaymentProcessingFee, WebHosting, SoftwareMaintenance, ItSupport }

/// The work behind the sale (11 values); wins over the work type inferred from transaction_type.
#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum WorkType { Compute, Research, InformationService, Content, Consulting, Trading, PaymentProcessing, WebHosting, SoftwareMaintenance, ItSupport, CustomSoftware }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum UseContext { EnterpriseSystem, Individual, Mixed }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum DigitalContentType { Ebook, Audio, Video, ArtImage, Photograph, PrintableDocument, Software, Data, Other }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum PaymentProviderType { Bank, LicensedMoneyTransmitter, CardNetwork, ProcessorRoutingToBankOrNetwork, Other }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum ItSupportScope { HelpDeskAdvice, RemoteRepairOrConfig, SoftwareInstallation, Monitoring, SecurityMonitoring, ManagedBundle }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum MarketplaceRole { Seller, Facilitator, Direct }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum Deliverable { SourceCode, CompiledArtifact }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum Delivery { Electronic, Tangible }

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum SupportKind { HelpDeskOnly, Full }

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
    #[oai(validator(minimum(value = "0", exclusive), maximum(value = "100000000")))]
    pub amount: f64,
    pub buyer_state: StateCode,
    /// Two-letter code or empty.
    pub seller_state: Option<String>,
    /// Five digits or empty; adds the zip's local rate layers.
    #[oai(validator(pattern = r"^(\d{5})?$"))]
    pub buyer_zip: Option<String>,
    /// Five digits or empty; required for origin-sourced intrastate sales (TX, UT, AZ, TN; OH license and digital_good).
    #[oai(validator(pattern = r"^(\d{5})?$"))]
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
    /// Demo calls only (keyed live calls use the account's stored nexus and reject this field): state → {hasNexus}.
    pub nexus_override: Option<std::collections::BTreeMap<String, NexusOverrideEntry>>,
    /// Demo calls only: the counterparty's year-to-date payments before this one (at least 0).
    #[oai(validator(minimum(value = "0")))]
    pub vendor_ytd_override: Option<f64>,
    /// Buyer role: true means the seller already collected (use tax 0); false means the buyer self-assesses.
    pub seller_remitting: Option<bool>,
}

/// A sales- or use-tax line.
#[derive(Object)]
pub struct TaxLine {
    pub jurisdiction: String,
    pub state: String,
    pub rate: f64,
    /// Tax in USD, rounded half away from zero to cents.
    pub amount: f64,
    /// sales_tax or use_tax.
    #[oai(rename = "type")]
    pub kind: Option<String>,
    pub reason: Option<String>,
    pub exemption: Option<Value>,
    pub state_rate: Option<f64>,
    pub local_rate: Option<f64>,
    pub combined_rate: Option<f64>,
    pub gross_amount: Option<f64>,
    pub taxable_amount: Option<f64>,
    pub taxable_percentage: Option<f64>,
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
    pub counterparty_id: String,
    pub payment_this_transaction: f64,
    pub vendor_ytd_total: f64,
    pub threshold: f64,
    pub threshold_exceeded: bool,
    pub form_required: Option<String>,
    pub tax_year: i32,
}

#[derive(Object)]
pub struct Confidence {
    /// 0 to 100.
    pub score: u32,
    /// complete, high, partial or minimal.
    pub level: String,
    pub factors: Vec<String>,
}

#[derive(Object)]
pub struct ConfidenceSummary {
    pub score: u32,
    pub level: String,
}

/// Something the caller should know; codes are listed in rules/advisories.yaml.
#[derive(Object)]
pub struct Advisory {
    #[oai(rename = "type")]
    pub kind: String,
    pub advisory: String,
    pub code: Option<String>,
    pub state: Option<String>,
    pub flagged: Option<bool>,
    pub confidence: Option<String>,
}

/// Where a tax amount goes.
#[derive(Object)]
pub struct RoutingEntry {
    #[oai(rename = "type")]
    pub kind: String,
    pub amount: f64,
    pub destination: String,
    pub jurisdiction: String,
}

/// The tax a seller call would owe with nexus; never included in total_tax.
#[derive(Object)]
pub struct TaxIfNexus {
    pub total_tax: f64,
    pub combined_rate: Option<f64>,
    pub basis: String,
}

#[derive(Object)]
pub struct B2bDetection {
    pub is_b2b: bool,
    pub method: String,
    pub counterparty_principal: Option<String>,
    pub note: String,
}

/// A state where this account's sales reached 80% or more of the economic-nexus threshold.
#[derive(Object)]
pub struct NexusAlert {
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
    pub message: String,
}

/// How the answer was reached, with the law it applied.
#[derive(Object)]
pub struct AuditTrail {
    pub engine_version: String,
    pub rules_version: String,
    /// The date the rules were applied as of.
    pub as_of: String,
    /// level (state, local, special_rule), name, rate, applied, source (citation).
    pub jurisdiction_chain: Vec<Obj>,
    pub combined_rate: f64,
    /// input_transaction_type, input_work_type, resolved_work_type, work_type_source, economic_category, label, digital_content_type_applied.
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

/// The full answer (calls with an API key).
#[derive(Object)]
pub struct FullCalculation {
    pub success: bool,
    pub engine_version: String,
    /// live for API-key calls.
    pub mode: String,
    pub api_version: String,
    /// Server-generated.
    pub transaction_id: String,
    pub timestamp: String,
    pub entity_id: String,
    pub role: String,
    pub amount: f64,
    pub buyer_state: String,
    pub buyer_zip: Option<String>,
    pub seller_state: String,
    pub seller_zip: Option<String>,
    /// origin or destination.
    pub sourcing_rule: String,
    pub marketplace_role: String,
    pub local_rate: f64,
    pub combined_rate: f64,
    /// The locality and state, e.g. "Austin, TX".
    pub jurisdiction: String,
    pub transaction_type: String,
    pub transaction_category: String,
    pub work_type: String,
    pub work_type_label: String,
    pub classification_basis: String,
    pub is_b2b: bool,
    pub use_context: Option<String>,
    pub counterparty_id: String,
    pub digital_content_type: Option<String>,
    pub classification_facts: Option<Obj>,
    pub sales_tax: Option<TaxLine>,
    pub use_tax: Option<TaxLine>,
    pub seller_remitting: Option<SellerRemitting>,
    pub tracking_1099: Option<Tracking1099>,
    pub confidence: Confidence,
    pub advisories: Vec<Advisory>,
    pub routing: Vec<RoutingEntry>,
    /// The tax the caller is responsible for.
    pub total_tax: f64,
    pub nexus_configured: bool,
    pub classification_note: String,
    pub disclaimer: String,
    pub collected_by_marketplace: bool,
    pub marketplace_remitted_tax: Option<f64>,
    /// Marketplace-seller calls only; false only where a statute excludes facilitated sales (VA).
    pub counts_toward_nexus_threshold: Option<bool>,
    pub exemption: Option<Value>,
    pub tax_if_nexus: Option<TaxIfNexus>,
    pub b2b_detection: Option<B2bDetection>,
    /// Present when any state is at 80% or more of its economic-nexus threshold.
    pub nexus_alerts: Option<Vec<NexusAlert>>,
    /// Taxes that apply without the seller's nexus (e.g. the Chicago lease tax).
    pub special_taxes: Option<Vec<Value>>,
    pub audit_trail: Option<AuditTrail>,
}

/// How to move past the demo.
#[derive(Object)]
pub struct Upgrade {
    pub message: String,
    pub signup: String,
    pub free_tier: String,
}

/// The demo answer (calls without a key): totals without the breakdown.
#[derive(Object)]
pub struct DemoCalculation {
    pub success: bool,
    pub engine_version: String,
    pub transaction_id: String,
    pub timestamp: String,
    /// demo.
    pub mode: String,
    pub role: String,
    pub amount: f64,
    pub buyer_state: String,
    pub buyer_zip: Option<String>,
    pub transaction_type: String,
    pub work_type: String,
    pub classification_basis: String,
    pub is_b2b: bool,
    pub digital_content_type: Option<String>,
    pub classification_facts: Obj,
    pub total_tax: f64,
    pub combined_rate: f64,
    pub applied_rate: f64,
    pub nexus_configured_for_state: bool,
    pub confidence: ConfidenceSummary,
    pub disclaimer: String,
    pub upgrade: Upgrade,
    /// When 0.00 comes from an exemption.
    pub exemption: Option<Value>,
    /// When 0.00 comes from missing nexus (see nexus_override).
    pub tax_if_nexus: Option<TaxIfNexus>,
}

/// Full with an API key; demo without.
#[derive(Union)]
pub enum Calculation {
    Full(FullCalculation),
    Demo(DemoCalculation),
}
