//! `levy rules explain`: one request, evaluated and shown as a derivation a person can follow.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::engine::determine::pct;
use crate::engine::{self, render, Determination, EngineError};
use crate::rules::diag::{Severity, SourceMap};
use crate::rules::schema::state_index;
use crate::rules::{cases, yaml};

/// The request as JSON: `arg` itself when it is a JSON object, else the JSON or YAML file it names.
fn read_request(arg: &str) -> Result<Value, String> {
    let inline = arg.trim_start().starts_with('{');
    let text = if inline { arg.to_string() } else { std::fs::read_to_string(arg).map_err(|e| format!("cannot read {arg}: {e}"))? };
    if let Ok(v) = serde_json::from_str(&text) {
        return Ok(v);
    }
    let name: Arc<str> = if inline { "--request".into() } else { arg.into() };
    let errors = match yaml::parse(&name, &text) {
        Ok((node, diags)) if !diags.iter().any(|d| d.severity == Severity::Error) => return Ok(cases::to_json(&node)),
        Ok((_, diags)) | Err(diags) => diags,
    };
    let mut sources = SourceMap::default();
    sources.add(&name, &text);
    let rendered: String = errors.iter().filter(|d| d.severity == Severity::Error).map(|d| sources.render(d)).collect();
    Err(format!("the request is neither JSON nor YAML:\n{}", rendered.trim_end()))
}

pub fn explain(rules: &Path, request: &str, as_of: Option<&str>, nexus: Option<&str>, json: bool) -> u8 {
    let Some((reg, _)) = super::load_or_report(rules) else { return 1 };
    let as_of = match super::as_of_or_today(as_of) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let body = match read_request(request) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let nexus_map: Option<BTreeMap<usize, bool>> =
        nexus.map(|n| n.split(',').filter_map(|s| state_index(s.trim().to_uppercase().as_str())).map(|i| (i, true)).collect());
    let result = crate::api::schema::calculate::read_request(&body).map_err(EngineError::Input).and_then(|req| {
        let nexus = req.nexus_override.clone().or(nexus_map);
        engine::determine(&reg, &engine::Input { request: &req, nexus: nexus.as_ref(), vendor_ytd: None, as_of })
    });
    match result {
        Ok(det) if json => {
            println!("{}", serde_json::to_string_pretty(&render::full(&det)).unwrap_or_default());
            0
        }
        Ok(det) => {
            print!("{}", explain_text(&det));
            0
        }
        Err(EngineError::Input(errs)) => {
            eprintln!("the request was rejected:");
            for e in errs {
                eprintln!("  {e}");
            }
            1
        }
        Err(EngineError::BeforeCoverage { as_of, coverage_from }) => {
            eprintln!("the request was rejected:\n  --as-of: {as_of} is before the first date the rules cover ({coverage_from})");
            1
        }
        Err(EngineError::Internal(e)) => {
            eprintln!("internal error: {e}");
            1
        }
    }
}

/// The readable derivation: classification → sourcing → rate layers → base → rule → tax.
pub fn explain_text(det: &Determination) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} {} of {} USD into {} as of {} (rules {}, engine {})",
        det.role, det.transaction_type, det.amount, det.buyer_state, det.as_of, det.rules_version, det.engine_version
    );
    let _ = writeln!(s, "\n1. classification");
    let _ = writeln!(
        s,
        "   work type {} ({}; economic category {}) → category {}: {}",
        det.work_type, det.classification_derivation, det.classification_basis, det.category, det.category_label
    );
    if let Some(r) = &det.reclassified_by {
        let _ = writeln!(s, "   reclassified by {r}");
    }
    let _ = writeln!(s, "\n2. sourcing");
    let _ = writeln!(s, "   {} — rule {} [{}]", det.sourcing.as_str(), det.sourcing_rule, det.sourcing_citation.cite);
    let _ = writeln!(s, "\n3. rate layers ({})", det.jurisdiction);
    let _ = writeln!(s, "   state  {:>8}  [{}]", pct(det.state_rate), det.state_rate_citation.cite);
    for l in &det.layers {
        let _ =
            writeln!(s, "   {:<6} {:>8}  {} [{}]", l.level.replace("special_district", "special"), pct(l.rate), l.name, l.citation.cite);
    }
    let _ = writeln!(s, "   = combined {}", pct(det.combined_rate));
    let _ = writeln!(s, "\n4. base and rule");
    if let Some(note) = &det.outside_sales_tax {
        let _ = writeln!(s, "   outside sales tax: {note}");
    }
    for l in &det.legs {
        let _ = writeln!(s, "   leg {}: {} USD", l.name, l.amount);
        let _ = writeln!(
            s,
            "   rule {} fired: {}",
            l.rule_id,
            if l.result.is_taxable() {
                format!("taxable on {}% of base at {}", (l.base_share * rust_decimal::Decimal::from(100)).normalize(), pct(l.rate))
            } else {
                format!("exempt as {}: {}", l.result, l.reason.clone().unwrap_or_default())
            }
        );
        let _ = writeln!(s, "     cite: {}", l.citation.cite);
        if let Some(n) = &l.note {
            let _ = writeln!(s, "     note: {n}");
        }
        for (reading, tax, c) in &l.readings {
            let _ = writeln!(s, "     reading: {reading} → {tax} [{}]", c.cite);
        }
        if l.result.is_taxable() {
            let _ = writeln!(s, "     tax = {} × {} = {}", l.taxable_amount, pct(l.rate), l.tax);
        }
    }
    for sp in &det.special {
        let _ = writeln!(
            s,
            "   special tax {} ({}): {} × {} = {} [{}]",
            sp.id,
            sp.locality,
            det.amount,
            pct(sp.rate),
            sp.tax,
            sp.citation.cite
        );
    }
    let _ = writeln!(s, "\n5. the tax");
    let _ = writeln!(
        s,
        "   tax on the sale {}; nexus configured: {}; nexus in {}: {}",
        det.tax_due, det.nexus_configured, det.buyer_state, det.has_nexus
    );
    if det.collected_by_marketplace {
        let _ = writeln!(s, "   the marketplace facilitator remits {}", det.marketplace_remitted_tax.unwrap_or_default());
    }
    if let Some(t) = det.tax_if_nexus {
        let _ = writeln!(s, "   no nexus: 0 owed now; with nexus it would be {t}");
    }
    let _ = writeln!(s, "   total_tax {} — final determination: {}", det.total_tax, det.final_determination);
    let _ = writeln!(s, "   confidence {} ({})", det.confidence_score, det.confidence_level);
    if !det.advisories.is_empty() {
        let _ = writeln!(s, "\nadvisories");
        for a in &det.advisories {
            let _ = writeln!(s, "   {}: {}", a.code, a.message);
        }
    }
    let _ = writeln!(s, "\ntrace");
    for step in &det.trace {
        let _ = writeln!(s, "   {:<14} {:<48} {}", step.stage, step.rule.as_deref().unwrap_or("-"), step.result);
    }
    s
}
