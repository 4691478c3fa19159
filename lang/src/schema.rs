//! The typed schema of facts a rule may name, and the closed value sets of the contract.
//!
//! These lists are the interface specification's enums (states, transaction types, work types and
//! the declared facts). They are vocabulary, not law: what any state does with them lives in rules/.

/// The 51 jurisdictions, in the order the specification lists them.
pub const STATES: [&str; 51] = [
    "AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL", "IN", "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI",
    "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT",
    "VT", "VA", "WA", "WV", "WI", "WY", "DC",
];

/// The FIPS code of each of [`STATES`], in the same order (Census state codes, as the Streamlined Sales Tax files
/// name states).
pub const STATE_FIPS: [u8; 51] = [
    1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39,
    40, 41, 42, 44, 45, 46, 47, 48, 49, 50, 51, 53, 54, 55, 56, 11,
];

pub const TRANSACTION_TYPES: [&str; 19] = [
    "compute",
    "api_access",
    "data_purchase",
    "saas",
    "ai_labor",
    "storage",
    "digital_good",
    "consulting",
    "data_processing",
    "cloud_infrastructure",
    "ai_model_access",
    "marketplace_fee",
    "subscription",
    "license",
    "service",
    "payment_processing_fee",
    "web_hosting",
    "software_maintenance",
    "it_support",
];

pub const WORK_TYPES: [&str; 11] = [
    "compute",
    "research",
    "information_service",
    "content",
    "consulting",
    "trading",
    "payment_processing",
    "web_hosting",
    "software_maintenance",
    "it_support",
    "custom_software",
];

/// Economic categories: what a sale is, for taxability. Every state file rates each of them.
pub const CATEGORIES: [&str; 13] = [
    "saas",
    "prewritten_software",
    "digital_good",
    "data_processing",
    "information_service",
    "cloud_infrastructure",
    "digital_service",
    "financial_service",
    "payment_processing",
    "web_hosting",
    "software_maintenance",
    "it_support",
    "custom_software",
];

pub const ROLES: [&str; 2] = ["seller", "buyer"];
pub const WORK_TYPE_SOURCES: [&str; 2] = ["explicit", "inferred"];
pub const USE_CONTEXTS: [&str; 3] = ["enterprise_system", "individual", "mixed"];
pub const MARKETPLACE_ROLES: [&str; 3] = ["seller", "facilitator", "direct"];
pub const DIGITAL_CONTENT_TYPES: [&str; 9] =
    ["ebook", "audio", "video", "art_image", "photograph", "printable_document", "software", "data", "other"];
pub const PAYMENT_PROVIDER_TYPES: [&str; 5] =
    ["bank", "licensed_money_transmitter", "card_network", "processor_routing_to_bank_or_network", "other"];
pub const IT_SUPPORT_SCOPES: [&str; 6] =
    ["help_desk_advice", "remote_repair_or_config", "software_installation", "monitoring", "security_monitoring", "managed_bundle"];
pub const DELIVERABLES: [&str; 4] = ["source_code", "compiled_artifact", "hosted_access", "other"];
pub const DELIVERIES: [&str; 2] = ["electronic", "tangible"];
pub const SUPPORT_KINDS: [&str; 2] = ["help_desk_only", "technical"];
pub const LEGS: [&str; 3] = ["whole", "updates", "support"];

/// What values a fact takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FactKind {
    Bool,
    Enum(&'static [&'static str]),
}

impl FactKind {
    pub fn values(&self) -> &'static [&'static str] {
        match self {
            FactKind::Bool => &["true", "false"],
            FactKind::Enum(v) => v,
        }
    }

    /// The index of `text` among the values (booleans: false = 0, true = 1).
    pub fn index_of(&self, text: &str) -> Option<u16> {
        match self {
            FactKind::Bool => match text {
                "false" => Some(0),
                "true" => Some(1),
                _ => None,
            },
            FactKind::Enum(v) => v.iter().position(|x| *x == text).map(|i| i as u16),
        }
    }
}

/// One fact of the schema.
#[derive(Debug)]
pub struct FactDef {
    pub name: &'static str,
    pub kind: FactKind,
    /// The value an absent fact takes, as the contract defines it (index into the values).
    pub default: Option<u16>,
    /// Derived facts are computed from others by an expression in classification.yaml.
    pub derived: bool,
}

macro_rules! facts {
    ($( $id:ident = $name:literal : $kind:expr, default $default:expr, derived $derived:expr; )*) => {
        /// A fact's position in the schema (and in every fact set the engine builds).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Fact { $($id,)* }

        pub const FACTS: &[FactDef] = &[
            $(FactDef { name: $name, kind: $kind, default: $default, derived: $derived },)*
        ];

        pub const ALL_FACTS: &[Fact] = &[$(Fact::$id,)*];
    };
}

use FactKind::{Bool, Enum};

facts! {
    role = "role": Enum(&ROLES), default Some(0), derived false;
    transaction_type = "transaction_type": Enum(&TRANSACTION_TYPES), default Some(3), derived false;
    work_type = "work_type": Enum(&WORK_TYPES), default None, derived false;
    work_type_source = "work_type_source": Enum(&WORK_TYPE_SOURCES), default None, derived false;
    category = "category": Enum(&CATEGORIES), default None, derived false;
    is_b2b = "is_b2b": Bool, default Some(0), derived false;
    intrastate = "intrastate": Bool, default Some(0), derived false;
    has_exemption_certificate = "has_exemption_certificate": Bool, default Some(0), derived false;
    buyer_state = "buyer_state": Enum(&STATES), default None, derived false;
    seller_state = "seller_state": Enum(&STATES), default None, derived false;
    use_context = "use_context": Enum(&USE_CONTEXTS), default None, derived false;
    marketplace_role = "marketplace_role": Enum(&MARKETPLACE_ROLES), default Some(2), derived false;
    digital_content_type = "digital_content_type": Enum(&DIGITAL_CONTENT_TYPES), default None, derived false;
    payment_provider_type = "payment_provider_type": Enum(&PAYMENT_PROVIDER_TYPES), default None, derived false;
    it_support_scope = "it_support_scope": Enum(&IT_SUPPORT_SCOPES), default Some(5), derived false;
    includes_prewritten_software_access = "includes_prewritten_software_access": Bool, default Some(0), derived false;
    written_for_buyer = "written_for_buyer": Bool, default None, derived false;
    not_offered_to_others = "not_offered_to_others": Bool, default None, derived false;
    deliverable = "deliverable": Enum(&DELIVERABLES), default None, derived false;
    is_modification_of_prewritten = "is_modification_of_prewritten": Bool, default None, derived false;
    separately_stated_charge = "separately_stated_charge": Bool, default None, derived false;
    all_rights_transferred = "all_rights_transferred": Bool, default None, derived false;
    delivery = "delivery": Enum(&DELIVERIES), default None, derived false;
    il_requirements_analysis_and_adaptation = "il_requirements_analysis_and_adaptation": Bool, default None, derived false;
    il_assembled_modules_50pct = "il_assembled_modules_50pct": Bool, default None, derived false;
    custom_software_attestation_complete = "custom_software_attestation_complete": Bool, default None, derived true;
    mandatory = "mandatory": Bool, default None, derived false;
    includes_upgrades = "includes_upgrades": Bool, default None, derived false;
    includes_support = "includes_support": Bool, default None, derived false;
    separately_itemized = "separately_itemized": Bool, default None, derived false;
    update_delivery = "update_delivery": Enum(&DELIVERIES), default Some(0), derived false;
    support_kind = "support_kind": Enum(&SUPPORT_KINDS), default None, derived false;
    business_use = "business_use": Bool, default None, derived false;
    seller_sold_software = "seller_sold_software": Bool, default None, derived false;
    leg = "leg": Enum(&LEGS), default Some(0), derived false;
}

pub const FACT_COUNT: usize = FACTS.len();

impl Fact {
    pub fn def(self) -> &'static FactDef {
        &FACTS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn by_name(name: &str) -> Option<Fact> {
        FACTS.iter().position(|f| f.name == name).map(|i| ALL_FACTS[i])
    }
}

pub fn state_index(code: &str) -> Option<usize> {
    STATES.iter().position(|s| *s == code)
}

pub fn category_index(name: &str) -> Option<usize> {
    CATEGORIES.iter().position(|s| *s == name)
}

/// Advisory codes the engine raises itself; advisories.yaml must define each.
pub const ENGINE_ADVISORIES: &[&str] = &[
    "NEXUS_WARNING",
    "AMBIGUOUS_LAW_HIGHER_TAX",
    "ZIP_NOT_FOUND",
    "ZIP_STATE_MISMATCH",
    "ZIP_SPANS_JURISDICTIONS",
    "ZIP_NOT_COVERED_ON_DATE",
    "LOCAL_RATES_PARTIAL",
    "NO_LOCAL_TAX_IN_STATE",
    "DIGITAL_CONTENT_TYPE_DECLARED",
    "DIGITAL_CONTENT_TYPE_MAY_REDUCE",
    "DIGITAL_CONTENT_TYPE_NOT_APPLIED",
    "MARKETPLACE_FACILITATOR_COLLECTS",
    "SELLER_REMITTED",
    "SPECIAL_TAX_APPLIED",
    "EXEMPTION_CERTIFICATE_APPLIED",
    "ROUTED_TO_GAINS_TRACKER",
    "INFORMATION_RETURN_THRESHOLD_REACHED",
    "SELLER_ZIP_UNKNOWN_FOR_ORIGIN",
    "B2B_DECLARATION_DIFFERS_FROM_NETWORK",
];

/// Filing statuses of the federal and state gains estimates (a qualifying surviving spouse files as mfj).
pub const FILING_STATUSES: [&str; 4] = ["single", "mfj", "mfs", "hoh"];

/// Asset classes a trade may declare; rules/gains/federal.yaml names those the wash-sale rule reaches.
pub const ASSET_CLASSES: [&str; 6] = ["stock", "security", "securities", "equity", "digital_asset", "crypto"];

pub const NEXUS_PERIODS: &[&str] = &[
    "previous_or_current_calendar_year",
    "previous_calendar_year",
    "previous_12_months",
    "previous_four_quarters",
    "twelve_months_ending_september_30",
];
pub const SALES_MEASURES: &[&str] = &["gross", "retail", "taxable"];
pub const LOCAL_LEVELS: &[&str] = &["county", "city", "special_district"];

/// The independent rate tables a zip's `divergences:` may name, one per format `levy rules audit-rates` reads:
/// Avalara's ZIP5 estimates, the OpenSalesTax grid of DOR-published rates, and a plain `state,zip,rate` CSV.
pub const RATE_TABLES: &[&str] = &["avalara_zip5", "dor_grid", "state_zip_rate", "state_rates", "saas_taxability"];

/// The tables a zip's `divergences:` may name (the rest are state-level).
pub const ZIP_TABLES: &[&str] = &["avalara_zip5", "dor_grid", "state_zip_rate"];

/// The state-level figures a state file's `divergences:` may name, with the table that gives each.
pub const STATE_FIELDS: &[(&str, &str)] =
    &[("state_rate", "state_rates"), ("local_taxes", "state_rates"), ("saas", "saas_taxability"), ("digital_goods", "saas_taxability")];

/// The taxability values the SaaS summary gives.
pub const TAXABILITY_VALUES: &[&str] = &["taxable", "exempt", "local_only"];
