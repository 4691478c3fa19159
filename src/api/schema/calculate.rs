//! Calculate request and responses (interface spec: "Calculate request", "Calculate response, full" and "demo").

use poem_openapi::{Object, Union};
use std::collections::BTreeMap;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ParseResult, Type};
use serde_json::Value;
use std::borrow::Cow;

use super::number::{Exact, Fraction, Usd};
use super::param;

/// A JSON object whose keys are described in the field's documentation.
pub type Obj = BTreeMap<String, Value>;

use crate::engine::{FieldError, Request};
use crate::listed_enum;
use crate::rules::schema as engine;
use crate::rules::schema::Fact;

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
    pub updates: param::Dollars,
    pub support: param::Dollars,
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
    pub amount: param::Amount,
    pub buyer_state: StateCode,
    /// Two-letter code (upper case) or empty.
    pub seller_state: Option<super::param::StateCodeOrEmpty>,
    /// Five digits, ZIP+4 (`55401-1234`) or empty; adds the zip's local rate layers (a ZIP+4 selects the part of a
    /// zip code that straddles jurisdictions, where the boundary rows have ZIP+4 ranges).
    pub buyer_zip: Option<param::ZipOrEmpty>,
    /// Five digits, ZIP+4 or empty; required for origin-sourced intrastate sales (TX, UT, AZ, TN; OH license and
    /// digital_good).
    pub seller_zip: Option<param::ZipOrEmpty>,
    /// Default saas.
    pub transaction_type: Option<TransactionType>,
    pub work_type: Option<WorkType>,
    /// The other party, 1 to 200 characters of A–Z a–z 0–9 _ - . : @.
    pub counterparty_id: param::AgentIdParam,
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
    pub vendor_ytd_override: Option<param::Dollars>,
    /// Buyer role: true means the seller already collected (use tax 0); false means the buyer self-assesses.
    pub seller_remitting: Option<bool>,
}

/// A calculate request body read through [`CalculateRequest`]: checked against the schema the document shows
/// (`api::conform`, every problem at once), parsed, and taken into the engine's request. The caller's own words
/// (the classification facts it declared) are echoed from `body` as sent.
pub fn read_request(body: &Value) -> Result<Request, Vec<FieldError>> {
    let mut checked = body.clone();
    let errors = crate::api::conform::contract::<CalculateRequest>().check(&mut checked);
    if !errors.is_empty() {
        return Err(errors);
    }
    CalculateRequest::read_checked(checked, body)
}

/// The facts declared with a request that its answer echoes (`classification_facts`), in the answer's order.
const ECHOED: [&str; 8] = [
    "is_b2b",
    "includes_prewritten_software_access",
    "use_context",
    "digital_content_type",
    "payment_provider_type",
    "it_support_scope",
    "custom_software_attestation",
    "maintenance_contract",
];

impl CalculateRequest {
    /// A body `api::conform` has found good (`checked`, as the check left it) parsed and taken into the engine's
    /// request; `sent` is the body as sent.
    pub fn read_checked(checked: Value, sent: &Value) -> Result<Request, Vec<FieldError>> {
        let typed = <CalculateRequest as ParseFromJSON>::parse_from_json(Some(checked))
            .map_err(|e| vec![FieldError { field: "body".into(), message: e.into_message() }])?;
        typed.into_request(sent.as_object().unwrap_or(&serde_json::Map::new()))
    }

    /// The engine's request. The schema has stated every field's type, values and bounds; what remains is the rule
    /// across fields (a maintenance contract's itemized parts add up to the amount).
    fn into_request(self, sent: &serde_json::Map<String, Value>) -> Result<Request, Vec<FieldError>> {
        let mut errors = Vec::new();
        let amount = param::exact(&self.amount.0).unwrap_or_default();
        let state = |code: &str, field: &str, errors: &mut Vec<FieldError>| {
            let i = engine::state_index(&code.to_ascii_uppercase());
            if i.is_none() {
                errors.push(FieldError { field: field.into(), message: format!("`{code}` is not a state code") });
            }
            i
        };
        let buyer_state = state(&self.buyer_state.0, "buyer_state", &mut errors).unwrap_or_default();
        let mut r = Request::new(amount, buyer_state, self.counterparty_id.text().to_string());
        r.seller_state =
            self.seller_state.as_ref().map(|s| s.text()).filter(|s| !s.is_empty()).and_then(|s| state(s, "seller_state", &mut errors));
        if let Some(s) = r.seller_state {
            r.facts.set(Fact::seller_state, s as u16);
            r.facts.set_bool(Fact::intrastate, s == buyer_state);
        }
        let zip = |z: Option<param::ZipOrEmpty>| z.map(|z| z.text().to_string()).filter(|z| !z.is_empty());
        (r.buyer_zip, r.seller_zip) = (zip(self.buyer_zip), zip(self.seller_zip));
        if self.work_type.is_some() {
            r.facts.set(Fact::work_type_source, 0);
        }
        let mut listed = vec![
            (Fact::role, self.role.map(|v| v.0)),
            (Fact::transaction_type, self.transaction_type.map(|v| v.0)),
            (Fact::work_type, self.work_type.map(|v| v.0)),
            (Fact::use_context, self.use_context.map(|v| v.0)),
            (Fact::digital_content_type, self.digital_content_type.map(|v| v.0)),
            (Fact::payment_provider_type, self.payment_provider_type.map(|v| v.0)),
            (Fact::it_support_scope, self.it_support_scope.map(|v| v.0)),
            (Fact::marketplace_role, self.marketplace_role.map(|v| v.0)),
        ];
        let mut flags =
            vec![(Fact::is_b2b, self.is_b2b), (Fact::includes_prewritten_software_access, self.includes_prewritten_software_access)];
        if let Some(a) = self.custom_software_attestation {
            r.has_attestation = true;
            listed.extend([(Fact::deliverable, a.deliverable.map(|v| v.0)), (Fact::delivery, a.delivery.map(|v| v.0))]);
            flags.extend([
                (Fact::written_for_buyer, a.written_for_buyer),
                (Fact::not_offered_to_others, a.not_offered_to_others),
                (Fact::is_modification_of_prewritten, a.is_modification_of_prewritten),
                (Fact::separately_stated_charge, a.separately_stated_charge),
                (Fact::all_rights_transferred, a.all_rights_transferred),
                (Fact::il_requirements_analysis_and_adaptation, a.il_requirements_analysis_and_adaptation),
                (Fact::il_assembled_modules_50pct, a.il_assembled_modules_50pct),
            ]);
        }
        if let Some(m) = self.maintenance_contract {
            listed.extend([(Fact::update_delivery, m.update_delivery.map(|v| v.0)), (Fact::support_kind, m.support_kind.map(|v| v.0))]);
            flags.extend([
                (Fact::mandatory, m.mandatory),
                (Fact::includes_upgrades, m.includes_upgrades),
                (Fact::includes_support, m.includes_support),
                (Fact::separately_itemized, m.separately_itemized),
                (Fact::business_use, m.business_use),
                (Fact::seller_sold_software, m.seller_sold_software),
            ]);
            if let Some(i) = m.itemized_amounts {
                let (u, s) = (param::exact(&i.updates.0).unwrap_or_default(), param::exact(&i.support.0).unwrap_or_default());
                if u + s == amount {
                    r.itemized = Some((u, s));
                } else {
                    let message = format!("updates + support must equal amount ({u} + {s} ≠ {amount})");
                    errors.push(FieldError { field: "maintenance_contract.itemized_amounts".into(), message });
                }
            }
        }
        for (fact, value) in listed {
            let Some(value) = value else { continue };
            match fact.def().kind.index_of(&value) {
                Some(i) => r.facts.set(fact, i),
                None => {
                    errors.push(FieldError { field: fact.name().into(), message: format!("`{value}` is not a value of {}", fact.name()) })
                }
            }
        }
        for (fact, value) in flags {
            if let Some(b) = value {
                r.facts.set_bool(fact, b);
            }
        }
        r.description = self.description.unwrap_or_default();
        r.exemption_certificate = self.exemption_certificate.filter(|c| !c.trim().is_empty());
        if r.exemption_certificate.is_some() {
            r.facts.set_bool(Fact::has_exemption_certificate, true);
        }
        if let Some(n) = self.nexus_override {
            let mut map = BTreeMap::new();
            for (code, entry) in n.0 {
                if let Some(i) = state(&code, &format!("nexus_override.{code}"), &mut errors) {
                    map.insert(i, entry.has_nexus);
                }
            }
            r.nexus_override = Some(map);
        }
        r.vendor_ytd_override = self.vendor_ytd_override.and_then(|v| param::exact(&v.0));
        r.seller_remitting = self.seller_remitting;
        r.classification_facts =
            ECHOED.iter().filter_map(|k| sent.get(*k).filter(|v| !v.is_null()).map(|v| (k.to_string(), v.clone()))).collect();
        if errors.is_empty() {
            Ok(r)
        } else {
            Err(errors)
        }
    }
}

// The responses. Their fields are in the order the engine's renderer (`crate::engine::render`) writes them, and
// a member it leaves out when there is nothing to say is `skip_serializing_if_is_none`, one it writes as null a
// plain `Option`: `api::calculate_contract` parses every sample answer into these types and writes it again,
// byte for byte the same.

param::documented!(
    /// The classification facts declared with the request, echoed as sent (empty when none).
    DeclaredFacts => MetaSchema::new("object")
);

/// A sales- or use-tax line.
#[derive(Object)]
pub struct TaxLine {
    /// The jurisdiction that taxes the sale: the locality and state (e.g. "Austin, TX"), or the state.
    pub jurisdiction: String,
    /// Two-letter state code.
    pub state: String,
    /// The rate applied (fraction: 0.0825 is 8.25%).
    pub rate: Fraction,
    /// Tax in USD, rounded half away from zero to cents.
    pub amount: Usd,
    /// sales_tax or use_tax.
    #[oai(rename = "type")]
    pub kind: String,
    /// Why the line is what it is (an exemption, missing nexus, a marketplace collection).
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    /// With the rule's own reason: what the rule decided (taxable, or an exemption type).
    #[oai(skip_serializing_if_is_none)]
    pub exemption: Option<String>,
    /// Use tax: the state rate.
    #[oai(skip_serializing_if_is_none)]
    pub state_rate: Option<Fraction>,
    /// Use tax: the sum of the local layers for the zip (0 without a zip or a locality).
    #[oai(skip_serializing_if_is_none)]
    pub local_rate: Option<Fraction>,
    /// Use tax: state plus local rate.
    #[oai(skip_serializing_if_is_none)]
    pub combined_rate: Option<Fraction>,
    /// Use tax: the amount before any partial base (USD).
    #[oai(skip_serializing_if_is_none)]
    pub gross_amount: Option<Usd>,
    /// Use tax: the part of the amount the rate applies to (USD).
    #[oai(skip_serializing_if_is_none)]
    pub taxable_amount: Option<Usd>,
    /// Use tax: taxable_amount as a percentage of gross_amount.
    #[oai(skip_serializing_if_is_none)]
    pub taxable_percentage: Option<Exact>,
    /// A remark for the reader (use tax the seller already collected).
    #[oai(skip_serializing_if_is_none)]
    pub note: Option<String>,
    /// A sale of several legs (a maintenance contract's updates and support): one entry per leg.
    #[oai(skip_serializing_if_is_none)]
    pub legs: Option<Vec<TaxLeg>>,
}

/// One leg of a sale taxed in parts.
#[derive(Object)]
pub struct TaxLeg {
    /// The leg (updates, support, …).
    pub leg: String,
    /// The leg's part of the amount (USD).
    pub amount: Usd,
    /// The rate applied to it.
    pub rate: Fraction,
    /// Its tax (USD).
    pub tax: Usd,
    /// The rule that decided it.
    pub rule: String,
    /// taxable, or an exemption type.
    pub result: String,
}

#[derive(Object)]
pub struct SellerRemitting {
    /// collected or not_collected.
    pub status: String,
    /// self_reported (the caller's seller_remitting).
    pub source: String,
}

/// The counterparty's running total for the information-return threshold (600 USD to tax year 2025, 2000 USD from 2026).
#[derive(Object)]
pub struct Tracking1099 {
    /// The counterparty as sent.
    pub counterparty_id: String,
    /// This payment (USD).
    pub payment_this_transaction: Usd,
    /// Payments to the counterparty in the tax year, this one included (USD).
    pub vendor_ytd_total: Usd,
    /// The information-return threshold for the tax year (USD).
    pub threshold: Usd,
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
    /// What kind of advisory it is.
    #[oai(rename = "type")]
    pub kind: String,
    /// The message.
    pub advisory: String,
    /// Stable advisory code.
    pub code: String,
    /// True when the caller should act on it.
    pub flagged: bool,
    /// Two-letter state code, when the advisory is about one state.
    #[oai(skip_serializing_if_is_none)]
    pub state: Option<String>,
}

/// Where a tax amount goes.
#[derive(Object)]
pub struct RoutingEntry {
    #[oai(rename = "type")]
    pub kind: String,
    /// Amount in USD.
    pub amount: Usd,
    /// Who receives the amount.
    pub destination: String,
    /// The jurisdiction that taxes the sale: the locality and state (e.g. "Austin, TX"), or the state.
    pub jurisdiction: String,
}

/// Why the tax is 0: an exemption certificate the caller holds, or the rule that exempts the whole sale.
#[derive(Object)]
pub struct Exemption {
    /// exemption_certificate, or the exemption type the rule applied.
    #[oai(rename = "type")]
    pub kind: String,
    /// The rule's reason.
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    /// The rule's citation (full answers).
    #[oai(skip_serializing_if_is_none)]
    pub citation: Option<String>,
    /// The certificate as sent (exemption_certificate).
    #[oai(skip_serializing_if_is_none)]
    pub certificate: Option<String>,
}

/// The tax a seller call would owe with nexus; never included in total_tax.
#[derive(Object)]
pub struct TaxIfNexus {
    /// Tax in USD.
    pub total_tax: Usd,
    /// State plus local rate.
    pub combined_rate: Fraction,
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
    /// Sales counted over the threshold's period (USD).
    pub revenue: Usd,
    /// Transactions counted over the threshold's period.
    pub transactions: i64,
    /// The sales prong (USD), or null when the state has none.
    pub threshold_amount: Option<Usd>,
    /// The transaction-count prong, or null when the state has none.
    pub threshold_transactions: Option<i64>,
    /// The larger of the prongs' percentages.
    pub percent_of_threshold: Exact,
    /// The period the threshold is measured over (e.g. previous_or_current_calendar_year).
    pub period: String,
    pub period_start: String,
    pub period_end: String,
    pub has_nexus: bool,
    /// What to do.
    pub message: String,
}

/// One link of the jurisdiction chain: the state, each local layer, each special rule.
#[derive(Object)]
pub struct JurisdictionLink {
    /// state, local or special_rule.
    pub level: String,
    /// A local layer's kind (county, city, transit, special_district, …).
    #[oai(skip_serializing_if_is_none)]
    pub layer: Option<String>,
    pub name: String,
    pub rate: Fraction,
    /// Whether the rate applied to this sale.
    pub applied: bool,
    /// The citation, with its address in angle brackets.
    pub source: String,
}

/// How the transaction was classified.
#[derive(Object)]
pub struct Classification {
    pub input_transaction_type: String,
    /// The work_type as sent, or null.
    pub input_work_type: Option<String>,
    pub resolved_work_type: String,
    /// explicit (work_type sent) or inferred (from transaction_type).
    pub work_type_source: String,
    /// How the work type was reached.
    pub derivation: String,
    /// The economic category (as classification_basis).
    pub economic_category: String,
    pub label: String,
    /// Whether a declared digital_content_type changed the answer.
    pub digital_content_type_applied: bool,
}

/// One reading of an ambiguous rule, with the tax it would give.
#[derive(Object)]
pub struct AmbiguousReading {
    pub reading: String,
    /// USD.
    pub tax: Usd,
    /// The citation, with its address in angle brackets.
    pub source: String,
}

/// The taxability rule applied.
#[derive(Object)]
pub struct Taxability {
    /// The rule's citation, with its address in angle brackets.
    pub source: Option<String>,
    pub state: String,
    /// The economic category.
    pub category: String,
    pub taxable: bool,
    /// The rule and what it decided.
    pub note: Option<String>,
    /// The declared digital content type, when it changed the answer.
    pub digital_content_type_override: Option<String>,
    /// The rule the digital content type applied, or null.
    pub digital_content_type_rule: Option<String>,
    /// Present when the law reads two ways: each reading with its tax.
    #[oai(skip_serializing_if_is_none)]
    pub ambiguous_readings: Option<Vec<AmbiguousReading>>,
}

/// One rule considered.
#[derive(Object)]
pub struct CheckEvaluated {
    /// The rule (or the stage, when no rule decided).
    pub check: String,
    pub result: String,
    /// The stage: taxability, exemption, nexus or marketplace.
    pub detail: String,
}

/// A rule the answer rests on, with its citation.
#[derive(Object)]
pub struct PolicyReference {
    pub id: String,
    /// The citation, with its address in angle brackets.
    pub settlement: String,
    pub note: Option<String>,
}

/// How the answer was reached, with the law it applied.
#[derive(Object)]
pub struct AuditTrail {
    /// The tax engine version (1.5).
    pub engine_version: String,
    pub rules_version: String,
    /// The date the rules were applied as of.
    pub as_of: String,
    pub jurisdiction_chain: Vec<JurisdictionLink>,
    /// State plus local rate.
    pub combined_rate: Fraction,
    pub classification: Classification,
    pub taxability: Taxability,
    /// Every rule considered.
    pub exemptions_evaluated: Vec<CheckEvaluated>,
    /// taxable, an exemption type, or no_nexus.
    pub final_determination: String,
    pub policy_references: Vec<PolicyReference>,
}

/// The full answer (calls with an API key, or paid per call with x402 or MPP).
#[derive(Object)]
pub struct FullCalculation {
    /// Always true on success.
    pub success: bool,
    /// The tax engine version (1.5).
    pub engine_version: String,
    /// seller (sales tax) or buyer (use tax).
    pub role: String,
    /// Amount in USD, as sent.
    pub amount: Exact,
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
    pub local_rate: Fraction,
    /// State plus local rate.
    pub combined_rate: Fraction,
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
    pub classification_facts: DeclaredFacts,
    /// The sales-tax line (seller role), or null.
    pub sales_tax: Option<TaxLine>,
    /// The use-tax line (buyer role), or null.
    pub use_tax: Option<TaxLine>,
    /// Buyer role with seller_remitting sent: whether the seller collected; else null.
    pub seller_remitting: Option<SellerRemitting>,
    /// The counterparty's 1099 running total, or null.
    pub tracking_1099: Option<Tracking1099>,
    /// Present when there is something the counterparty should know.
    #[oai(skip_serializing_if_is_none)]
    pub counterparty_notice: Option<CounterpartyNotice>,
    /// How settled the answer is.
    pub confidence: Confidence,
    /// Things the caller should know.
    pub advisories: Vec<Advisory>,
    /// Where each tax amount goes.
    pub routing: Vec<RoutingEntry>,
    /// The tax the caller is responsible for (USD).
    pub total_tax: Usd,
    /// False when the account never configured nexus (seller calls then answer 0).
    pub nexus_configured: bool,
    /// The classification in words: the work type, how it was reached, the category.
    pub classification_note: String,
    /// Estimates, not legal or tax advice.
    pub disclaimer: String,
    /// True when a marketplace facilitator collects the tax (marketplace_remitted_tax).
    pub collected_by_marketplace: bool,
    /// The tax the facilitator collects and remits (USD).
    #[oai(skip_serializing_if_is_none)]
    pub marketplace_remitted_tax: Option<Usd>,
    /// Marketplace-seller calls only; false only where a statute excludes facilitated sales (VA).
    #[oai(skip_serializing_if_is_none)]
    pub counts_toward_nexus_threshold: Option<bool>,
    /// Present when the whole sale is exempt, or an exemption certificate was sent.
    #[oai(skip_serializing_if_is_none)]
    pub exemption: Option<Exemption>,
    /// Present when a seller without nexus answers 0.
    #[oai(skip_serializing_if_is_none)]
    pub tax_if_nexus: Option<TaxIfNexus>,
    /// How is_b2b was determined.
    pub b2b_detection: B2bDetection,
    /// The counterparty's network profile, when it is on the network.
    #[oai(skip_serializing_if_is_none)]
    pub network_profile: Option<CounterpartyProfile>,
    pub audit_trail: AuditTrail,
    /// Server-generated.
    pub transaction_id: String,
    /// When the answer was computed (UTC, ISO 8601).
    pub timestamp: String,
    /// The account the call was made for.
    pub entity_id: String,
    /// live (an API key), x402 or mpp (paid per call, no key).
    pub mode: String,
    /// The response format version.
    pub api_version: String,
    /// On calls paid per call (mode x402 or mpp): what an API key adds, where to sign up, and the free plan's
    /// allowance. Absent with an API key.
    #[oai(skip_serializing_if_is_none)]
    pub upgrade: Option<Upgrade>,
    /// Keyed calls: present when any state is at 80% or more of its economic-nexus threshold.
    #[oai(skip_serializing_if_is_none)]
    pub nexus_alerts: Option<Vec<NexusAlert>>,
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
    /// demo.
    pub mode: String,
    /// seller (sales tax) or buyer (use tax).
    pub role: String,
    /// Amount in USD, as sent.
    pub amount: Exact,
    /// The buyer's state.
    pub buyer_state: String,
    /// The buyer's zip, or null.
    pub buyer_zip: Option<String>,
    /// The transaction type (default saas).
    pub transaction_type: String,
    /// The work type, declared or inferred.
    pub work_type: String,
    /// The economic category the work type (declared or inferred) maps to: data_processing for compute,
    /// financial_service for trading.
    pub classification_basis: String,
    /// Whether the sale is treated as business-to-business.
    pub is_b2b: bool,
    /// The declared digital content type, echoed, or null.
    pub digital_content_type: Option<String>,
    pub classification_facts: DeclaredFacts,
    /// Tax in USD.
    pub total_tax: Usd,
    /// State plus local rate.
    pub combined_rate: Fraction,
    /// The effective rate on the whole amount (tax ÷ amount).
    pub applied_rate: Fraction,
    /// Whether nexus was declared for buyer_state (demo: via nexus_override).
    pub nexus_configured_for_state: bool,
    /// How settled the answer is.
    pub confidence: ConfidenceSummary,
    /// Estimates, not legal or tax advice.
    pub disclaimer: String,
    /// When 0.00 comes from missing nexus (see nexus_override).
    #[oai(skip_serializing_if_is_none)]
    pub tax_if_nexus: Option<TaxIfNexus>,
    /// When 0.00 comes from an exemption.
    #[oai(skip_serializing_if_is_none)]
    pub exemption: Option<Exemption>,
    pub transaction_id: String,
    /// When the answer was computed (UTC, ISO 8601).
    pub timestamp: String,
    /// How to get full answers.
    pub upgrade: Upgrade,
}

/// Full with an API key; demo without.
#[derive(Union)]
pub enum Calculation {
    Full(Box<FullCalculation>),
    Demo(Box<DemoCalculation>),
}
