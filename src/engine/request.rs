//! Validates a calculate request body (JSON) into typed facts. Every problem is reported, each
//! naming its field; an unknown field is an error (the contract allows no additional properties).

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::facts::FactSet;
use crate::rules::schema::{self, Fact, STATES};

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

pub const MAX_AMOUNT: i64 = 100_000_000;

/// The members of a calculate request.
pub const TOP_FIELDS: &[&str] = &[
    "role",
    "amount",
    "buyer_state",
    "seller_state",
    "buyer_zip",
    "seller_zip",
    "transaction_type",
    "work_type",
    "counterparty_id",
    "is_b2b",
    "use_context",
    "digital_content_type",
    "payment_provider_type",
    "it_support_scope",
    "includes_prewritten_software_access",
    "custom_software_attestation",
    "maintenance_contract",
    "marketplace_role",
    "description",
    "exemption_certificate",
    "nexus_override",
    "vendor_ytd_override",
    "seller_remitting",
];

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

pub(crate) use crate::engine::validate::Checker as V;

impl V {
    /// An enumerated fact: checks the value against the schema and stores it.
    fn enum_fact(&mut self, field: &str, v: Option<&Value>, fact: Fact, facts: &mut FactSet) -> Option<u16> {
        let s = self.string(field, v)?;
        let values = fact.def().kind.values();
        match fact.def().kind.index_of(s) {
            Some(i) => {
                facts.set(fact, i);
                Some(i)
            }
            None => {
                let hint = crate::rules::diag::did_you_mean(s, values.iter().copied())
                    .map(|x| format!("; did you mean `{x}`?"))
                    .unwrap_or_default();
                self.err(field, format!("`{s}` is not one of: {}{hint}", values.join(", ")));
                None
            }
        }
    }

    fn bool_fact(&mut self, field: &str, v: Option<&Value>, fact: Fact, facts: &mut FactSet) -> Option<bool> {
        let b = self.boolean(field, v)?;
        facts.set_bool(fact, b);
        Some(b)
    }

    fn zip(&mut self, field: &str, v: Option<&Value>) -> Option<String> {
        let s = self.string(field, v)?;
        if s.is_empty() {
            return None;
        }
        if crate::postal::is_zip(s) {
            Some(s.to_string())
        } else {
            self.err(field, "must be 5 digits, ZIP+4 (55401-1234) or empty");
            None
        }
    }
}

fn state_of(code: &str) -> Option<usize> {
    schema::state_index(code)
}

/// Validates a calculate request body.
pub fn parse_request(body: &Value) -> Result<Request, Vec<FieldError>> {
    let mut v = V { errors: vec![] };
    let Some(obj) = body.as_object() else {
        return Err(vec![FieldError { field: "body".into(), message: "must be a JSON object".into() }]);
    };
    v.unknown_fields("", obj, TOP_FIELDS);
    let mut facts = FactSet::default();
    let mut echo = Map::new();

    v.enum_fact("role", obj.get("role"), Fact::role, &mut facts);
    let amount = match obj.get("amount") {
        None | Some(Value::Null) => {
            v.err("amount", "is required");
            None
        }
        a => v.decimal("amount", a),
    };
    if let Some(a) = amount {
        if a <= Decimal::ZERO {
            v.err("amount", "must be greater than 0");
        } else if a > Decimal::from(MAX_AMOUNT) {
            v.err("amount", "must be at most 100000000");
        }
    }
    let buyer_state = match v.string("buyer_state", obj.get("buyer_state")) {
        None => {
            if !v.errors.iter().any(|e| e.field == "buyer_state") {
                v.err("buyer_state", "is required");
            }
            None
        }
        Some(s) => match state_of(s) {
            Some(i) => {
                facts.set(Fact::buyer_state, i as u16);
                Some(i)
            }
            None => {
                v.err("buyer_state", format!("`{s}` is not a state code (50 states and DC, upper case)"));
                None
            }
        },
    };
    let seller_state = match v.string("seller_state", obj.get("seller_state")) {
        None | Some("") => None,
        Some(s) => match state_of(s) {
            Some(i) => {
                facts.set(Fact::seller_state, i as u16);
                Some(i)
            }
            None => {
                v.err("seller_state", format!("`{s}` is not a two-letter state code"));
                None
            }
        },
    };
    if let (Some(b), Some(s)) = (buyer_state, seller_state) {
        facts.set_bool(Fact::intrastate, b == s);
    }
    let buyer_zip = v.zip("buyer_zip", obj.get("buyer_zip"));
    let seller_zip = v.zip("seller_zip", obj.get("seller_zip"));
    v.enum_fact("transaction_type", obj.get("transaction_type"), Fact::transaction_type, &mut facts);
    if v.enum_fact("work_type", obj.get("work_type"), Fact::work_type, &mut facts).is_some() {
        facts.set(Fact::work_type_source, 0);
    }
    let counterparty_id = match v.string("counterparty_id", obj.get("counterparty_id")) {
        None => {
            if !v.errors.iter().any(|e| e.field == "counterparty_id") {
                v.err("counterparty_id", "is required");
            }
            None
        }
        Some(s) => {
            let ok_chars = agent_id_chars(s);
            if s.is_empty() || s.chars().count() > 200 {
                v.err("counterparty_id", "must be 1 to 200 characters");
                None
            } else if !ok_chars {
                v.err("counterparty_id", "may contain only letters, digits and _ - . : @");
                None
            } else {
                Some(s.to_string())
            }
        }
    };
    for (field, fact) in [("is_b2b", Fact::is_b2b), ("includes_prewritten_software_access", Fact::includes_prewritten_software_access)] {
        if let Some(b) = v.bool_fact(field, obj.get(field), fact, &mut facts) {
            echo.insert(field.into(), Value::Bool(b));
        }
    }
    for (field, fact) in [
        ("use_context", Fact::use_context),
        ("digital_content_type", Fact::digital_content_type),
        ("payment_provider_type", Fact::payment_provider_type),
        ("it_support_scope", Fact::it_support_scope),
        ("marketplace_role", Fact::marketplace_role),
    ] {
        if v.enum_fact(field, obj.get(field), fact, &mut facts).is_some() && field != "marketplace_role" {
            if let Some(x) = obj.get(field) {
                echo.insert(field.into(), x.clone());
            }
        }
    }

    let mut has_attestation = false;
    match obj.get("custom_software_attestation") {
        None | Some(Value::Null) => {}
        Some(Value::Object(a)) => {
            has_attestation = true;
            v.unknown_fields("custom_software_attestation.", a, ATTESTATION_FIELDS);
            for name in ATTESTATION_FIELDS {
                let field = format!("custom_software_attestation.{name}");
                let Some(fact) = Fact::by_name(name) else { continue };
                match fact.def().kind {
                    schema::FactKind::Bool => v.bool_fact(&field, a.get(*name), fact, &mut facts).map(|_| ()),
                    schema::FactKind::Enum(_) => v.enum_fact(&field, a.get(*name), fact, &mut facts).map(|_| ()),
                };
            }
            echo.insert("custom_software_attestation".into(), Value::Object(a.clone()));
        }
        Some(_) => v.err("custom_software_attestation", "must be an object"),
    }

    let mut itemized = None;
    match obj.get("maintenance_contract") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            v.unknown_fields("maintenance_contract.", m, MAINTENANCE_FIELDS);
            for name in MAINTENANCE_FIELDS.iter().filter(|n| **n != "itemized_amounts") {
                let field = format!("maintenance_contract.{name}");
                let Some(fact) = Fact::by_name(name) else { continue };
                match fact.def().kind {
                    schema::FactKind::Bool => v.bool_fact(&field, m.get(*name), fact, &mut facts).map(|_| ()),
                    schema::FactKind::Enum(_) => v.enum_fact(&field, m.get(*name), fact, &mut facts).map(|_| ()),
                };
            }
            match m.get("itemized_amounts") {
                None | Some(Value::Null) => {}
                Some(Value::Object(i)) => {
                    v.unknown_fields("maintenance_contract.itemized_amounts.", i, &["updates", "support"]);
                    let u = v.decimal("maintenance_contract.itemized_amounts.updates", i.get("updates"));
                    let s = v.decimal("maintenance_contract.itemized_amounts.support", i.get("support"));
                    match (u, s, amount) {
                        (Some(u), Some(s), Some(a)) => {
                            if u < Decimal::ZERO || s < Decimal::ZERO {
                                v.err("maintenance_contract.itemized_amounts", "amounts must not be negative");
                            } else if u + s != a {
                                v.err(
                                    "maintenance_contract.itemized_amounts",
                                    format!("updates + support must equal amount ({} + {} ≠ {})", u, s, a),
                                );
                            } else {
                                itemized = Some((u, s));
                            }
                        }
                        (None, _, _) | (_, None, _)
                            if !v.errors.iter().any(|e| e.field.starts_with("maintenance_contract.itemized_amounts")) =>
                        {
                            v.err("maintenance_contract.itemized_amounts", "needs both updates and support");
                        }
                        _ => {}
                    }
                }
                Some(_) => v.err("maintenance_contract.itemized_amounts", "must be an object"),
            }
            echo.insert("maintenance_contract".into(), Value::Object(m.clone()));
        }
        Some(_) => v.err("maintenance_contract", "must be an object"),
    }

    let description = v.string("description", obj.get("description")).unwrap_or("").to_string();
    v.max_len("description", &description, 1000);
    let exemption_certificate =
        v.string("exemption_certificate", obj.get("exemption_certificate")).map(str::to_string).filter(|s| !s.trim().is_empty());
    if let Some(c) = &exemption_certificate {
        if v.max_len("exemption_certificate", c, 200) {
            facts.set_bool(Fact::has_exemption_certificate, true);
        }
    }
    let nexus_override = match obj.get("nexus_override") {
        None | Some(Value::Null) => None,
        Some(Value::Object(n)) => {
            let mut out = BTreeMap::new();
            for (k, val) in n {
                let field = format!("nexus_override.{k}");
                let Some(i) = state_of(&k.to_ascii_uppercase()) else {
                    v.err(&field, "is not a state code");
                    continue;
                };
                match val.as_object().map(|o| o.get("hasNexus")) {
                    Some(Some(Value::Bool(b))) => {
                        out.insert(i, *b);
                    }
                    Some(Some(_)) => v.err(&format!("{field}.hasNexus"), "must be true or false"),
                    Some(None) => v.err(&format!("{field}.hasNexus"), "is required"),
                    None => v.err(&field, "must be an object with hasNexus"),
                }
            }
            Some(out)
        }
        Some(_) => {
            v.err("nexus_override", "must be an object mapping state codes to {hasNexus}");
            None
        }
    };
    let vendor_ytd_override = v.decimal("vendor_ytd_override", obj.get("vendor_ytd_override"));
    if vendor_ytd_override.is_some_and(|x| x < Decimal::ZERO) {
        v.err("vendor_ytd_override", "must be at least 0");
    }
    let seller_remitting = v.boolean("seller_remitting", obj.get("seller_remitting"));

    if facts.declared(Fact::work_type) == Fact::work_type.def().kind.index_of("custom_software") && !has_attestation {
        // Not an input error: the contract answers a missing attestation as prewritten software.
    }
    if !v.errors.is_empty() {
        return Err(v.errors);
    }
    match (amount, buyer_state, counterparty_id) {
        (Some(amount), Some(buyer_state), Some(counterparty_id)) => Ok(Request {
            amount,
            buyer_state,
            seller_state,
            buyer_zip,
            seller_zip,
            counterparty_id,
            description,
            exemption_certificate,
            nexus_override,
            vendor_ytd_override,
            seller_remitting,
            itemized,
            has_attestation,
            facts,
            classification_facts: echo,
            counterparty: None,
            b2b_from_network: B2bFromNetwork::No,
        }),
        _ => Err(vec![FieldError { field: "body".into(), message: "is incomplete".into() }]),
    }
}

/// The code of a state index.
pub fn state_code(i: usize) -> &'static str {
    STATES.get(i).copied().unwrap_or("??")
}

/// Whether every character of a counterparty id (a network agent id) is one of A–Z a–z 0–9 _ - . : @.
pub fn agent_id_chars(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_alphanumeric() || "_-.:@".contains(c))
}
