//! Renders a determination as the contract's JSON bodies, written as text member by member: the full
//! calculate response (`FullText`; the API passes in the members it adds: transaction_id, timestamp,
//! entity_id, mode, api_version) and the demo body.

/// The calculate response's `api_version`.
pub const API_VERSION: &str = "v2";

use std::fmt::Write;

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::determine::{pct, Advisory, Determination, FinalDetermination, Role, Stage, Tracking1099};
use super::request::B2bFromNetwork;
use crate::rules::registry::Citation;

pub const DISCLAIMER: &str = "Estimates for information only, computed from cited public law as of the date shown; not legal or tax advice. Confirm with a qualified professional before filing.";

/// A JSON number holding the decimal exactly (money keeps its cents: 66.00).
pub fn num(d: Decimal) -> Value {
    serde_json::from_str(&d.to_string()).unwrap_or(Value::Null)
}

/// Money as a JSON number with exactly two decimals.
pub fn money(d: Decimal) -> Value {
    num(cents(d).0)
}

/// The full response body, as the engine knows it (for tools; the API writes `FullText`).
pub fn full(det: &Determination) -> Value {
    serde_json::from_str(&FullText::new(det).with(det, det.tracking_1099.as_ref(), &det.advisories, &[])).unwrap_or(Value::Null)
}

/// The full body's text with its two 1099-dependent members (`tracking_1099`, `advisories`) left open, so that
/// they can be settled later without writing the rest again: the ledger batch learns the counterparty's total
/// last, and writes only these. The body is thus five pieces: three fixed by the determination and the API's
/// members ([`FullText::into_fixed`]), and between them the two settled ones ([`settled`]), joined by the ledger
/// batch ([`joined`]).
pub struct FullText {
    /// `{` and the members before `tracking_1099`.
    head: String,
    /// The members between `tracking_1099` and `advisories`.
    middle: String,
    /// The members after `advisories`.
    tail: String,
}

impl FullText {
    pub fn new(det: &Determination) -> FullText {
        let (mut head, mut middle, mut tail) = (String::with_capacity(1024), String::with_capacity(256), String::with_capacity(4096));
        write_head(&mut Obj::open(&mut head), det);
        write_middle(&mut Obj::run(&mut middle), det);
        write_rest(&mut Obj::run(&mut tail), det);
        FullText { head, middle, tail }
    }

    /// The body's text with these members, and `extra` string members (the API's transaction_id, timestamp,
    /// …) at the end.
    pub fn with(&self, det: &Determination, tracking: Option<&Tracking1099>, advisories: &[Advisory], extra: &[(&str, &str)]) -> String {
        joined([&self.head, &self.middle, &tail_with(&self.tail, extra, None)], &settled(det, tracking, advisories))
    }

    /// The three fixed pieces, `extra` string members (and after them an `upgrade` object of string members if
    /// given) ending the last: `{` and the members before `tracking_1099`; those between it and `advisories`;
    /// those after, and `}`.
    pub fn into_fixed(self, extra: &[(&str, &str)], upgrade: Option<&[(&str, &str)]>) -> [String; 3] {
        let tail = tail_with(&self.tail, extra, upgrade);
        [self.head, self.middle, tail]
    }
}

fn tail_with(tail: &str, extra: &[(&str, &str)], upgrade: Option<&[(&str, &str)]>) -> String {
    let mut s = String::with_capacity(tail.len() + 512);
    s.push_str(tail);
    let mut o = Obj { out: &mut s, empty: false };
    put_extra(&mut o, extra, upgrade);
    o.close();
    s
}

/// `extra` string members, then an `upgrade` object of string members if given.
fn put_extra(o: &mut Obj, extra: &[(&str, &str)], upgrade: Option<&[(&str, &str)]>) {
    for (k, v) in extra {
        o.put(k, v);
    }
    if let Some(upgrade) = upgrade {
        o.obj("upgrade", |o| put_extra(o, upgrade, None));
    }
}

/// The two pieces the counterparty's 1099 total settles, each with its leading comma and the one after it:
/// `tracking_1099` with `counterparty_notice`, and `advisories`.
pub fn settled(det: &Determination, tracking: Option<&Tracking1099>, advisories: &[Advisory]) -> [String; 2] {
    let (mut t, mut a) = (String::with_capacity(256), String::with_capacity(64));
    let mut o = Obj { out: &mut t, empty: false };
    write_tracking(&mut o, tracking);
    write_counterparty_notice(&mut o, det, tracking);
    t.push(',');
    write_advisories(&mut Obj { out: &mut a, empty: false }, advisories);
    a.push(',');
    [t, a]
}

/// The body's text from its pieces: the fixed ones with the settled ones between them.
pub fn joined(fixed: [&str; 3], settled: &[String; 2]) -> String {
    let mut s = String::with_capacity(fixed.iter().map(|f| f.len()).sum::<usize>() + settled[0].len() + settled[1].len());
    for (i, piece) in fixed.iter().enumerate() {
        s.push_str(piece);
        if let Some(between) = settled.get(i) {
            s.push_str(between);
        }
    }
    s
}

fn classification_note(det: &Determination) -> String {
    let mut s = format!("{} ({}): {}", det.work_type_label, det.classification_derivation, det.category_label);
    if let Some(r) = &det.reclassified_by {
        s += &format!("; reclassified by {r}");
    }
    if let Some(note) = &det.outside_sales_tax {
        s += &format!("; outside sales tax: {note}");
    }
    s
}

/// The demo body (keyless calls): totals without the breakdown, then the API's `extra` string members and its
/// `upgrade` object (string members) if given.
pub fn demo(det: &Determination, extra: &[(&str, &str)], upgrade: Option<&[(&str, &str)]>) -> String {
    let mut out = String::with_capacity(1024);
    let mut o = Obj::open(&mut out);
    o.put("success", &true)
        .put("engine_version", &det.engine_version)
        .put("mode", "demo")
        .put("role", det.role.as_str())
        .put("amount", &Num(det.amount));
    o.put("buyer_state", det.buyer_state)
        .put("buyer_zip", &det.buyer_zip)
        .put("transaction_type", det.transaction_type)
        .put("work_type", det.work_type);
    o.put("classification_basis", det.classification_basis)
        .put("is_b2b", &det.is_b2b)
        .put("digital_content_type", &det.digital_content_type);
    o.put("classification_facts", &det.classification_facts)
        .put("total_tax", &cents(det.total_tax))
        .put("combined_rate", &ratio(det.applied_combined_rate()));
    o.put("applied_rate", &ratio(det.applied_rate())).put("nexus_configured_for_state", &det.has_nexus);
    o.obj("confidence", |o| {
        o.put("score", &det.confidence_score).put("level", det.confidence_level.as_str());
    });
    o.put("disclaimer", DISCLAIMER);
    if let Some(t) = det.tax_if_nexus {
        o.obj("tax_if_nexus", |o| {
            o.put("total_tax", &cents(t))
                .put("combined_rate", &ratio(det.applied_combined_rate()))
                .put("basis", "no nexus configured for this state in demo mode");
        });
    } else if let (true, Some(l)) = (det.total_tax.is_zero(), det.legs.first()) {
        o.obj("exemption", |o| {
            o.put("type", l.result.as_str());
            if let Some(r) = &l.reason {
                o.put("reason", r);
            }
        });
    }
    put_extra(&mut o, extra, upgrade);
    o.close();
    out
}

// The bodies are written as text member by member, without building a `Value` first (they are the hot
// paths): the same text serde_json writes for the same members in the same order, compact, strings escaped
// alike, decimals as their exact digits (as `num` gives them).

/// A value as JSON text.
trait Js {
    fn put(&self, out: &mut String);
}

impl Js for str {
    fn put(&self, out: &mut String) {
        escaped(out, self);
    }
}

impl<T: Js + ?Sized> Js for &T {
    fn put(&self, out: &mut String) {
        (**self).put(out);
    }
}

impl Js for String {
    fn put(&self, out: &mut String) {
        escaped(out, self);
    }
}

impl Js for bool {
    fn put(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl Js for u32 {
    fn put(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl Js for i32 {
    fn put(&self, out: &mut String) {
        let _ = write!(out, "{self}");
    }
}

impl<T: Js> Js for Option<T> {
    fn put(&self, out: &mut String) {
        match self {
            Some(v) => v.put(out),
            None => out.push_str("null"),
        }
    }
}

impl<T: Js> Js for [T] {
    fn put(&self, out: &mut String) {
        out.push('[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            v.put(out);
        }
        out.push(']');
    }
}

impl Js for Map<String, Value> {
    fn put(&self, out: &mut String) {
        out.push_str(&serde_json::to_string(self).unwrap_or_else(|_| "{}".into()));
    }
}

/// A decimal as a JSON number, exactly its digits (as `num`).
struct Num(Decimal);

impl Js for Num {
    fn put(&self, out: &mut String) {
        let _ = write!(out, "{}", self.0);
    }
}

/// Money, with exactly two decimals (as `money`).
fn cents(d: Decimal) -> Num {
    Num(super::money::two_places(d))
}

/// A rate, without trailing zeros (as `rate`).
fn ratio(d: Decimal) -> Num {
    Num(d.normalize())
}

/// A citation as text: the cite, then its address in angle brackets.
struct Cite<'a>(&'a Citation);

impl Js for Cite<'_> {
    fn put(&self, out: &mut String) {
        match &self.0.url {
            Some(u) => escaped(out, &format!("{} <{}>", self.0.cite, u)),
            None => escaped(out, &self.0.cite),
        }
    }
}

/// A JSON string, escaped as serde_json escapes it: quote, backslash and control characters.
fn escaped(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// An object being written: its members in order.
struct Obj<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> Obj<'a> {
    fn open(out: &'a mut String) -> Obj<'a> {
        out.push('{');
        Obj { out, empty: true }
    }

    /// Members written into `out` without the braces (a run of a larger object).
    fn run(out: &'a mut String) -> Obj<'a> {
        Obj { out, empty: true }
    }

    fn close(self) {
        self.out.push('}');
    }

    fn key(&mut self, k: &str) -> &mut String {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        self.out.push('"');
        self.out.push_str(k);
        self.out.push_str("\":");
        self.out
    }

    fn put<V: Js + ?Sized>(&mut self, k: &str, v: &V) -> &mut Self {
        v.put(self.key(k));
        self
    }

    fn obj(&mut self, k: &str, f: impl FnOnce(&mut Obj)) -> &mut Self {
        let mut o = Obj::open(self.key(k));
        f(&mut o);
        o.close();
        self
    }

    /// An array of objects, written by `f`.
    fn array(&mut self, k: &str, f: impl FnOnce(&mut Arr)) -> &mut Self {
        let out = self.key(k);
        out.push('[');
        let mut a = Arr { out, empty: true };
        f(&mut a);
        a.out.push(']');
        self
    }

    /// An array of objects, one per item.
    fn list<T>(&mut self, k: &str, items: impl IntoIterator<Item = T>, mut f: impl FnMut(&mut Obj, T)) -> &mut Self {
        self.array(k, |a| {
            for item in items {
                a.obj(|o| f(o, item));
            }
        })
    }
}

/// An array of objects being written: its items in order.
struct Arr<'a> {
    out: &'a mut String,
    empty: bool,
}

impl Arr<'_> {
    fn obj(&mut self, f: impl FnOnce(&mut Obj)) -> &mut Self {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        let mut o = Obj::open(self.out);
        f(&mut o);
        o.close();
        self
    }
}

fn write_tax(o: &mut Obj, det: &Determination, amount: Decimal, kind: &str) {
    let first = det.legs.first();
    o.put("jurisdiction", &det.jurisdiction)
        .put("state", det.buyer_state)
        .put("rate", &ratio(first.map_or(Decimal::ZERO, |l| l.rate)))
        .put("amount", &cents(amount))
        .put("type", kind);
    // Without nexus a seller's reason replaces the leg's; the leg's result goes with the leg's reason.
    let nexus_reason = (det.role == Role::Seller && !det.has_nexus && !det.collected_by_marketplace)
        .then(|| format!("no nexus configured in {}", det.buyer_state));
    let leg = first.filter(|l| l.reason.is_some());
    if let Some(r) = nexus_reason.as_ref().or(leg.and_then(|l| l.reason.as_ref())) {
        o.put("reason", r);
    }
    if let Some(l) = leg {
        o.put("exemption", l.result.as_str());
    }
    if kind == "use_tax" {
        o.put("state_rate", &ratio(det.applied_state_rate()))
            .put("local_rate", &ratio(det.local_rate))
            .put("combined_rate", &ratio(det.applied_combined_rate()))
            .put("gross_amount", &cents(det.amount));
        o.put(
            "taxable_amount",
            &cents(det.legs.iter().map(|l| if l.result.is_taxable() { l.taxable_amount } else { Decimal::ZERO }).sum()),
        );
        o.put("taxable_percentage", &Num((first.map_or(Decimal::ONE, |l| l.base_share) * Decimal::from(100)).normalize()));
        if det.seller_remitting == Some(true) {
            o.put("note", "the seller collected and remitted the tax; no use tax is due");
        }
    }
    if det.legs.len() > 1 {
        o.list("legs", &det.legs, |o, l| {
            o.put("leg", l.name)
                .put("amount", &cents(l.amount))
                .put("rate", &ratio(l.rate))
                .put("tax", &cents(l.tax))
                .put("rule", &l.rule_id)
                .put("result", l.result.as_str());
        });
    }
}

fn write_tax_member(o: &mut Obj, det: &Determination, k: &str, amount: Option<Decimal>) {
    match amount {
        Some(a) => o.obj(k, |o| write_tax(o, det, a, k)),
        None => o.put(k, &None::<bool>),
    };
}

fn write_tracking(o: &mut Obj, t: Option<&Tracking1099>) {
    match t {
        Some(t) => o.obj("tracking_1099", |o| {
            o.put("counterparty_id", &t.counterparty_id)
                .put("payment_this_transaction", &cents(t.payment_this_transaction))
                .put("vendor_ytd_total", &cents(t.vendor_ytd_total));
            o.put("threshold", &cents(t.threshold))
                .put("threshold_exceeded", &t.threshold_exceeded)
                .put("form_required", &t.form_required)
                .put("tax_year", &t.tax_year);
        }),
        None => o.put("tracking_1099", &None::<bool>),
    };
}

/// What the counterparty should know about this transaction, for the caller to forward: that the buyer owes use
/// tax a seller without nexus does not collect, and that a 1099 form will be due to a vendor the caller (as the
/// buyer) has paid the threshold or more this year.
fn write_counterparty_notice(o: &mut Obj, det: &Determination, tracking: Option<&Tracking1099>) {
    let mut parts: Vec<String> = Vec::new();
    if det.role == Role::Seller && det.final_determination == FinalDetermination::NoNexus {
        if let Some(t) = det.tax_if_nexus.filter(|t| !t.is_zero()) {
            let mut amount = String::new();
            cents(t).put(&mut amount);
            parts.push(format!(
                "The seller does not collect {state} sales tax on this sale (it has no nexus in {state}): as the buyer, you may owe {state} use tax of {amount} USD on it.",
                state = det.buyer_state_name
            ));
        }
    }
    // The caller pays the counterparty only as the buyer.
    if let Some(t) = tracking.filter(|t| t.threshold_exceeded && det.role == Role::Buyer) {
        if let Some(form) = &t.form_required {
            let (mut total, mut threshold) = (String::new(), String::new());
            cents(t.vendor_ytd_total).put(&mut total);
            cents(t.threshold).put(&mut threshold);
            parts.push(format!(
                "Payments to you from this payer total {total} USD in {year}, at or over the {threshold} USD threshold: a Form {form} will be filed for {year}; send your Form W-9 if you have not.",
                year = t.tax_year
            ));
        }
    }
    if parts.is_empty() {
        return;
    }
    o.obj("counterparty_notice", |o| {
        o.put("counterparty_id", &det.counterparty_id)
            .put("on_agenttax", &det.counterparty.is_some())
            .put("message", &parts.join(" "))
            .put("forward_to_counterparty", &true);
    });
}

fn write_advisories(o: &mut Obj, list: &[Advisory]) {
    o.list("advisories", list, |o, a| {
        o.put("type", &a.kind).put("advisory", &a.message).put("code", &a.code).put("flagged", &a.flagged);
        if let Some(s) = a.state {
            o.put("state", s);
        }
    });
}

fn write_head(o: &mut Obj, det: &Determination) {
    o.put("success", &true).put("engine_version", &det.engine_version).put("role", det.role.as_str()).put("amount", &Num(det.amount));
    o.put("buyer_state", det.buyer_state)
        .put("buyer_zip", &det.buyer_zip)
        .put("seller_state", det.seller_state.unwrap_or(""))
        .put("seller_zip", &det.seller_zip);
    o.put("sourcing_rule", det.sourcing.as_str())
        .put("marketplace_role", det.marketplace_role)
        .put("local_rate", &ratio(det.local_rate))
        .put("combined_rate", &ratio(det.applied_combined_rate()));
    o.put("jurisdiction", &det.jurisdiction)
        .put("transaction_type", det.transaction_type)
        .put("transaction_category", det.category)
        .put("work_type", det.work_type);
    o.put("work_type_label", &det.work_type_label)
        .put("classification_basis", det.classification_basis)
        .put("is_b2b", &det.is_b2b)
        .put("use_context", &det.use_context);
    o.put("counterparty_id", &det.counterparty_id)
        .put("digital_content_type", &det.digital_content_type)
        .put("classification_facts", &det.classification_facts);
    write_tax_member(o, det, "sales_tax", det.sales_tax);
    write_tax_member(o, det, "use_tax", det.use_tax);
    match det.seller_remitting {
        Some(collected) => o.obj("seller_remitting", |o| {
            o.put("status", if collected { "collected" } else { "not_collected" }).put("source", "self_reported");
        }),
        None => o.put("seller_remitting", &None::<bool>),
    };
}

fn write_middle(o: &mut Obj, det: &Determination) {
    o.obj("confidence", |o| {
        o.put("score", &det.confidence_score).put("level", det.confidence_level.as_str()).put("factors", det.confidence_factors.as_slice());
    });
}

fn write_rest(o: &mut Obj, det: &Determination) {
    o.list("routing", &det.routing, |o, r| {
        o.put("type", r.kind.as_str())
            .put("amount", &cents(r.amount))
            .put("destination", &r.destination)
            .put("jurisdiction", &r.jurisdiction);
    });
    o.put("total_tax", &cents(det.total_tax))
        .put("nexus_configured", &det.nexus_configured)
        .put("classification_note", &classification_note(det));
    o.put("disclaimer", DISCLAIMER).put("collected_by_marketplace", &det.collected_by_marketplace);
    if let Some(m) = det.marketplace_remitted_tax {
        o.put("marketplace_remitted_tax", &cents(m));
    }
    if let Some(c) = det.counts_toward_nexus_threshold {
        o.put("counts_toward_nexus_threshold", &c);
    }
    if let Some(cert) = &det.exemption_certificate {
        o.obj("exemption", |o| {
            o.put("type", "exemption_certificate").put("certificate", cert);
        });
    } else if let Some(l) = det.legs.iter().find(|l| !l.result.is_taxable()) {
        if det.legs.iter().all(|l| !l.result.is_taxable()) {
            o.obj("exemption", |o| {
                o.put("type", l.result.as_str());
                if let Some(r) = &l.reason {
                    o.put("reason", r);
                }
                o.put("citation", &l.citation.cite);
            });
        }
    }
    if let Some(t) = det.tax_if_nexus {
        o.obj("tax_if_nexus", |o| {
            let rule = det.legs.first().map(|l| l.rule_id.as_str()).unwrap_or("");
            let mut total = String::new();
            cents(t).put(&mut total);
            o.put("total_tax", &cents(t)).put("combined_rate", &ratio(det.applied_combined_rate()));
            o.put("basis", &format!("what {total} would be due in {} with nexus ({rule})", det.buyer_state));
        });
    }
    let declared = det.classification_facts.contains_key("is_b2b");
    let principal =
        det.counterparty.as_ref().filter(|c| c.is_business.is_some()).map(|c| c.legal_name.as_deref().unwrap_or(&c.entity_name));
    let (method, note) = match (declared, det.b2b_from_network) {
        (false, B2bFromNetwork::Verified) => (
            "network_verified",
            if det.is_b2b {
                "the counterparty's network profile says its principal is a business"
            } else {
                "the counterparty's network profile says its principal is not a business"
            },
        ),
        (true, B2bFromNetwork::Conflicts) => {
            ("declared", "declared by the caller; the counterparty's network profile says otherwise (see advisories)")
        }
        (true, B2bFromNetwork::Agrees) => ("declared", "declared by the caller; the counterparty's network profile agrees"),
        (true, _) => ("declared", "declared by the caller"),
        (false, _) => ("default", "not declared; treated as not business-to-business"),
    };
    o.obj("b2b_detection", |o| {
        o.put("is_b2b", &det.is_b2b).put("method", method).put("counterparty_principal", &principal);
        o.put("note", note);
    });
    if let Some(c) = &det.counterparty {
        o.obj("network_profile", |o| {
            o.put("agent_id", &c.agent_id).put("entity_name", &c.entity_name).put("entity_state", &c.entity_state);
            o.put("work_type", &c.work_type).put("legal_name", &c.legal_name).put("is_business", &c.is_business);
        });
    }
    o.obj("audit_trail", |o| write_audit_trail(o, det));
}

fn write_audit_trail(o: &mut Obj, det: &Determination) {
    let taxable = det.legs.iter().any(|l| l.result.is_taxable());
    o.put("engine_version", &det.engine_version).put("rules_version", &det.rules_version).put("as_of", &det.as_of.to_string());
    let local_applied = det.legs.iter().any(|l| l.result.is_taxable() && !l.local_rate.is_zero());
    o.array("jurisdiction_chain", |a| {
        a.obj(|o| {
            o.put("level", "state")
                .put("name", &det.buyer_state_name)
                .put("rate", &ratio(det.state_rate))
                .put("applied", &taxable)
                .put("source", &Cite(&det.state_rate_citation));
        });
        for l in &det.layers {
            a.obj(|o| {
                o.put("level", "local")
                    .put("layer", &l.level)
                    .put("name", &l.name)
                    .put("rate", &ratio(l.rate))
                    .put("applied", &local_applied)
                    .put("source", &Cite(&l.citation));
            });
        }
        for s in &det.special {
            a.obj(|o| {
                o.put("level", "special_rule")
                    .put("name", &s.name)
                    .put("rate", &ratio(s.rate))
                    .put("applied", &!s.tax.is_zero())
                    .put("source", &Cite(&s.citation));
            });
        }
    });
    o.put("combined_rate", &ratio(det.applied_combined_rate()));
    o.obj("classification", |o| {
        o.put("input_transaction_type", det.transaction_type)
            .put("input_work_type", &det.input_work_type)
            .put("resolved_work_type", det.work_type);
        o.put("work_type_source", det.work_type_source.as_str()).put("derivation", &det.classification_derivation);
        o.put("economic_category", det.classification_basis).put("label", &det.work_type_label);
        o.put("digital_content_type_applied", &det.digital_content_type_applied);
    });
    let first = det.legs.first();
    o.obj("taxability", |o| {
        o.put("source", &first.map(|l| Cite(&l.citation)))
            .put("state", det.buyer_state)
            .put("category", det.category)
            .put("taxable", &taxable);
        let note = first.map(|l| match &l.reason {
            Some(r) => format!("{}: {r}", l.rule_id),
            None => {
                format!("{}: taxable at {} on {}% of the amount", l.rule_id, pct(l.rate), (l.base_share * Decimal::from(100)).normalize())
            }
        });
        o.put("note", &note)
            .put("digital_content_type_override", &det.digital_content_type_applied.then_some(det.digital_content_type).flatten());
        o.put("digital_content_type_rule", &det.digital_content_type_rule);
        if let Some(l) = first.filter(|l| !l.readings.is_empty()) {
            o.list("ambiguous_readings", &l.readings, |o, (d, tax, c)| {
                o.put("reading", d).put("tax", &cents(*tax)).put("source", &Cite(c));
            });
        }
    });
    let checked = det.trace.iter().filter(|s| matches!(s.stage, Stage::Taxability | Stage::Exemption | Stage::Nexus | Stage::Marketplace));
    o.list("exemptions_evaluated", checked, |o, step| {
        o.put("check", step.rule.as_deref().unwrap_or(step.stage.as_str())).put("result", &step.result).put("detail", step.stage.as_str());
    });
    o.put("final_determination", det.final_determination.as_str());
    o.array("policy_references", |a| {
        for l in &det.legs {
            a.obj(|o| {
                o.put("id", &l.rule_id).put("settlement", &Cite(&l.citation)).put("note", &l.note);
            });
        }
        a.obj(|o| {
            o.put("id", &det.sourcing_rule)
                .put("settlement", &Cite(&det.sourcing_citation))
                .put("note", &format!("{} sourcing", det.sourcing.as_str()));
        });
        for s in &det.special {
            a.obj(|o| {
                o.put("id", &s.id).put("settlement", &Cite(&s.citation)).put("note", &s.name);
            });
        }
        if let Some(r) = &det.reclassified_by {
            a.obj(|o| {
                o.put("id", r).put("settlement", "levy classification.yaml").put("note", "reclassification");
            });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_numbers_are_written_as_serde_json_writes_them() {
        for text in ["plain", "", "quote \" and backslash \\", "\n\r\t\u{8}\u{c}", "\u{0}\u{1}\u{1f} \u{7f}", "é ü § 😀 中文", "</script>"]
        {
            let mut out = String::new();
            text.put(&mut out);
            assert_eq!(out, serde_json::to_string(text).unwrap(), "{text:?}");
        }
        for d in ["66.00", "0.0825", "-1.5", "0", "2000.00", "100.5", "0.000001", "79228162514264337593543950335"] {
            let d: Decimal = d.parse().unwrap();
            let mut out = String::new();
            Num(d).put(&mut out);
            assert_eq!(out, num(d).to_string(), "{d}");
        }
        let mut out = String::new();
        cents("6.625".parse().unwrap()).put(&mut out);
        assert_eq!(out, money("6.625".parse().unwrap()).to_string());
    }
}
