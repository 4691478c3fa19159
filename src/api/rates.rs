//! The public rate surface: GET /api/v1/rates, GET /api/v1/rates/local, POST /api/v1/verify. Keyless. Every
//! figure is read through `engine::table`, the determinations calculate makes, so the tables cannot disagree
//! with a calculation on the same date.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::NaiveDate;
use poem_openapi::param::{Header, Query};
use poem_openapi::types::ToJSON;
use poem_openapi::OpenApi;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::caching::unless_current;
use super::context::client_ip;
use super::error::ApiError;
use super::payload::{Body, Json};
use super::schema::number::Fraction;
use super::schema::param::{is_zip, listed_query, state_query, text, true_false_query, IsoDate, Param, StateParam, TrueFalse, ZipParam};
use super::schema::rates::{
    CitationView, CompactRate, LocalLayerView, LocalRates, RateDiscrepancy, RateExplanation, RateTable, RatesBody, RatesFormat,
    RuleCitation, SpecialTaxView, StateRate, VerifiedRate, VerifiedRateTable, VerifyRatesRequest, VerifyRatesResponse,
};
use super::{ApiTags, AppState};
use crate::engine::determine::LocalCoverage;
use crate::engine::render::DISCLAIMER;
use crate::engine::table::{self, StateRates};
use crate::rules::registry::in_force;
use crate::rules::schema::{state_index, STATES};
use crate::{error_responses, ok_responses};

pub struct PublicRatesApi(pub Arc<AppState>);

crate::cached_response!(TableResponse, RatesBody, "The table: full (default), verified, or compact.");

error_responses!(TableErrors {
    400 => BadRequest: "INVALID_INPUT: state, format, explain or as_of is not one of the documented values.",
    404 => NotFound: "RESOURCE_NOT_FOUND: as_of is before the first date the rules cover.",
});

crate::cached_response!(LocalResponse, LocalRates, "The combined rate at the zip code, with each layer.");

error_responses!(LocalErrors {
    400 => BadRequest: "INVALID_INPUT: zip is missing or neither 5 digits nor ZIP+4, or as_of is not a date.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the zip code's 3-digit prefix belongs to no state or DC (a territory, the military, or unassigned), or as_of is before the first date the rules cover.",
});

ok_responses!(VerifyResponse {
    200 => Ok(Json<VerifyRatesResponse>): "Matches, discrepancies and unknown codes.",
});

error_responses!(VerifyErrors {
    400 => BadRequest: "INVALID_INPUT (errors name each field) or INVALID_JSON_BODY.",
    429 => TooManyRequests: "RATE_LIMITED: the per-address minute or UTC-day window is used up (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE: the limiter's counters could not be read.",
});

const RATES_PATH: &str = "/api/v1/rates";
const LOCAL_PATH: &str = "/api/v1/rates/local";

/// A rate or a share as the table writes it: its digits, no trailing zeros.
fn f(d: Decimal) -> Fraction {
    Fraction::of(d)
}

/// `as_of` as sent, or today from the service clock; before the rules' coverage is 404.
fn as_of_date(s: &AppState, as_of: Option<&str>, errors: &mut Vec<String>) -> Option<NaiveDate> {
    match as_of {
        None => Some(s.clock.now().date_naive()),
        Some(t) => match NaiveDate::parse_from_str(t.trim(), "%Y-%m-%d") {
            Ok(d) => Some(d),
            Err(_) => {
                errors.push(format!("as_of: `{t}` is not a date (YYYY-MM-DD)"));
                None
            }
        },
    }
}

fn covered(s: &AppState, day: NaiveDate) -> Result<(), ApiError> {
    if day < s.registry.coverage_from {
        return Err(ApiError::not_found(format!(
            "the rules cover dates from {}; no rates are answered for {day}",
            s.registry.coverage_from
        )));
    }
    Ok(())
}

fn full_row(row: &StateRates, explanation: Option<RateExplanation>) -> StateRate {
    StateRate {
        state: row.code.to_string(),
        name: row.jurisdiction.name.clone(),
        state_rate: f(row.rate()),
        local_taxes: row.has_local_taxes(),
        saas_taxable: row.saas_taxable(),
        saas_taxed_share: f(table::taxed_share(&row.saas)),
        digital_goods_taxable: row.digital_goods_taxable(),
        digital_goods_taxed_share: f(table::taxed_share(&row.digital_good)),
        digital_taxable: row.digital_taxable(),
        effective_from: row.state_rate.from.to_string(),
        effective_to: row.state_rate.to.map(|d| d.to_string()),
        citation: CitationView::from(&row.state_rate.citation),
        explanation,
    }
}

fn verified_row(s: &AppState, row: &StateRates) -> VerifiedRate {
    let ids = row.rule_ids();
    let rules = ids
        .iter()
        .filter_map(|id| {
            let (_, tax, src) = s.registry.find_rule(id)?;
            let c = tax.map(|r| &r.citation).or(src.map(|r| &r.citation))?;
            Some(RuleCitation { id: id.clone(), cite: c.cite.clone(), url: c.url.clone() })
        })
        .collect();
    VerifiedRate {
        state: row.code.to_string(),
        state_rate: f(row.rate()),
        digital_taxable: row.digital_taxable(),
        citation: CitationView::from(&row.state_rate.citation),
        effective_from: row.state_rate.from.to_string(),
        effective_to: row.state_rate.to.map(|d| d.to_string()),
        last_checked: row.state_rate.citation.checked.map(|d| d.to_string()),
        rule_ids: ids,
        rules,
        local_taxes_citation: row.local_taxes.map(|d| CitationView::from(&d.citation)),
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Rates")]
impl PublicRatesApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const RATES_EXAMPLE: &'static str = r#"{
        "query": "format=compact",
        "status": 200,
        "expect": {"/TX/r": 0.0625, "/TX/d": true}
    }"#;

    /// Sales-tax rates of the 51 jurisdictions
    ///
    /// Each jurisdiction's general state rate, whether local taxes exist, whether a SaaS subscription and a
    /// digital good are taxable (and on what share of the price), the rate's effective dates and citation. The
    /// figures are read from the determinations calculate makes for a SaaS sale and a digital-good sale on the
    /// same date, so the table never disagrees with a calculation. `state` gives one jurisdiction;
    /// `format=compact` gives {XX: {r, d}} (r the state rate, d digital_taxable); `format=verified` gives what
    /// each figure rests on (citation, effective dates, the deciding rule ids, the day the rate was last checked
    /// against its source); `explain=true` with `state` adds a plain explanation (taxability by transaction type
    /// and share, sourcing, nexus threshold, marketplace law, special local taxes). `as_of` answers for another
    /// date (default today, UTC). No key needed; ETag and Cache-Control are sent, and If-None-Match gives 304.
    #[oai(
        path = "/rates",
        method = "get",
        operation_id = "rates",
        code_sample(lang = "json", label = "example", source = "Self::RATES_EXAMPLE")
    )]
    async fn rates(
        &self,
        /// One state (two letters, upper or lower case) instead of all 51.
        state: Query<Option<Param<StateParam>>>,
        /// full (the default), compact or verified.
        format: Query<Option<Param<RatesFormat>>>,
        /// true adds an explanation block (with state; ignored without).
        explain: Query<Option<Param<TrueFalse>>>,
        /// The date the figures are in force on (YYYY-MM-DD); default today in UTC.
        as_of: Query<Option<Param<IsoDate>>>,
        /// An ETag from an earlier answer: 304 while it is current.
        #[oai(name = "If-None-Match")]
        if_none_match: Header<Option<String>>,
    ) -> Result<TableResponse, TableErrors> {
        let s = &self.0;
        let (state, format, explain, as_of) = (text(state), text(format), text(explain), text(as_of));
        let mut errors = vec![];
        let one = state_query(state.0.as_deref(), &mut errors);
        let format = listed_query("format", format.0.as_deref(), RatesFormat::VALUES, &mut errors);
        let explain = true_false_query("explain", explain.0.as_deref(), &mut errors);
        let day = as_of_date(s, as_of.0.as_deref(), &mut errors);
        let Some(day) = day.filter(|_| errors.is_empty()) else { return Err(ApiError::invalid(errors).into()) };
        covered(s, day)?;
        let reg = &s.registry;
        let states: Vec<usize> = one.map_or_else(|| (0..STATES.len()).collect(), |i| vec![i]);
        let mut rows = Vec::with_capacity(states.len());
        for i in states {
            rows.push(table::state_rates(reg, i, day).map_err(|e| ApiError::engine(e, ""))?);
        }
        let body = match format {
            "compact" => {
                let map: BTreeMap<String, CompactRate> =
                    rows.iter().map(|r| (r.code.to_string(), CompactRate { r: f(r.rate()), d: r.digital_taxable() })).collect();
                RatesBody::Compact(map)
            }
            "verified" => {
                let states = rows.iter().map(|r| (r.code.to_string(), verified_row(s, r))).collect();
                RatesBody::Verified(VerifiedRateTable {
                    success: true,
                    as_of: day.to_string(),
                    rules_version: reg.version.clone(),
                    format: "verified".into(),
                    states,
                })
            }
            _ => {
                let mut states = BTreeMap::new();
                for r in &rows {
                    let explanation = match (explain, one) {
                        (true, Some(i)) => {
                            let treatments = table::treatments(reg, i, day).map_err(|e| ApiError::engine(e, ""))?;
                            let e = table::explain(reg, r, &treatments, day);
                            Some(RateExplanation {
                                taxability: e.taxability,
                                sourcing: e.sourcing,
                                nexus_threshold: e.nexus_threshold,
                                marketplace: e.marketplace,
                                special_local_taxes: e.special_local_taxes,
                            })
                        }
                        _ => None,
                    };
                    states.insert(r.code.to_string(), full_row(r, explanation));
                }
                RatesBody::Full(RateTable {
                    success: true,
                    as_of: day.to_string(),
                    rules_version: reg.version.clone(),
                    count: states.len() as u32,
                    states,
                    disclaimer: DISCLAIMER.to_string(),
                })
            }
        };
        Ok(unless_current(if_none_match.0.as_deref(), &reg.version, RATES_PATH, &body)
            .map_or(TableResponse::NotModified, TableResponse::Ok))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LOCAL_RATES_EXAMPLE: &'static str = r#"{
        "query": "zip=78701",
        "status": 200,
        "expect": {"/combined_rate": 0.0825, "/locality": "Austin", "/local_rates_covered": true}
    }"#;

    /// Combined state and local rate at a zip code
    ///
    /// The state rate plus each local layer (level, name, rate, citation) in force at the zip code, and the
    /// locality: the same local tables and the same determination calculate uses for a sale into that zip code
    /// (`zip=78701`: 6.25% + City of Austin 1% + Capital Metro 1% = 8.25%). Special taxes owed on particular sales
    /// there (Chicago's lease tax on cloud software) are listed apart, not added to the combined rate. A zip code
    /// the local tables do not hold is answered from its state (found from the zip code's 3-digit USPS prefix)
    /// with the state rate and `local_rates_covered: false` plus a note when the state has local taxes: never a
    /// silent 0. A prefix of no state or DC is 404. ETag and Cache-Control are sent; If-None-Match gives 304.
    #[oai(
        path = "/rates/local",
        method = "get",
        operation_id = "localRates",
        code_sample(lang = "json", label = "example", source = "Self::LOCAL_RATES_EXAMPLE")
    )]
    async fn local(
        &self,
        /// A ZIP Code: 5 digits, or ZIP+4 (`55401-1234`), which selects the part of a ZIP code that straddles
        /// jurisdictions where the boundary rows have ZIP+4 ranges.
        zip: Query<Param<ZipParam>>,
        /// The date the rates are in force on (YYYY-MM-DD); default today in UTC.
        as_of: Query<Option<Param<IsoDate>>>,
        /// An ETag from an earlier answer: 304 while it is current.
        #[oai(name = "If-None-Match")]
        if_none_match: Header<Option<String>>,
    ) -> Result<LocalResponse, LocalErrors> {
        let s = &self.0;
        let (zip, as_of) = (zip.0 .0, text(as_of));
        let mut errors = vec![];
        let zip = match zip {
            z if is_zip(&z) => Some(z),
            z => {
                errors.push(format!("zip: `{z}` is not a ZIP Code (5 digits, or ZIP+4 as 55401-1234)"));
                None
            }
        };
        let day = as_of_date(s, as_of.0.as_deref(), &mut errors);
        let (Some(zip), Some(day)) = (zip, day) else { return Err(ApiError::invalid(errors).into()) };
        ApiError::check(errors)?;
        covered(s, day)?;
        let reg = &s.registry;
        let five = crate::postal::zip_parts(&zip).0;
        let state = match reg.local.states_of(five).first() {
            Some(&i) => i,
            None => match crate::postal::state_of_zip(&zip).map_err(ApiError::internal)? {
                Some(i) => i,
                None => {
                    return Err(ApiError::not_found(format!(
                        "zip code {zip}: its prefix {} belongs to no US state or DC (a territory, the military, or unassigned)",
                        &zip[..3]
                    ))
                    .into())
                }
            },
        };
        let det = table::probe(reg, state, table::SAAS, Some(&zip), day).map_err(|e| ApiError::engine(e, ""))?;
        let j = reg.jurisdiction(state).ok_or_else(|| ApiError::internal("jurisdiction missing from the registry"))?;
        let note = match det.local_coverage {
            LocalCoverage::Whole => None,
            LocalCoverage::NoLocalTax => Some(format!("{} has no local sales taxes: the state rate is the whole rate", j.name)),
            LocalCoverage::Partial => Some(format!(
                "not every local tax of {} is in the tables yet: the combined rate holds the county and district taxes known at zip code {zip} on {day}, and a city or district tax at the address may be missing; give the ZIP+4 or check the street address",
                j.name
            )),
            _ => Some(format!(
                "local rates are not covered for zip code {zip} on {day}: {} has local sales taxes, and the combined rate here is the state rate only",
                j.name
            )),
        };
        let split = det.split.clone();
        let special_taxes = reg
            .special_taxes
            .iter()
            .filter(|t| t.state == state && t.zips.iter().any(|z| z == five))
            .filter_map(|t| {
                let rate = in_force(&t.rates, day)?;
                Some(SpecialTaxView {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    rate: f(rate.value),
                    requires_seller_nexus: t.requires_seller_nexus,
                    note: t.note.clone(),
                    citation: CitationView::from(&rate.citation),
                })
            })
            .collect();
        let view = LocalRates {
            success: true,
            as_of: day.to_string(),
            rules_version: reg.version.clone(),
            zip,
            state: j.code.to_string(),
            state_name: j.name.clone(),
            locality: det.locality.clone(),
            jurisdiction: det.jurisdiction.clone(),
            local_rates_covered: det.local_coverage.is_whole(),
            state_rate: f(det.state_rate),
            state_rate_citation: CitationView::from(&det.state_rate_citation),
            local_rate: f(det.local_rate),
            combined_rate: f(det.combined_rate),
            layers: det
                .layers
                .iter()
                .map(|l| LocalLayerView {
                    level: l.level.clone(),
                    name: l.name.clone(),
                    rate: f(l.rate),
                    citation: CitationView::from(&l.citation),
                })
                .collect(),
            special_taxes,
            split,
            note,
        };
        Ok(unless_current(if_none_match.0.as_deref(), &reg.version, LOCAL_PATH, &view)
            .map_or(LocalResponse::NotModified, LocalResponse::Ok))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const VERIFY_RATES_EXAMPLE: &'static str = r#"{
        "body": {"agent_id": "rate-checker", "source": "our 2026 table", "source_date": "2026-Q4", "rates": {"TX": {"rate": 0.0625, "digitalTaxable": true}, "WA": {"rate": 0.07, "digitalTaxable": true}}},
        "status": 200,
        "expect": {"/matches": ["TX"], "/discrepancies/0/state": "WA", "/unknown": []}
    }"#;

    /// Compare rate tables with levy's
    ///
    /// For each state code sent, compares the caller's state rate and (when sent) digitalTaxable with what
    /// GET /rates answers today: `matches` lists the codes where every figure sent agrees, `discrepancies` each
    /// figure that differs (which field, theirs, ours, our citation), `unknown` the codes that are not one of the
    /// 51. `source` and `source_date` are echoed. Keyless, limited per client address: 30 calls per minute and
    /// 300 per UTC day by default (429 RATE_LIMITED with Retry-After).
    #[oai(
        path = "/verify",
        method = "post",
        operation_id = "verifyRates",
        code_sample(lang = "json", label = "example", source = "Self::VERIFY_RATES_EXAMPLE")
    )]
    async fn verify(&self, body: Body<VerifyRatesRequest>) -> Result<VerifyResponse, VerifyErrors> {
        let s = &self.0;
        s.check_verify(&client_ip()).await?;
        let mut parsed = body.parse()?;
        let entries = sent_rates(&mut parsed);
        let day = s.clock.now().date_naive();
        covered(s, day)?;
        let reg = &s.registry;
        let (mut matches, mut discrepancies, mut unknown) = (vec![], vec![], vec![]);
        let mut rows: BTreeMap<usize, StateRates> = BTreeMap::new();
        let mut compared = 0u32;
        for entry in &entries {
            let Some(i) = state_index(&entry.code.to_ascii_uppercase()) else {
                unknown.push(entry.code.clone());
                continue;
            };
            let row: &StateRates = match rows.entry(i) {
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(table::state_rates(reg, i, day).map_err(|e| ApiError::engine(e, ""))?)
                }
            };
            compared += 1;
            let mut agrees = true;
            if entry.rate != row.rate() {
                agrees = false;
                discrepancies.push(RateDiscrepancy {
                    state: row.code.to_string(),
                    field: "rate".into(),
                    theirs: entry.rate_sent.clone(),
                    ours: f(row.rate()).to_json().unwrap_or_default(),
                    citation: CitationView::from(&row.state_rate.citation),
                });
            }
            if let Some(d) = entry.digital_taxable.filter(|d| *d != row.digital_taxable()) {
                agrees = false;
                let leg_rule = if row.saas_taxable() || !row.digital_goods_taxable() { &row.saas } else { &row.digital_good };
                let citation = leg_rule
                    .legs
                    .first()
                    .map(|l| CitationView::from(&l.citation))
                    .unwrap_or_else(|| CitationView::from(&row.state_rate.citation));
                discrepancies.push(RateDiscrepancy {
                    state: row.code.to_string(),
                    field: "digitalTaxable".into(),
                    theirs: json!(d),
                    ours: json!(row.digital_taxable()),
                    citation,
                });
            }
            if agrees {
                matches.push(row.code.to_string());
            }
        }
        let response = VerifyRatesResponse {
            success: true,
            agent_id: parsed.agent_id,
            source: parsed.source,
            source_date: parsed.source_date,
            as_of: day.to_string(),
            rules_version: reg.version.clone(),
            compared,
            matches,
            discrepancies,
            unknown,
        };
        Ok(VerifyResponse::Ok(Json(response)))
    }
}

/// One entry of `rates` as sent.
struct SentRate {
    code: String,
    rate: Decimal,
    /// The number as sent, echoed in a discrepancy.
    rate_sent: Value,
    digital_taxable: Option<bool>,
}

/// The entries of a checked body.
fn sent_rates(req: &mut VerifyRatesRequest) -> Vec<SentRate> {
    std::mem::take(&mut req.rates)
        .into_iter()
        .filter_map(|(code, e)| {
            let rate = e.rate.decimal()?;
            Some(SentRate { code, rate, rate_sent: e.rate.0, digital_taxable: e.digital_taxable })
        })
        .collect()
}
