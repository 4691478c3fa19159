//! From validated request facts to the full determination, in stages (each a function below, run in
//! order by [`determine`]): `classify` → `source` → `rate_layers` → `rate_legs` (taxability leg by
//! leg, ambiguity) → `digital_content_counterfactuals` → `special_taxes` (nexus-independent) →
//! `remit` (role, nexus, marketplace, exemption certificate) → `track_1099` → `fact_advisories` →
//! `route` → `confidence`. The stages share one context that gathers advisories, the trace and the
//! confidence factors in the order they arise.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::facts::FactSet;
use super::money;
use super::request::{state_code, B2bFromNetwork, Counterparty, FieldError, Request};
use crate::rules::ast::{Sourcing, TaxOutcome};
use crate::rules::places::Coverage;
use crate::rules::registry::{in_force, CategoryEntry, Citation, Dated, FacilitatedCount, Jurisdiction, Registry, Rule, RuleBody};
use crate::rules::schema::{Fact, CATEGORIES, DIGITAL_CONTENT_TYPES, TRANSACTION_TYPES, WORK_TYPES};

/// What the engine needs besides the request.
pub struct Input<'a> {
    pub request: &'a Request,
    /// The account's nexus by state index; `None` when it never configured nexus.
    pub nexus: Option<&'a BTreeMap<usize, bool>>,
    /// The counterparty's year-to-date payments before this one (the store's figure).
    pub vendor_ytd: Option<Decimal>,
    pub as_of: NaiveDate,
}

#[derive(Debug)]
pub enum EngineError {
    /// The request cannot be answered as sent; each error names its request field. The API answers these 400
    /// INVALID_INPUT, the CLI as a rejected request.
    Input(Vec<FieldError>),
    /// The date to evaluate as of is before the first date the rules cover. Not a request field: on the API the
    /// date is the server's (a fault of the deployment, answered 500); in the CLI it is `--as-of`.
    BeforeCoverage { as_of: NaiveDate, coverage_from: NaiveDate },
    /// A registry or arithmetic failure; a bug, never the caller's fault.
    Internal(Fault),
}

/// What went wrong inside the engine: a registry that lacks what a checked one always has, or arithmetic out
/// of range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A table the facts index into lacks the entry (the text names the table or the index).
    Table(&'static str),
    TaxOverflow,
    /// An ambiguous rule without any reading.
    NoReadings,
    NoStateRate {
        state: &'static str,
        as_of: NaiveDate,
    },
    NoSourcingRule {
        state: &'static str,
        as_of: NaiveDate,
    },
    NoTaxabilityRule {
        state: &'static str,
        category: &'static str,
        as_of: NaiveDate,
    },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Table(what) => write!(f, "{what}"),
            Fault::TaxOverflow => write!(f, "tax overflow"),
            Fault::NoReadings => write!(f, "an ambiguous rule without readings"),
            Fault::NoStateRate { state, as_of } => write!(f, "no {state} state rate on {as_of}"),
            Fault::NoSourcingRule { state, as_of } => write!(f, "no {state} sourcing rule on {as_of}"),
            Fault::NoTaxabilityRule { state, category, as_of } => {
                write!(f, "no taxability rule of {state} covers category {category} on {as_of}")
            }
        }
    }
}

impl From<Fault> for EngineError {
    fn from(f: Fault) -> EngineError {
        EngineError::Internal(f)
    }
}

impl EngineError {
    /// One request field the engine cannot answer as sent (see `tests/api/engine_input.rs`, which drives each of these
    /// through HTTP; it finds them by this constructor's name, so use it for every one).
    fn input(field: &str, message: impl Into<String>) -> EngineError {
        EngineError::Input(vec![FieldError { field: field.into(), message: message.into() }])
    }
}

impl std::fmt::Display for EngineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EngineError::Input(errs) => {
                let list: Vec<String> = errs.iter().map(ToString::to_string).collect();
                write!(f, "{}", list.join("; "))
            }
            EngineError::BeforeCoverage { as_of, coverage_from } => write!(f, "as of {as_of}: the rules cover dates from {coverage_from}"),
            EngineError::Internal(msg) => write!(f, "{msg}"),
        }
    }
}

/// Text enums of the determination: `as_str` is the text the bodies carry, `Display` writes it (padded as
/// asked).
macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }
    };
}

text_enum! {
    /// The caller's side of the sale.
    Role { Seller => "seller", Buyer => "buyer" }
}

impl Role {
    /// Seller exactly when the facts hold `role: seller`.
    fn of(facts: &FactSet) -> Role {
        if facts.get(Fact::role) == Some(0) {
            Role::Seller
        } else {
            Role::Buyer
        }
    }
}

text_enum! {
    /// Whether the work type was given or inferred from the transaction type.
    WorkTypeSource { Explicit => "explicit", Inferred => "inferred" }
}

text_enum! {
    /// The confidence score's band.
    ConfidenceLevel { Complete => "complete", High => "high", Partial => "partial", Minimal => "minimal" }
}

impl ConfidenceLevel {
    fn of(score: u32) -> ConfidenceLevel {
        match score {
            100 => ConfidenceLevel::Complete,
            85..=99 => ConfidenceLevel::High,
            60..=84 => ConfidenceLevel::Partial,
            _ => ConfidenceLevel::Minimal,
        }
    }
}

text_enum! {
    /// What a routed amount is.
    RoutingKind { CapitalGains => "capital_gains", SalesTax => "sales_tax", UseTax => "use_tax", SpecialTax => "special_tax" }
}

text_enum! {
    /// The stage of the determination a trace step belongs to.
    Stage {
        Classification => "classification",
        Sourcing => "sourcing",
        Rates => "rates",
        Taxability => "taxability",
        SpecialTax => "special_tax",
        Exemption => "exemption",
        Marketplace => "marketplace",
        Nexus => "nexus",
        Remittance => "remittance",
    }
}

/// A leg's taxability: taxable, or exempt as the type the rule names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LegResult {
    Taxable,
    Exempt(String),
}

impl LegResult {
    pub fn as_str(&self) -> &str {
        match self {
            LegResult::Taxable => "taxable",
            LegResult::Exempt(kind) => kind,
        }
    }

    pub fn is_taxable(&self) -> bool {
        *self == LegResult::Taxable
    }
}

impl std::fmt::Display for LegResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The determination's one-word answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinalDetermination {
    /// Some leg is taxable and the caller owes (or would owe, but for a marketplace) the tax.
    Taxable,
    /// No leg is taxable: the first leg's exemption type.
    Exempt(String),
    OutsideSalesTax,
    ExemptionCertificate,
    /// A seller without nexus in the buyer's state, which owes nothing there.
    NoNexus,
}

impl FinalDetermination {
    pub fn as_str(&self) -> &str {
        match self {
            FinalDetermination::Taxable => "taxable",
            FinalDetermination::Exempt(kind) => kind,
            FinalDetermination::OutsideSalesTax => "outside_sales_tax",
            FinalDetermination::ExemptionCertificate => "exemption_certificate",
            FinalDetermination::NoNexus => "no_nexus",
        }
    }
}

impl std::fmt::Display for FinalDetermination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl PartialEq<&str> for FinalDetermination {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Advisory {
    pub code: String,
    pub kind: String,
    pub message: String,
    pub state: Option<&'static str>,
    pub flagged: bool,
}

#[derive(Clone, Debug)]
pub struct AppliedLayer {
    /// The local tax's id in the rule files (`tx.austin`).
    pub id: String,
    pub level: String,
    pub name: String,
    pub rate: Decimal,
    pub citation: Citation,
}

/// One rated part of the sale (the whole, or a maintenance contract's updates or support leg).
#[derive(Clone, Debug)]
pub struct Leg {
    pub name: &'static str,
    pub amount: Decimal,
    pub taxable_amount: Decimal,
    pub base_share: Decimal,
    pub state_rate: Decimal,
    pub local_rate: Decimal,
    /// The rate applied to the taxable amount (state leg + local layers that apply).
    pub rate: Decimal,
    pub tax: Decimal,
    pub rule_id: String,
    pub result: LegResult,
    /// The exemption's reason: `Some` exactly when the leg is exempt.
    pub reason: Option<String>,
    pub citation: Citation,
    pub note: Option<String>,
    /// For ambiguous rules: each reading with the tax it gives.
    pub readings: Vec<(String, Decimal, Citation)>,
    /// Whether the rule that decided the leg reads `is_b2b` (an exempt leg is then a business-to-business exemption).
    pub reads_b2b: bool,
}

#[derive(Clone, Debug)]
pub struct SpecialLeg {
    pub id: String,
    pub name: String,
    pub locality: String,
    pub rate: Decimal,
    pub tax: Decimal,
    pub citation: Citation,
}

#[derive(Clone, Debug)]
pub struct TraceStep {
    pub stage: Stage,
    pub rule: Option<String>,
    pub result: String,
}

#[derive(Clone, Debug)]
pub struct Tracking1099 {
    pub counterparty_id: String,
    pub payment_this_transaction: Decimal,
    pub vendor_ytd_total: Decimal,
    pub threshold: Decimal,
    pub threshold_exceeded: bool,
    pub form_required: Option<String>,
    pub tax_year: i32,
}

#[derive(Clone, Debug)]
pub struct Routing {
    pub kind: RoutingKind,
    pub amount: Decimal,
    pub destination: String,
    pub jurisdiction: String,
}

#[derive(Clone, Debug)]
pub struct Determination {
    pub as_of: NaiveDate,
    pub engine_version: String,
    pub rules_version: String,
    pub role: Role,
    pub amount: Decimal,
    pub buyer_state: &'static str,
    pub buyer_state_name: String,
    pub seller_state: Option<&'static str>,
    pub buyer_zip: Option<String>,
    pub seller_zip: Option<String>,
    pub counterparty_id: String,
    pub transaction_type: &'static str,
    pub input_work_type: Option<&'static str>,
    pub work_type: &'static str,
    pub work_type_source: WorkTypeSource,
    pub work_type_label: String,
    pub category: &'static str,
    pub category_label: String,
    /// The economic category the resolved work type maps to (`classification.yaml` `work_types`), one of
    /// `CATEGORIES`: what the response's `classification_basis` reports. `category` is the one rated, after the
    /// transaction type's default category and any reclassification.
    pub classification_basis: &'static str,
    /// How the work type was reached, in words: "explicit work_type compute", "inferred from transaction_type saas".
    pub classification_derivation: String,
    pub reclassified_by: Option<String>,
    pub is_b2b: bool,
    pub use_context: Option<&'static str>,
    pub marketplace_role: &'static str,
    pub digital_content_type: Option<&'static str>,
    pub digital_content_type_applied: bool,
    pub digital_content_type_rule: Option<String>,
    pub classification_facts: serde_json::Map<String, serde_json::Value>,
    /// The counterparty as the network knows it, and what its profile did to is_b2b.
    pub counterparty: Option<Counterparty>,
    pub b2b_from_network: B2bFromNetwork,
    pub outside_sales_tax: Option<String>,
    pub sourcing: Sourcing,
    pub sourcing_rule: String,
    pub sourcing_citation: Citation,
    pub locality: Option<String>,
    pub jurisdiction: String,
    pub state_rate: Decimal,
    pub state_rate_citation: Citation,
    pub local_rate: Decimal,
    pub combined_rate: Decimal,
    pub layers: Vec<AppliedLayer>,
    /// How much of the local tax at the sourced place `layers` holds.
    pub local_coverage: LocalCoverage,
    /// Where the sourced zip code straddles jurisdictions: what else it reaches into.
    pub split: Option<String>,
    /// The combined rates of the zip code's other parts, where their local taxes differ from the part answered.
    pub local_alternatives: Vec<Decimal>,
    pub legs: Vec<Leg>,
    /// The sales or use tax the law imposes on the sale, before nexus, marketplace or remittance.
    pub tax_due: Decimal,
    pub special: Vec<SpecialLeg>,
    pub special_total: Decimal,
    pub nexus_configured: bool,
    pub has_nexus: bool,
    pub sales_tax: Option<Decimal>,
    pub use_tax: Option<Decimal>,
    pub seller_remitting: Option<bool>,
    pub collected_by_marketplace: bool,
    pub marketplace_remitted_tax: Option<Decimal>,
    pub counts_toward_nexus_threshold: Option<bool>,
    pub exemption_certificate: Option<String>,
    pub tax_if_nexus: Option<Decimal>,
    pub total_tax: Decimal,
    pub final_determination: FinalDetermination,
    pub tracking_1099: Option<Tracking1099>,
    /// Where in `advisories` the 1099 threshold advisory goes (the only advisory the 1099 figures decide).
    pub information_return_at: usize,
    pub confidence_score: u32,
    pub confidence_level: ConfidenceLevel,
    pub confidence_factors: Vec<String>,
    pub advisories: Vec<Advisory>,
    pub routing: Vec<Routing>,
    pub trace: Vec<TraceStep>,
}

impl Determination {
    /// The effective rate on the whole amount (tax due ÷ amount), for the demo body.
    pub fn applied_rate(&self) -> Decimal {
        if self.amount.is_zero() {
            return Decimal::ZERO;
        }
        let legs: Decimal = self.legs.iter().map(|l| l.rate * l.base_share * l.amount).sum();
        (legs / self.amount).round_dp(6).normalize()
    }

    /// The state leg's rate as applied (a rule may replace the state rate, e.g. 3% in place of 6%).
    pub fn applied_state_rate(&self) -> Decimal {
        self.legs.iter().find(|l| l.result.is_taxable()).map_or(self.state_rate, |l| l.state_rate)
    }

    /// The combined rate as applied to the taxable base: the state leg as applied plus the local
    /// layers that apply; the jurisdiction's general rate when nothing is taxable.
    pub fn applied_combined_rate(&self) -> Decimal {
        self.legs.iter().find(|l| l.result.is_taxable()).map_or(self.combined_rate, |l| l.rate)
    }

    pub fn advisory_codes(&self) -> Vec<&str> {
        self.advisories.iter().map(|a| a.code.as_str()).collect()
    }

    /// The 1099 block and the advisories as they would be had `prior` been paid to the counterparty earlier in
    /// the tax year: nothing else in a determination depends on that figure, so a caller may determine before
    /// it knows the figure and settle these two parts afterwards.
    pub fn with_vendor_prior(&self, reg: &Registry, req: &Request, prior: Decimal) -> (Option<Tracking1099>, Vec<Advisory>) {
        let tracking = tracking_1099(reg, req, self.as_of, Some(prior));
        let mut advisories = self.advisories.clone();
        let exceeded = tracking.as_ref().is_some_and(|t| t.threshold_exceeded);
        let present = advisories.get(self.information_return_at).is_some_and(|a| a.code == INFORMATION_RETURN_ADVISORY);
        if present && !exceeded {
            advisories.remove(self.information_return_at);
        } else if exceeded && !present && !advisories.iter().any(|a| a.code == INFORMATION_RETURN_ADVISORY) {
            advisories.insert(self.information_return_at.min(advisories.len()), advisory(reg, INFORMATION_RETURN_ADVISORY, None));
        }
        (tracking, advisories)
    }

    /// Ids of the rules that fired (taxability, sourcing, reclassification, special taxes).
    pub fn fired_rules(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self.legs.iter().map(|l| l.rule_id.as_str()).collect();
        out.push(self.sourcing_rule.as_str());
        out.extend(self.reclassified_by.as_deref());
        out.extend(self.special.iter().map(|s| s.id.as_str()));
        out
    }
}

/// What every stage reads (the registry, the request, the date) and what they gather in order: advisories, the
/// trace and the confidence factors.
struct Ctx<'a> {
    reg: &'a Registry,
    req: &'a Request,
    as_of: NaiveDate,
    /// The buyer's state code, which state-specific advisories name.
    buyer: &'static str,
    advisories: Vec<Advisory>,
    trace: Vec<TraceStep>,
    factors: Vec<(String, u32)>,
}

impl Ctx<'_> {
    fn advise(&mut self, code: &str, state: Option<&'static str>) {
        if self.advisories.iter().any(|a| a.code == code) {
            return;
        }
        self.advisories.push(advisory(self.reg, code, state));
    }

    /// An advisory about the buyer's state.
    fn advise_buyer(&mut self, code: &str) {
        self.advise(code, Some(self.buyer));
    }

    fn trace(&mut self, stage: Stage, rule: Option<&str>, result: impl Into<String>) {
        self.trace.push(TraceStep { stage, rule: rule.map(str::to_string), result: result.into() });
    }

    fn lower_confidence(&mut self, by: u32, why: impl Into<String>) {
        self.factors.push((why.into(), by));
    }
}

/// An advisory as the registry words it (a code it does not define reads as information).
fn advisory(reg: &Registry, code: &str, state: Option<&'static str>) -> Advisory {
    let (kind, message) = match reg.advisory(code) {
        Some(def) => (def.kind.clone(), def.message.clone()),
        None => ("information".to_string(), code.to_lowercase().replace('_', " ")),
    };
    let flagged = matches!(kind.as_str(), "nexus_warning" | "ambiguity" | "rate_fallback" | "input_warning" | "assumption");
    Advisory { code: code.to_string(), kind, message, state, flagged }
}

const INFORMATION_RETURN_ADVISORY: &str = "INFORMATION_RETURN_THRESHOLD_REACHED";

/// The counterparty's 1099 position after this payment, with `prior` paid to it earlier in the tax year.
fn tracking_1099(reg: &Registry, req: &Request, as_of: NaiveDate, prior: Option<Decimal>) -> Option<Tracking1099> {
    in_force(&reg.information_returns, as_of).map(|t| {
        let total = req.vendor_ytd_override.or(prior).unwrap_or(Decimal::ZERO) + req.amount;
        let exceeded = total >= t.value.threshold;
        Tracking1099 {
            counterparty_id: req.counterparty_id.clone(),
            payment_this_transaction: req.amount,
            vendor_ytd_total: total,
            threshold: t.value.threshold,
            threshold_exceeded: exceeded,
            form_required: exceeded.then(|| t.value.form.clone()),
            tax_year: as_of.year(),
        }
    })
}

fn name(list: &'static [&'static str], i: Option<u16>) -> &'static str {
    i.and_then(|i| list.get(i as usize).copied()).unwrap_or("unknown")
}

/// The outcome of one taxability evaluation.
struct Rated {
    rule: usize,
    outcome: TaxOutcome,
    tax: Decimal,
    readings: Vec<(String, Decimal, Citation)>,
}

/// A taxability rule's outcome in words, as the trace gives it: `taxable at 6.25% on 80% of base`.
pub fn describe(o: &TaxOutcome) -> String {
    match o {
        TaxOutcome::Taxable { state_rate, base_share, with_local } => {
            let mut s = "taxable".to_string();
            if let Some(r) = state_rate {
                s += &format!(" at {}", pct(*r));
            }
            if *base_share != Decimal::ONE {
                s += &format!(" on {} of base", pct(*base_share));
            }
            if !with_local {
                s += " without local";
            }
            s
        }
        TaxOutcome::Exempt { kind, reason } => format!("exempt as {kind}: {reason}"),
    }
}

fn outcome_tax(o: &TaxOutcome, amount: Decimal, state_rate: Decimal, local_rate: Decimal) -> Option<Decimal> {
    match o {
        TaxOutcome::Exempt { .. } => Some(Decimal::ZERO),
        TaxOutcome::Taxable { state_rate: sr, base_share, with_local } => {
            let rate = sr.unwrap_or(state_rate) + if *with_local { local_rate } else { Decimal::ZERO };
            money::tax(amount.checked_mul(*base_share)?, rate)
        }
    }
}

/// Finds the taxability rule that fires for the facts' category and rates `amount` with it.
fn rate_with(
    j: &Jurisdiction,
    facts: &FactSet,
    as_of: NaiveDate,
    amount: Decimal,
    state_rate: Decimal,
    local_rate: Decimal,
    mut trace: Option<&mut Vec<TraceStep>>,
) -> Result<Rated, EngineError> {
    let cat = facts.get(Fact::category).ok_or(Fault::Table("no category"))? as usize;
    let positions = j.by_category.get(cat).ok_or(Fault::Table("category out of range"))?;
    for &pos in positions {
        let r: &Rule<TaxOutcome> = j.taxability.get(pos as usize).ok_or(Fault::Table("rule index out of range"))?;
        if !r.covers(as_of) {
            if let Some(t) = trace.as_deref_mut() {
                t.push(TraceStep { stage: Stage::Taxability, rule: Some(r.id.clone()), result: format!("not in force on {as_of}") });
            }
            continue;
        }
        if !r.when.as_ref().is_none_or(|c| facts.holds(c)) {
            if let Some(t) = trace.as_deref_mut() {
                t.push(TraceStep { stage: Stage::Taxability, rule: Some(r.id.clone()), result: "condition does not hold".into() });
            }
            continue;
        }
        let (outcome, tax, readings) = match &r.body {
            RuleBody::Single(o) => (o.clone(), outcome_tax(o, amount, state_rate, local_rate).ok_or(Fault::TaxOverflow)?, vec![]),
            RuleBody::Alternatives(alts) => {
                let mut readings = vec![];
                let mut best: Option<(TaxOutcome, Decimal)> = None;
                for (o, c) in alts {
                    let t = outcome_tax(o, amount, state_rate, local_rate).ok_or(Fault::TaxOverflow)?;
                    readings.push((describe(o), t, c.clone()));
                    if best.as_ref().is_none_or(|(_, bt)| t > *bt) {
                        best = Some((o.clone(), t));
                    }
                }
                let (o, t) = best.ok_or(Fault::NoReadings)?;
                (o, t, readings)
            }
        };
        if let Some(t) = trace.as_deref_mut() {
            t.push(TraceStep { stage: Stage::Taxability, rule: Some(r.id.clone()), result: format!("fired: {}", describe(&outcome)) });
        }
        return Ok(Rated { rule: pos as usize, outcome, tax, readings });
    }
    Err(Fault::NoTaxabilityRule { state: j.code, category: CATEGORIES.get(cat).copied().unwrap_or("?"), as_of }.into())
}

/// Runs the whole determination, stage by stage.
pub fn determine(reg: &Registry, input: &Input) -> Result<Determination, EngineError> {
    let req = input.request;
    let as_of = input.as_of;
    if as_of < reg.coverage_from {
        return Err(EngineError::BeforeCoverage { as_of, coverage_from: reg.coverage_from });
    }
    let mut cx = Ctx { reg, req, as_of, buyer: state_code(req.buyer_state), advisories: vec![], trace: vec![], factors: vec![] };
    let cls = classify(&mut cx)?;
    let j =
        reg.jurisdiction(req.buyer_state).ok_or_else(|| EngineError::input("buyer_state", "this rule set has no rules for the state"))?;
    let state_rate = in_force(&j.state_rate, as_of).ok_or(Fault::NoStateRate { state: j.code, as_of })?;
    let sourced = source(&mut cx, j, &cls.facts)?;
    let rates = rate_layers(&mut cx, j, &sourced, state_rate);
    let outside = cls.category_entry.outside_sales_tax;
    let taxed = if outside {
        cx.trace(Stage::Taxability, None, format!("category {} is outside sales tax", name(&CATEGORIES, Some(cls.category))));
        cx.advise("ROUTED_TO_GAINS_TRACKER", None);
        Taxed::default()
    } else {
        let taxed = rate_legs(&mut cx, j, &cls, &rates)?;
        if name(&CATEGORIES, Some(cls.category)) == "digital_good" {
            digital_content_counterfactuals(&mut cx, j, &cls, &rates, &taxed)?;
        }
        taxed
    };
    let tax_due = taxed.tax();
    let party =
        Party { role: Role::of(&cls.facts), has_nexus: input.nexus.is_some_and(|n| n.get(&req.buyer_state).copied().unwrap_or(false)) };
    let mut special = if outside { vec![] } else { special_taxes(&mut cx, j, &cls.facts, party)? };
    let remitted = remit(&mut cx, j, &cls, party, &taxed.legs, &mut special);
    let (tracking_1099, information_return_at) = track_1099(&mut cx, input.vendor_ytd);
    fact_advisories(&mut cx, &cls.facts);
    if req.b2b_from_network == B2bFromNetwork::Conflicts {
        cx.advise("B2B_DECLARATION_DIFFERS_FROM_NETWORK", None);
    }
    let routing = route(j, &cls, party.role, &rates.jurisdiction, remitted.own_tax, &special);
    let confidence = confidence(&cx.factors);

    Ok(Determination {
        as_of,
        engine_version: reg.engine_version.clone(),
        rules_version: reg.version.clone(),
        role: party.role,
        amount: req.amount,
        buyer_state: cx.buyer,
        buyer_state_name: j.name.clone(),
        seller_state: req.seller_state.map(state_code),
        buyer_zip: req.buyer_zip.clone(),
        seller_zip: req.seller_zip.clone(),
        counterparty_id: req.counterparty_id.clone(),
        transaction_type: name(&TRANSACTION_TYPES, Some(cls.transaction_type)),
        input_work_type: cls.explicit_work_type.map(|w| name(&WORK_TYPES, Some(w))),
        work_type: name(&WORK_TYPES, Some(cls.work_type)),
        work_type_source: cls.work_type_source,
        work_type_label: reg.classification.work_types.get(cls.work_type as usize).map(|w| w.label.clone()).unwrap_or_default(),
        category: name(&CATEGORIES, Some(cls.category)),
        category_label: cls.category_entry.label.clone(),
        classification_basis: name(&CATEGORIES, Some(cls.basis_category)),
        classification_derivation: cls.derivation,
        reclassified_by: cls.reclassified_by,
        is_b2b: cls.facts.flag(Fact::is_b2b),
        use_context: cls.facts.name_of(Fact::use_context),
        marketplace_role: cls.facts.name_of(Fact::marketplace_role).unwrap_or("direct"),
        digital_content_type: cls.declared_content_type.map(|v| name(&DIGITAL_CONTENT_TYPES, Some(v))),
        digital_content_type_applied: cls.content_type_applies,
        digital_content_type_rule: taxed.content_type_rule,
        classification_facts: req.classification_facts.clone(),
        counterparty: req.counterparty.clone(),
        b2b_from_network: req.b2b_from_network,
        outside_sales_tax: outside.then(|| cls.category_entry.note.clone().unwrap_or_default()),
        sourcing: sourced.sourcing,
        sourcing_rule: sourced.rule.id.clone(),
        sourcing_citation: sourced.rule.citation.clone(),
        locality: rates.locality,
        jurisdiction: rates.jurisdiction,
        state_rate: rates.state_rate,
        state_rate_citation: state_rate.citation.clone(),
        local_rate: rates.local_rate,
        combined_rate: rates.combined_rate,
        layers: rates.layers,
        local_coverage: rates.local,
        split: rates.split,
        local_alternatives: rates.alternatives,
        legs: taxed.legs,
        tax_due,
        special,
        special_total: remitted.special_total,
        nexus_configured: input.nexus.is_some(),
        has_nexus: party.has_nexus,
        sales_tax: remitted.sales_tax,
        use_tax: remitted.use_tax,
        seller_remitting: remitted.seller_remitting,
        collected_by_marketplace: remitted.collected_by_marketplace,
        marketplace_remitted_tax: remitted.marketplace_remitted_tax,
        counts_toward_nexus_threshold: remitted.counts_toward_nexus_threshold,
        exemption_certificate: remitted.exemption_certificate,
        tax_if_nexus: remitted.tax_if_nexus,
        total_tax: remitted.total_tax,
        final_determination: remitted.final_determination,
        tracking_1099,
        information_return_at,
        confidence_score: confidence.score,
        confidence_level: confidence.level,
        confidence_factors: confidence.factors,
        advisories: cx.advisories,
        routing,
        trace: cx.trace,
    })
}

/// The sale as classified: work type, category (after reclassification), and the facts the later stages
/// read (with the derived facts set).
struct Classified<'a> {
    facts: FactSet,
    transaction_type: u16,
    explicit_work_type: Option<u16>,
    work_type: u16,
    work_type_source: WorkTypeSource,
    category: u16,
    category_entry: &'a CategoryEntry,
    /// The economic category of the work type (declared or inferred), before the transaction type's default
    /// category or any reclassification.
    basis_category: u16,
    derivation: String,
    reclassified_by: Option<String>,
    /// The declared `digital_content_type`, applied or not.
    declared_content_type: Option<u16>,
    /// The declaration applies only to a digital good without an explicit work type; otherwise it is cleared
    /// from `facts`.
    content_type_applies: bool,
}

/// Transaction type → work type → category, then the derived facts and the first reclassification that holds.
fn classify<'a>(cx: &mut Ctx<'a>) -> Result<Classified<'a>, EngineError> {
    let reg = cx.reg;
    let cls = &reg.classification;
    let mut facts = cx.req.facts.clone();
    let tt = facts.get(Fact::transaction_type).unwrap_or(3);
    let tt_entry = cls.transaction_types.get(tt as usize).ok_or(Fault::Table("transaction type table"))?;
    let explicit_wt = facts.declared(Fact::work_type);
    let declared_dct = facts.declared(Fact::digital_content_type);
    let digital_good = Fact::transaction_type.def().kind.index_of("digital_good");
    let dct_applies = declared_dct.is_some() && explicit_wt.is_none() && Some(tt) == digital_good;
    if declared_dct.is_some() && !dct_applies {
        facts.clear(Fact::digital_content_type);
        cx.advise("DIGITAL_CONTENT_TYPE_NOT_APPLIED", None);
    }
    let (wt, category, source) = match explicit_wt {
        Some(w) => (w, cls.work_types.get(w as usize).ok_or(Fault::Table("work type table"))?.category, WorkTypeSource::Explicit),
        None => (tt_entry.work_type, tt_entry.category, WorkTypeSource::Inferred),
    };
    facts.set(Fact::work_type, wt);
    facts.set(Fact::work_type_source, if source == WorkTypeSource::Explicit { 0 } else { 1 });
    facts.set(Fact::category, category);
    cx.trace(
        Stage::Classification,
        None,
        format!(
            "transaction_type {} → work_type {} ({source}) → category {}",
            name(&TRANSACTION_TYPES, Some(tt)),
            name(&WORK_TYPES, Some(wt)),
            name(&CATEGORIES, Some(category))
        ),
    );
    for (fact, cond) in &cls.derived {
        let v = facts.holds(cond);
        facts.set_bool(*fact, v);
    }
    let mut reclassified_by = None;
    for r in &cls.reclassify {
        if facts.holds(&r.when) {
            facts.set(Fact::category, r.category);
            cx.trace(Stage::Classification, Some(&r.id), format!("reclassified as {}", name(&CATEGORIES, Some(r.category))));
            for a in &r.advisories {
                cx.advise(a, None);
            }
            cx.lower_confidence(10, format!("reclassified by {}", r.id));
            reclassified_by = Some(r.id.clone());
            break;
        }
    }
    let category = facts.get(Fact::category).unwrap_or(category);
    let category_entry = cls.categories.get(category as usize).ok_or(Fault::Table("category table"))?;
    let basis_category = cls.work_types.get(wt as usize).ok_or(Fault::Table("work type table"))?.category;
    let derivation = match source {
        WorkTypeSource::Explicit => format!("explicit work_type {}", name(&WORK_TYPES, Some(wt))),
        WorkTypeSource::Inferred => format!("inferred from transaction_type {}", name(&TRANSACTION_TYPES, Some(tt))),
    };
    Ok(Classified {
        facts,
        transaction_type: tt,
        explicit_work_type: explicit_wt,
        work_type: wt,
        work_type_source: source,
        category,
        category_entry,
        basis_category,
        derivation,
        reclassified_by,
        declared_content_type: declared_dct,
        content_type_applies: dct_applies,
    })
}

/// Where the sale is taxed: the sourcing rule that fires, and the zip code it points to.
struct Sourced<'a> {
    rule: &'a Rule<Sourcing>,
    sourcing: Sourcing,
    zip: Option<String>,
}

/// The first sourcing rule in force whose condition holds; origin sourcing needs the seller's zip.
fn source<'a>(cx: &mut Ctx, j: &'a Jurisdiction, facts: &FactSet) -> Result<Sourced<'a>, EngineError> {
    let (req, as_of) = (cx.req, cx.as_of);
    let rule = j
        .sourcing
        .iter()
        .find(|r| r.covers(as_of) && r.when.as_ref().is_none_or(|c| facts.holds(c)))
        .ok_or(Fault::NoSourcingRule { state: j.code, as_of })?;
    let sourcing = match &rule.body {
        RuleBody::Single(s) => *s,
        RuleBody::Alternatives(a) => a.first().map(|x| x.0).unwrap_or(Sourcing::Destination),
    };
    cx.trace(Stage::Sourcing, Some(&rule.id), sourcing.as_str());
    let zip = match sourcing {
        Sourcing::Origin => match &req.seller_zip {
            Some(z) => Some(z.clone()),
            None => {
                return Err(EngineError::input(
                    "seller_zip",
                    format!("is required: intrastate sales in {} are sourced to the seller's location ({})", j.code, rule.citation.cite),
                ))
            }
        },
        Sourcing::Destination => req.buyer_zip.clone(),
    };
    Ok(Sourced { rule, sourcing, zip })
}

/// The general rates where the sale is sourced: the state's, and the local layers of the sourced zip code.
struct Rates {
    state_rate: Decimal,
    layers: Vec<AppliedLayer>,
    locality: Option<String>,
    /// The sum of `layers`.
    local_rate: Decimal,
    combined_rate: Decimal,
    /// The locality and state, or the state's name when no locality applies.
    jurisdiction: String,
    local: LocalCoverage,
    split: Option<String>,
    /// The combined rates of the zip code's other parts, where it straddles jurisdictions of other rates.
    alternatives: Vec<Decimal>,
}

/// How much of the local tax at the sourced place the answer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalCoverage {
    /// The state levies no local sales tax: the state rate is the whole rate.
    NoLocalTax,
    /// Every local tax at the zip code is in the tables on the day.
    Whole,
    /// The known local taxes were applied; a city or district tax may be missing.
    Partial,
    /// The tables hold the zip code only from a later day: state rate only.
    NotOnDate,
    /// The zip code is in no table, or is in another state: state rate only.
    Unknown,
    /// No zip code was given: state rate only.
    NoZip,
}

impl LocalCoverage {
    /// Whether the combined rate holds every local tax (what /rates/local reports as `local_rates_covered`).
    pub fn is_whole(self) -> bool {
        matches!(self, LocalCoverage::NoLocalTax | LocalCoverage::Whole)
    }
}

/// The local layers in force for the sourced zip code, when the state has local taxes and the zip is in it.
fn rate_layers(cx: &mut Ctx, j: &Jurisdiction, sourced: &Sourced, state_rate: &Dated<Decimal>) -> Rates {
    let (reg, req, as_of) = (cx.reg, cx.req, cx.as_of);
    let local_taxes = in_force(&j.local_taxes, as_of).is_some_and(|d| d.value);
    let mut layers = vec![];
    let mut locality = None;
    let mut split = None;
    let mut alternatives = vec![];
    let mut local = if local_taxes { LocalCoverage::Unknown } else { LocalCoverage::NoLocalTax };
    match &sourced.zip {
        Some(given) => {
            let (zip, plus4) = crate::postal::zip_parts(given);
            let entries = reg.local.entries_of(zip);
            match entries.iter().find(|e| e.state() == req.buyer_state) {
                None if !entries.is_empty() => {
                    let mut text = format!("zip {zip} is in ");
                    for (n, e) in entries.iter().enumerate() {
                        text.push_str(if n == 0 { "" } else { ", " });
                        text.push_str(state_code(e.state()));
                    }
                    text.push_str(", not ");
                    text.push_str(j.code);
                    cx.advise_buyer("ZIP_STATE_MISMATCH");
                    cx.lower_confidence(20, text);
                    if !local_taxes {
                        local = LocalCoverage::NoLocalTax;
                    }
                }
                Some(entry) if local_taxes => {
                    let answer = reg.local.answer(entry, plus4, as_of);
                    match answer.coverage {
                        Coverage::From(from) => {
                            local = LocalCoverage::NotOnDate;
                            cx.advise_buyer("ZIP_NOT_COVERED_ON_DATE");
                            cx.lower_confidence(
                                15,
                                format!("the local rate tables hold zip {zip} from {from}, not on {as_of}; state rate only"),
                            );
                        }
                        coverage => {
                            for l in &answer.part.layers {
                                layers.push(AppliedLayer {
                                    id: l.tax.id.clone(),
                                    level: l.tax.level.to_string(),
                                    name: l.tax.name.clone(),
                                    rate: l.rate.value,
                                    citation: l.rate.citation.clone(),
                                });
                            }
                            locality = entry.locality.as_deref().map(str::to_string);
                            let place = locality.clone().unwrap_or_else(|| format!("zip {zip}"));
                            if coverage == Coverage::Partial {
                                local = LocalCoverage::Partial;
                                cx.advise_buyer("LOCAL_RATES_PARTIAL");
                                let (points, known) =
                                    if layers.is_empty() { (15, "no local tax") } else { (10, "only the county and district taxes") };
                                cx.lower_confidence(
                                    points,
                                    format!("the local rate tables of {} hold {known} known at zip {zip} ({place}); a city or district tax may be missing", j.code),
                                );
                            } else {
                                local = LocalCoverage::Whole;
                            }
                            if answer.straddles() {
                                let text = answer.split_text().unwrap_or_default();
                                cx.advise_buyer("ZIP_SPANS_JURISDICTIONS");
                                cx.lower_confidence(10, format!("zip {zip} spans jurisdictions ({text}); the rates of {place} were used"));
                                split = Some(text);
                                alternatives = answer.others.iter().map(|p| state_rate.value + p.rate).collect();
                            }
                        }
                    }
                }
                Some(_) => cx.advise_buyer("NO_LOCAL_TAX_IN_STATE"),
                None if local_taxes => {
                    cx.advise_buyer(if sourced.sourcing == Sourcing::Origin { "SELLER_ZIP_UNKNOWN_FOR_ORIGIN" } else { "ZIP_NOT_FOUND" });
                    cx.lower_confidence(15, format!("zip {zip} is not in the local rate tables; state rate only"));
                }
                None => cx.advise_buyer("NO_LOCAL_TAX_IN_STATE"),
            }
        }
        None if local_taxes => {
            local = LocalCoverage::NoZip;
            cx.lower_confidence(10, "no zip code given; local rates not applied")
        }
        None => {}
    }
    let state_rate = state_rate.value;
    let local_rate: Decimal = layers.iter().map(|l| l.rate).sum();
    let combined_rate = state_rate + local_rate;
    let jurisdiction = match &locality {
        Some(l) => format!("{l}, {}", j.code),
        None => j.name.clone(),
    };
    cx.trace(
        Stage::Rates,
        None,
        format!("state {} + local {} = {} ({jurisdiction})", pct(state_rate), pct(local_rate), pct(combined_rate)),
    );
    Rates { state_rate, layers, locality, local_rate, combined_rate, jurisdiction, local, split, alternatives }
}

/// The sale rated leg by leg.
#[derive(Default)]
struct Taxed {
    legs: Vec<Leg>,
    /// The facts the legs were rated with (a photograph rated as art where no rule names photographs).
    rating_facts: FactSet,
    /// The last rule that fired and names `digital_content_type`.
    content_type_rule: Option<String>,
}

impl Taxed {
    /// The tax the legs add up to.
    fn tax(&self) -> Decimal {
        self.legs.iter().map(|l| l.tax).sum()
    }
}

/// The `digital_content_type` value that rates `value` in `j`: a photograph where no rule of `j` names
/// photographs is rated as art.
fn content_type_rated(j: &Jurisdiction, value: u16) -> u16 {
    let kind = Fact::digital_content_type.def().kind;
    match (kind.index_of("photograph"), kind.index_of("art_image")) {
        (Some(p), Some(a)) if value == p && !j.content_types_named.contains(&p) => a,
        _ => value,
    }
}

/// Rates each leg (a maintenance contract's itemized updates and support, else the whole amount) with the
/// taxability rule that fires for it.
fn rate_legs(cx: &mut Ctx, j: &Jurisdiction, cls: &Classified, rates: &Rates) -> Result<Taxed, EngineError> {
    let (req, as_of) = (cx.req, cx.as_of);
    let leg_plan: Vec<(&'static str, Decimal)> =
        match (req.itemized, cls.facts.flag(Fact::separately_itemized), name(&CATEGORIES, Some(cls.category))) {
            (Some((u, s)), true, "software_maintenance") => vec![("updates", u), ("support", s)],
            _ => vec![("whole", req.amount)],
        };
    let mut rating_facts = cls.facts.clone();
    if let Some(declared) = rating_facts.declared(Fact::digital_content_type) {
        let rated = content_type_rated(j, declared);
        if rated != declared {
            rating_facts.set(Fact::digital_content_type, rated);
            cx.trace(Stage::Classification, None, format!("{} has no photograph rule; rated as art_image", j.code));
        }
    }
    let mut legs = vec![];
    let mut content_type_rule = None;
    for (leg_name, leg_amount) in leg_plan {
        let mut lf = rating_facts.clone();
        lf.set(Fact::leg, Fact::leg.def().kind.index_of(leg_name).unwrap_or(0));
        let rated = rate_with(j, &lf, as_of, leg_amount, rates.state_rate, rates.local_rate, Some(&mut cx.trace))?;
        let rule = &j.taxability[rated.rule];
        for a in &rule.advisories {
            cx.advise_buyer(a);
        }
        if !rated.readings.is_empty() {
            cx.advise_buyer("AMBIGUOUS_LAW_HIGHER_TAX");
            cx.lower_confidence(15, format!("ambiguous law ({}): the higher-tax reading was used", rule.id));
        }
        let (leg_state, leg_local, base_share, result, reason) = match &rated.outcome {
            TaxOutcome::Taxable { state_rate: sr, base_share, with_local } => (
                sr.unwrap_or(rates.state_rate),
                if *with_local { rates.local_rate } else { Decimal::ZERO },
                *base_share,
                LegResult::Taxable,
                None,
            ),
            TaxOutcome::Exempt { kind, reason } => {
                (Decimal::ZERO, Decimal::ZERO, Decimal::ONE, LegResult::Exempt(kind.clone()), Some(reason.clone()))
            }
        };
        let (mut rule_mentions_dct, mut reads_b2b) = (false, false);
        if let Some(w) = &rule.when {
            w.visit_facts(&mut |f, _| {
                rule_mentions_dct |= f == Fact::digital_content_type;
                reads_b2b |= f == Fact::is_b2b;
            });
        }
        if rule_mentions_dct {
            content_type_rule = Some(rule.id.clone());
        }
        legs.push(Leg {
            name: leg_name,
            amount: leg_amount,
            taxable_amount: money::cents(leg_amount * base_share),
            base_share,
            state_rate: leg_state,
            local_rate: leg_local,
            rate: leg_state + leg_local,
            tax: rated.tax,
            rule_id: rule.id.clone(),
            result,
            reason,
            citation: rule.citation.clone(),
            note: rule.note.clone(),
            readings: rated.readings,
            reads_b2b,
        });
    }
    Ok(Taxed { legs, rating_facts, content_type_rule })
}

/// For a digital good: whether the declared content type changed the tax, and whether declaring one of the
/// special types could lower it (each rated on the whole amount, without trace).
fn digital_content_counterfactuals(
    cx: &mut Ctx,
    j: &Jurisdiction,
    cls: &Classified,
    rates: &Rates,
    taxed: &Taxed,
) -> Result<(), EngineError> {
    let (req, as_of) = (cx.req, cx.as_of);
    let tax_now = taxed.tax();
    let facts = &taxed.rating_facts;
    let rate = |f: &FactSet| rate_with(j, f, as_of, req.amount, rates.state_rate, rates.local_rate, None);
    if cls.content_type_applies {
        let mut generic = facts.clone();
        generic.clear(Fact::digital_content_type);
        if rate(&generic)?.tax != tax_now {
            cx.advise_buyer("DIGITAL_CONTENT_TYPE_DECLARED");
        }
    }
    let declared_special = facts
        .declared(Fact::digital_content_type)
        .map(|v| matches!(DIGITAL_CONTENT_TYPES.get(v as usize), Some(&"art_image" | &"photograph" | &"printable_document")))
        .unwrap_or(false);
    if !declared_special {
        for v in ["art_image", "photograph", "printable_document"] {
            let mut alt = facts.clone();
            if let Some(i) = Fact::digital_content_type.def().kind.index_of(v) {
                alt.set(Fact::digital_content_type, content_type_rated(j, i));
            }
            if rate(&alt)?.tax < tax_now {
                cx.advise_buyer("DIGITAL_CONTENT_TYPE_MAY_REDUCE");
                cx.lower_confidence(5, "a digital_content_type declaration may lower the tax");
                break;
            }
        }
    }
    Ok(())
}

/// The caller's side of the sale and whether it has nexus in the buyer's state.
#[derive(Clone, Copy)]
struct Party {
    role: Role,
    has_nexus: bool,
}

/// The nexus-independent (special) taxes of the buyer's zip code that fire, levied on the buyer where it is.
fn special_taxes(cx: &mut Ctx, j: &Jurisdiction, facts: &FactSet, party: Party) -> Result<Vec<SpecialLeg>, EngineError> {
    let (reg, req, as_of) = (cx.reg, cx.req, cx.as_of);
    let mut special = vec![];
    let Some(zip) = req.buyer_zip.as_deref().map(|z| crate::postal::zip_parts(z).0) else { return Ok(special) };
    for s in reg.special_taxes.iter().filter(|s| s.state == req.buyer_state && s.zips.iter().any(|z| z == zip)) {
        if !s.when.as_ref().is_none_or(|c| facts.holds(c)) {
            cx.trace(Stage::SpecialTax, Some(&s.id), "condition does not hold");
            continue;
        }
        let Some(rate) = in_force(&s.rates, as_of) else {
            cx.trace(Stage::SpecialTax, Some(&s.id), format!("not in force on {as_of}"));
            continue;
        };
        if s.requires_seller_nexus && party.role == Role::Seller && !party.has_nexus {
            cx.trace(Stage::SpecialTax, Some(&s.id), "requires seller nexus");
            continue;
        }
        let tax = money::tax(req.amount, rate.value).ok_or(Fault::TaxOverflow)?;
        cx.trace(Stage::SpecialTax, Some(&s.id), format!("fired: {} of {}", pct(rate.value), req.amount));
        cx.advise_buyer("SPECIAL_TAX_APPLIED");
        let loc = reg
            .local
            .entry(zip, req.buyer_state)
            .and_then(|z| z.locality.as_deref())
            .map(|l| format!("{l}, {}", j.code))
            .unwrap_or_else(|| j.name.clone());
        special.push(SpecialLeg {
            id: s.id.clone(),
            name: s.name.clone(),
            locality: loc,
            rate: rate.value,
            tax,
            citation: rate.citation.clone(),
        });
    }
    Ok(special)
}

/// Who owes what: the tax due after an exemption certificate, a marketplace facilitator, nexus and the
/// seller's remittance.
struct Remitted {
    final_determination: FinalDetermination,
    /// The sales or use tax the caller owes (special taxes apart).
    own_tax: Decimal,
    exemption_certificate: Option<String>,
    special_total: Decimal,
    sales_tax: Option<Decimal>,
    use_tax: Option<Decimal>,
    seller_remitting: Option<bool>,
    collected_by_marketplace: bool,
    marketplace_remitted_tax: Option<Decimal>,
    counts_toward_nexus_threshold: Option<bool>,
    tax_if_nexus: Option<Decimal>,
    total_tax: Decimal,
}

/// Role, nexus, marketplace, exemption certificate and remittance; a buyer whose seller remitted owes no
/// special tax either (`special` is zeroed).
fn remit(cx: &mut Ctx, j: &Jurisdiction, cls: &Classified, party: Party, legs: &[Leg], special: &mut [SpecialLeg]) -> Remitted {
    let (req, as_of) = (cx.req, cx.as_of);
    let outside = cls.category_entry.outside_sales_tax;
    let mut final_determination = if outside {
        FinalDetermination::OutsideSalesTax
    } else if legs.iter().any(|l| l.result.is_taxable()) {
        FinalDetermination::Taxable
    } else {
        FinalDetermination::Exempt(legs.first().map(|l| l.result.as_str().to_string()).unwrap_or_else(|| "not_taxable".into()))
    };
    let mut own_tax: Decimal = legs.iter().map(|l| l.tax).sum();
    let mut exemption_certificate = None;
    if let (Some(cert), false) = (&req.exemption_certificate, outside) {
        own_tax = Decimal::ZERO;
        exemption_certificate = Some(cert.clone());
        final_determination = FinalDetermination::ExemptionCertificate;
        cx.advise_buyer("EXEMPTION_CERTIFICATE_APPLIED");
        cx.trace(Stage::Exemption, None, "exemption certificate given: sales/use tax not charged");
    }
    let mut special_total: Decimal = special.iter().map(|s| s.tax).sum();
    let (mut sales_tax, mut use_tax, mut seller_remitting) = (None, None, None);
    let (mut collected_by_marketplace, mut marketplace_remitted_tax, mut counts_toward, mut tax_if_nexus) = (false, None, None, None);
    match party.role {
        Role::Seller => {
            let mp_seller = cls.facts.name_of(Fact::marketplace_role) == Some("seller");
            let mf = in_force(&j.marketplace, as_of).filter(|m| m.value.law);
            if let (true, Some(mf)) = (mp_seller, mf) {
                collected_by_marketplace = true;
                marketplace_remitted_tax = Some(own_tax);
                counts_toward = Some(mf.value.facilitated_sales_count != FacilitatedCount::Excluded);
                own_tax = Decimal::ZERO;
                cx.advise_buyer("MARKETPLACE_FACILITATOR_COLLECTS");
                cx.trace(Stage::Marketplace, None, format!("facilitator collects in {} ({})", j.code, mf.citation.cite));
            } else if !party.has_nexus && !outside {
                tax_if_nexus = Some(own_tax);
                own_tax = Decimal::ZERO;
                final_determination = FinalDetermination::NoNexus;
                cx.advise_buyer("NEXUS_WARNING");
                cx.trace(
                    Stage::Nexus,
                    None,
                    format!("no nexus in {}: sales tax 0 (would be {})", j.code, tax_if_nexus.unwrap_or_default()),
                );
            }
            sales_tax = Some(own_tax);
        }
        Role::Buyer => {
            if req.seller_remitting == Some(true) {
                own_tax = Decimal::ZERO;
                special_total = Decimal::ZERO;
                cx.advise_buyer("SELLER_REMITTED");
                cx.trace(Stage::Remittance, None, "seller collected and remitted: no use tax due");
            }
            seller_remitting = req.seller_remitting;
            use_tax = Some(own_tax);
        }
    }
    if seller_remitting == Some(true) {
        for s in special.iter_mut() {
            s.tax = Decimal::ZERO;
        }
    }
    Remitted {
        final_determination,
        own_tax,
        exemption_certificate,
        special_total,
        sales_tax,
        use_tax,
        seller_remitting,
        collected_by_marketplace,
        marketplace_remitted_tax,
        counts_toward_nexus_threshold: counts_toward,
        tax_if_nexus,
        total_tax: own_tax + special_total,
    }
}

/// The counterparty's 1099 position by the transaction's tax year, and where its threshold advisory goes.
fn track_1099(cx: &mut Ctx, vendor_ytd: Option<Decimal>) -> (Option<Tracking1099>, usize) {
    let tracking = tracking_1099(cx.reg, cx.req, cx.as_of, vendor_ytd);
    let at = cx.advisories.len();
    if tracking.as_ref().is_some_and(|t| t.threshold_exceeded) {
        cx.advise(INFORMATION_RETURN_ADVISORY, None);
    }
    (tracking, at)
}

/// The registry's advisories whose condition the facts meet; an assumption lowers confidence.
fn fact_advisories(cx: &mut Ctx, facts: &FactSet) {
    let reg = cx.reg;
    for def in &reg.advisories {
        if let Some(w) = &def.when {
            if facts.holds(w) {
                cx.advise_buyer(&def.code);
                if def.kind == "assumption" {
                    cx.lower_confidence(5, format!("assumed: {}", def.message));
                }
            }
        }
    }
}

/// Who receives what the caller owes.
fn route(j: &Jurisdiction, cls: &Classified, role: Role, jurisdiction: &str, own_tax: Decimal, special: &[SpecialLeg]) -> Vec<Routing> {
    let mut routing = vec![];
    if cls.category_entry.outside_sales_tax {
        let destination = cls.category_entry.route.clone().unwrap_or_else(|| "gains_tracker".into());
        routing.push(Routing { kind: RoutingKind::CapitalGains, amount: Decimal::ZERO, destination, jurisdiction: "federal".into() });
    }
    if own_tax > Decimal::ZERO {
        routing.push(Routing {
            kind: if role == Role::Seller { RoutingKind::SalesTax } else { RoutingKind::UseTax },
            amount: own_tax,
            destination: format!("{} tax authority", j.name),
            jurisdiction: jurisdiction.to_string(),
        });
    }
    for s in special.iter().filter(|s| s.tax > Decimal::ZERO) {
        routing.push(Routing {
            kind: RoutingKind::SpecialTax,
            amount: s.tax,
            destination: s.name.clone(),
            jurisdiction: s.locality.clone(),
        });
    }
    routing
}

struct Confidence {
    score: u32,
    level: ConfidenceLevel,
    factors: Vec<String>,
}

/// 100 less every penalty, with the reasons in the order they arose.
fn confidence(factors: &[(String, u32)]) -> Confidence {
    let penalty: u32 = factors.iter().map(|(_, p)| *p).sum();
    let score = 100u32.saturating_sub(penalty);
    let mut reasons: Vec<String> = factors.iter().map(|(f, _)| f.clone()).collect();
    if reasons.is_empty() {
        reasons.push("every fact needed was declared and every rule applied is settled law".into());
    }
    Confidence { score, level: ConfidenceLevel::of(score), factors: reasons }
}

/// `0.0625` → `6.25%`.
pub fn pct(rate: Decimal) -> String {
    format!("{}%", (rate * Decimal::from(100)).normalize())
}
