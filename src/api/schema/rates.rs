//! The public rate surface's bodies: GET /rates (full, compact, verified), GET /rates/local and POST /verify.
//! The response types are also what the handlers serialise (`ToJSON`), so the document and the body are one
//! definition. The request's bounds are the constants below; `tests/api/rates.rs` checks the document states them.

use std::collections::BTreeMap;

use poem_openapi::{Object, Union};
use serde_json::Value;

use super::number::Fraction;
use crate::listed_enum;

/// `agent_id`: 1 to this many characters.
pub const AGENT_ID_MAX: usize = 200;
/// `source`: at most this many characters.
pub const SOURCE_MAX: usize = 500;
/// `source_date`: at most this many characters (a free-form label, echoed, not parsed).
pub const SOURCE_DATE_MAX: usize = 200;
/// `rates`: at most this many entries (one per state code; 51 known codes).
pub const RATES_MAX: usize = 100;

listed_enum!(
    /// full (the default), compact ({XX: {r, d}}) or verified (the verification metadata).
    RatesFormat = ["full", "compact", "verified"]
);

/// A citation: the law or source, and where to read it.
#[derive(Object, Clone)]
pub struct CitationView {
    pub cite: String,
    pub url: Option<String>,
}

impl From<&crate::rules::registry::Citation> for CitationView {
    fn from(c: &crate::rules::registry::Citation) -> Self {
        CitationView { cite: c.cite.clone(), url: c.url.clone() }
    }
}

/// A plain explanation of one state's law, built from its rule files (explain=true with state).
#[derive(Object)]
pub struct RateExplanation {
    /// The state rate, local taxes, and for each transaction type whether it is taxed, at what rate, on what share
    /// of the price, and by which rule (or why not).
    pub taxability: String,
    /// Which sourcing rule applies to which sales.
    pub sourcing: String,
    pub nexus_threshold: String,
    pub marketplace: String,
    /// Local taxes owed on particular sales in particular zip codes (for example Chicago's lease tax on cloud
    /// software), with their rates.
    pub special_local_taxes: Vec<String>,
}

/// One jurisdiction's row.
#[derive(Object)]
pub struct StateRate {
    pub state: String,
    pub name: String,
    /// The general state rate as a decimal (0.0625 is 6.25%).
    pub state_rate: Fraction,
    /// Whether local sales taxes (county, city, district) exist in the state.
    pub local_taxes: bool,
    /// A SaaS subscription (calculate's default transaction type, no other fact declared) is taxable.
    pub saas_taxable: bool,
    /// The share of a SaaS price that is taxed (Texas taxes 80%); 0 when not taxable.
    pub saas_taxed_share: Fraction,
    /// A digital good (no content type declared) is taxable.
    pub digital_goods_taxable: bool,
    pub digital_goods_taxed_share: Fraction,
    /// saas_taxable or digital_goods_taxable: the compact form's `d` and POST /verify's `digitalTaxable`.
    pub digital_taxable: bool,
    /// The first day of the state rate in force.
    pub effective_from: String,
    /// Its last day; null while open-ended.
    pub effective_to: Option<String>,
    pub citation: CitationView,
    /// With explain=true and state.
    pub explanation: Option<RateExplanation>,
}

/// The full table (format=full, the default).
#[derive(Object)]
pub struct RateTable {
    pub success: bool,
    /// The date the figures are in force on (as_of, default today in UTC).
    pub as_of: String,
    /// The version of the rule set that answered.
    pub rules_version: String,
    /// How many jurisdictions `states` holds: 51, or 1 with state.
    pub count: u32,
    pub states: BTreeMap<String, StateRate>,
    pub disclaimer: String,
}

/// The compact form's entry: r the state rate, d digital_taxable.
#[derive(Object)]
pub struct CompactRate {
    pub r: Fraction,
    pub d: bool,
}

/// A rule that decided a figure, with its citation.
#[derive(Object)]
pub struct RuleCitation {
    pub id: String,
    pub cite: String,
    pub url: Option<String>,
}

/// One jurisdiction's figures with what they rest on.
#[derive(Object)]
pub struct VerifiedRate {
    pub state: String,
    pub state_rate: Fraction,
    pub digital_taxable: bool,
    /// The state rate's citation.
    pub citation: CitationView,
    pub effective_from: String,
    pub effective_to: Option<String>,
    /// The day the state rate was last compared with its cited source, as the rule file records it (`checked:`);
    /// null where the file records no check.
    pub last_checked: Option<String>,
    /// The sourcing rule and the taxability rules of the SaaS and digital-good sales that decided digital_taxable.
    pub rule_ids: Vec<String>,
    pub rules: Vec<RuleCitation>,
    /// The citation of whether local taxes exist.
    pub local_taxes_citation: Option<CitationView>,
}

/// The verification metadata (format=verified).
#[derive(Object)]
pub struct VerifiedRateTable {
    pub success: bool,
    pub as_of: String,
    pub rules_version: String,
    /// Always `verified`.
    pub format: String,
    pub states: BTreeMap<String, VerifiedRate>,
}

/// The full table (default), the verification metadata (format=verified), or {XX: {r, d}} (format=compact).
#[derive(Union)]
#[oai(one_of)]
pub enum RatesBody {
    Full(RateTable),
    Verified(VerifiedRateTable),
    Compact(BTreeMap<String, CompactRate>),
}

/// One local rate layer in force at the zip code.
#[derive(Object)]
pub struct LocalLayerView {
    /// county, city or special_district.
    pub level: String,
    pub name: String,
    pub rate: Fraction,
    pub citation: CitationView,
}

/// A tax owed on particular sales in the zip code, not part of the combined rate.
#[derive(Object)]
pub struct SpecialTaxView {
    pub id: String,
    pub name: String,
    pub rate: Fraction,
    pub requires_seller_nexus: bool,
    pub note: Option<String>,
    pub citation: CitationView,
}

/// The combined state and local rate at one zip code.
#[derive(Object)]
pub struct LocalRates {
    pub success: bool,
    pub as_of: String,
    pub rules_version: String,
    pub zip: String,
    /// The state the zip code is in.
    pub state: String,
    pub state_name: String,
    /// The locality of the local rate tables; null when the zip code is not in them.
    pub locality: Option<String>,
    /// The locality and state, or the state's name.
    pub jurisdiction: String,
    /// True when the local rate tables hold the zip code (or the state has no local sales taxes, so the state
    /// rate is the whole rate); false when local rates exist in the state but are not covered for this zip code.
    pub local_rates_covered: bool,
    pub state_rate: Fraction,
    pub state_rate_citation: CitationView,
    /// The sum of `layers`.
    pub local_rate: Fraction,
    /// state_rate + local_rate.
    pub combined_rate: Fraction,
    pub layers: Vec<LocalLayerView>,
    pub special_taxes: Vec<SpecialTaxView>,
    /// Set when the zip code spans more than one local jurisdiction: the others it reaches into. The layers are
    /// those of `locality`, the jurisdiction the zip's main city uses; an address elsewhere in the zip may differ.
    pub split: Option<String>,
    /// Why the combined rate may be incomplete, when it may be.
    pub note: Option<String>,
}

/// One state's figures as the caller has them.
#[derive(Object)]
pub struct VerifyRateEntry {
    /// The state rate as a decimal (0.0625 is 6.25%).
    pub rate: super::param::Rate,
    /// Whether SaaS or digital goods are taxable (compared with the table's digital_taxable); not compared
    /// when absent.
    #[oai(rename = "digitalTaxable")]
    pub digital_taxable: Option<bool>,
}

/// Rate tables to compare with levy's.
#[derive(Object)]
pub struct VerifyRatesRequest {
    /// Who is checking: 1 to 200 characters.
    #[oai(validator(min_length = 1, max_length = 200))]
    pub agent_id: String,
    /// Where the caller's figures come from (echoed).
    #[oai(validator(max_length = 500))]
    pub source: Option<String>,
    /// The date or label of the caller's source (echoed, not parsed).
    #[oai(validator(max_length = 200))]
    pub source_date: Option<String>,
    /// State code (upper or lower case) → the caller's figures; at most 100 entries. Codes levy does not know
    /// come back in `unknown`.
    #[oai(validator(max_properties = 100))]
    pub rates: BTreeMap<String, VerifyRateEntry>,
}

/// A figure on which the caller and levy differ.
#[derive(Object)]
pub struct RateDiscrepancy {
    pub state: String,
    /// rate or digitalTaxable.
    pub field: String,
    /// The caller's figure (a number for rate, a boolean for digitalTaxable).
    pub theirs: Value,
    /// levy's figure, as GET /rates answers it on the same date.
    pub ours: Value,
    /// What levy's figure rests on.
    pub citation: CitationView,
}

#[derive(Object)]
pub struct VerifyRatesResponse {
    pub success: bool,
    pub agent_id: String,
    pub source: Option<String>,
    pub source_date: Option<String>,
    /// The date levy's figures are in force on (today in UTC).
    pub as_of: String,
    pub rules_version: String,
    /// How many entries of `rates` were compared (known codes).
    pub compared: u32,
    /// The codes on which every figure sent agrees.
    pub matches: Vec<String>,
    pub discrepancies: Vec<RateDiscrepancy>,
    /// The codes sent that are not one of the 51 (as sent).
    pub unknown: Vec<String>,
}
