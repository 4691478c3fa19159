//! A calculate request as the engine takes it: the sale's figures and places, and its declared facts by schema
//! position. Read from a body by the API (`api::schema::calculate::read_request`), through the types that document
//! it, and built directly where the engine asks itself a question (`engine::table`'s probe sales).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::facts::FactSet;
use crate::rules::schema::{Fact, STATES};

/// One field-level problem: `field` is a JSON path (`maintenance_contract.itemized_amounts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// A validated calculate request.
#[derive(Clone, Debug)]
pub struct Request {
    pub amount: Decimal,
    pub buyer_state: usize,
    pub seller_state: Option<usize>,
    pub buyer_zip: Option<String>,
    pub seller_zip: Option<String>,
    pub counterparty_id: String,
    pub description: String,
    pub exemption_certificate: Option<String>,
    pub nexus_override: Option<BTreeMap<usize, bool>>,
    pub vendor_ytd_override: Option<Decimal>,
    pub seller_remitting: Option<bool>,
    /// Maintenance legs (updates, support) when the contract itemizes them.
    pub itemized: Option<(Decimal, Decimal)>,
    /// Whether a custom-software attestation object was sent at all.
    pub has_attestation: bool,
    /// Declared facts, by schema position.
    pub facts: FactSet,
    /// The declared classification facts, echoed back as sent.
    pub classification_facts: Map<String, Value>,
    /// The counterparty as the network knows it (set by the service after validation: [`Request::with_counterparty`]).
    pub counterparty: Option<Counterparty>,
    /// What the counterparty's network profile did to `is_b2b`.
    pub b2b_from_network: B2bFromNetwork,
}

/// A counterparty found on the agent network: its profile's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Counterparty {
    pub agent_id: String,
    pub entity_name: String,
    pub entity_state: Option<String>,
    pub work_type: Option<String>,
    /// The principal's legal name, when the profile gives one.
    pub legal_name: Option<String>,
    /// Whether the principal is a business, when the profile says.
    pub is_business: Option<bool>,
}

/// What the counterparty's network profile did to the request's `is_b2b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum B2bFromNetwork {
    /// Nothing: no profile, or one that does not say whether its principal is a business.
    No,
    /// The caller did not declare is_b2b: the profile's `is_business` is the call's.
    Verified,
    /// The caller declared is_b2b, and the profile says the opposite: the declaration stands, with an advisory.
    Conflicts,
    /// The caller declared is_b2b, and the profile agrees.
    Agrees,
}

impl Request {
    /// A sale of `amount` into the state `buyer_state` (its index) to `counterparty_id`, no other fact declared.
    pub fn new(amount: Decimal, buyer_state: usize, counterparty_id: String) -> Request {
        let mut facts = FactSet::default();
        facts.set(Fact::buyer_state, buyer_state as u16);
        Request {
            amount,
            buyer_state,
            seller_state: None,
            buyer_zip: None,
            seller_zip: None,
            counterparty_id,
            description: String::new(),
            exemption_certificate: None,
            nexus_override: None,
            vendor_ytd_override: None,
            seller_remitting: None,
            itemized: None,
            has_attestation: false,
            facts,
            classification_facts: Map::new(),
            counterparty: None,
            b2b_from_network: B2bFromNetwork::No,
        }
    }

    /// The counterparty as the network knows it (`None`: not on the network, as far as the caller may see), in
    /// place of what was set before. When the caller did not declare `is_b2b` and the profile says whether its
    /// principal is a business, that is the call's `is_b2b`; a declaration always stands.
    pub fn set_counterparty(&mut self, c: Option<Counterparty>) {
        if self.b2b_from_network == B2bFromNetwork::Verified {
            self.facts.clear(Fact::is_b2b);
        }
        self.b2b_from_network = B2bFromNetwork::No;
        self.counterparty = None;
        if let Some(c) = c {
            self.with_counterparty(c);
        }
    }

    fn with_counterparty(&mut self, c: Counterparty) {
        self.b2b_from_network = match (self.facts.declared(Fact::is_b2b), c.is_business) {
            (_, None) => B2bFromNetwork::No,
            (None, Some(b)) => {
                self.facts.set_bool(Fact::is_b2b, b);
                B2bFromNetwork::Verified
            }
            (Some(d), Some(b)) if (d == 1) == b => B2bFromNetwork::Agrees,
            (Some(_), Some(_)) => B2bFromNetwork::Conflicts,
        };
        self.counterparty = Some(c);
    }
}

/// The members of `custom_software_attestation`.
pub const ATTESTATION_FIELDS: &[&str] = &[
    "written_for_buyer",
    "not_offered_to_others",
    "deliverable",
    "is_modification_of_prewritten",
    "separately_stated_charge",
    "all_rights_transferred",
    "delivery",
    "il_requirements_analysis_and_adaptation",
    "il_assembled_modules_50pct",
];

pub const MAINTENANCE_FIELDS: &[&str] = &[
    "mandatory",
    "includes_upgrades",
    "includes_support",
    "separately_itemized",
    "itemized_amounts",
    "update_delivery",
    "support_kind",
    "business_use",
    "seller_sold_software",
];

/// The code of a state index.
pub fn state_code(i: usize) -> &'static str {
    STATES.get(i).copied().unwrap_or("??")
}
