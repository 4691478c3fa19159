//! Trades, lots, realized gains, estimates, the draft 1099-DA and capital-gains rates (interface spec
//! item 5, "Trade request", "Capital-gains rates query" and "1099-DA export query").

use std::borrow::Cow;
use std::collections::BTreeMap;

use poem_openapi::registry::{MetaSchemaRef, Registry};
use poem_openapi::types::{MaybeUndefined, ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use poem_openapi::{Enum, Object, Union};
use serde_json::Value;

use super::calculate::Obj;
use super::number::{Exact, Fraction, Usd};
use super::rates::CitationView;
use crate::gains::estimate;
use crate::listed_enum;

listed_enum!(TradeType = crate::gains::request::TRADE_TYPES);

listed_enum!(
    /// fifo (oldest lot first; the default), lifo (newest first), specific_id (the lot in specific_lot_id).
    AccountingMethod = crate::gains::Method::NAMES
);
listed_enum!(TaxEntityType = crate::gains::EntityType::NAMES);
listed_enum!(
    /// single, mfj (married filing jointly; a qualifying surviving spouse too), mfs (separately), hoh (head of household).
    FilingStatus = crate::rules::schema::FILING_STATUSES
);
listed_enum!(
    /// stock, security, securities and equity are under the wash-sale rule (IRC §1091); digital_asset and crypto are not.
    AssetClass = crate::rules::schema::ASSET_CLASSES
);

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum Term {
    ShortTerm,
    LongTerm,
}

/// Body of POST /api/v1/trades. Unknown fields are rejected; every invalid field is reported at once.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct TradeBody {
    /// 1 to 50 of A–Z a–z 0–9 . _ -; upper-cased.
    pub asset_symbol: super::param::SymbolParam,
    pub trade_type: TradeType,
    /// Greater than 0, at most 1000000000000, at most 8 decimal places (more is rejected, never rounded). A decimal string is accepted.
    pub quantity: super::param::Quantity,
    /// USD per unit, 0 to 1000000000.
    pub price_per_unit: super::param::Price,
    /// USD, 0 to 1000000000, default 0. Added to a buy's basis; taken from a sell's proceeds.
    pub fee_amount: Option<super::param::Price>,
    /// ISO 8601 date-time (a bare date means 00:00 UTC); default now. Not in the future, and not before the asset's latest recorded sell.
    pub trade_date: Option<String>,
    /// Sells only; default fifo.
    pub accounting_method: Option<AccountingMethod>,
    /// Required when accounting_method is specific_id: the lot to consume.
    #[oai(validator(min_length = 1, max_length = 100))]
    pub specific_lot_id: Option<String>,
    #[oai(validator(max_length = 200))]
    pub asset_name: Option<String>,
    #[oai(validator(max_length = 200))]
    pub counterparty: Option<String>,
    #[oai(validator(max_length = 200))]
    pub exchange: Option<String>,
    #[oai(validator(max_length = 1000))]
    pub notes: Option<String>,
    /// For the state estimate; either case.
    pub resident_state: Option<super::param::StateParam>,
    /// For the federal estimate; default individual.
    pub tax_entity_type: Option<TaxEntityType>,
    /// Bracket selection; default single.
    pub filing_status: Option<FilingStatus>,
    /// Other income for the year before deductions (at least 0): enables the bracket-aware estimate and NIIT detection.
    pub estimated_annual_income: Option<super::param::Income>,
    /// Omitted: no wash-sale rule.
    pub asset_class: Option<AssetClass>,
}

/// Whether a lot still holds units: open, or closed once all of it is sold.
#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum LotStatus {
    Open,
    Closed,
}

/// A cost-basis lot.
#[derive(Object)]
pub struct LotView {
    /// The lot's id: what specific_lot_id names in a sell.
    pub lot_id: String,
    /// The buy that made it.
    pub trade_id: String,
    pub asset_symbol: String,
    /// Acquisition date-time (UTC).
    pub acquired: String,
    /// First day of the holding period (YYYY-MM-DD): the acquisition date, earlier for a wash-sale replacement.
    pub holding_period_start: String,
    /// Units acquired, exactly (at most 8 decimal places).
    pub quantity: Exact,
    /// USD: quantity × price + buy fee (+ any disallowed wash-sale loss).
    pub cost_basis: Usd,
    /// Units not yet sold.
    pub remaining_quantity: Exact,
    /// USD: the basis of the units not yet sold.
    pub remaining_basis: Usd,
    /// USD: disallowed wash-sale loss added to the basis (0 when none).
    pub wash_sale_adjustment: Usd,
    /// The disposition whose loss this lot carries, when it is a wash-sale replacement; null otherwise.
    pub wash_sale_replacement_for: Option<String>,
    /// The lot this one was split from (part of a lot that became a replacement); null otherwise.
    pub split_from: Option<String>,
    pub status: LotStatus,
}

/// A replacement lot that took part of a sale's disallowed loss.
#[derive(Object)]
pub struct Replacement {
    pub lot_id: String,
    /// Units of the sale matched with this lot.
    pub quantity: Exact,
    /// USD: the loss disallowed for these units and added to the lot's basis.
    pub disallowed_loss: Usd,
    /// The replacement lot's holding period start (YYYY-MM-DD), the sold lot's holding period carried over.
    #[oai(skip_serializing_if_is_none)]
    pub holding_period_start: Option<String>,
    /// The buy, when the replacement came after the sale; absent otherwise.
    #[oai(skip_serializing_if_is_none)]
    pub trade_id: Option<String>,
}

/// A disposition under the wash-sale rule.
#[derive(Object)]
pub struct DispositionWash {
    /// True for a loss under the wash-sale rule.
    pub applicable: bool,
    /// Loss units not (yet) matched with a replacement; a buy within the window may still match them.
    pub unreplaced_quantity: Exact,
    /// The lots bought within the window around the sale that took its disallowed loss when the sale was recorded.
    pub replacements: Vec<Replacement>,
}

/// One lot's share of a sell.
#[derive(Object)]
pub struct ConsumedLot {
    pub disposition_id: String,
    pub lot_id: String,
    /// Units taken from the lot.
    pub quantity: Exact,
    /// The lot's acquisition date-time (UTC).
    pub acquired: String,
    /// First day of the holding period (YYYY-MM-DD).
    pub holding_period_start: String,
    /// The sell's date-time (UTC).
    pub sold: String,
    /// USD: the lot's basis share (pro rata to the quantity taken).
    pub cost_basis: Usd,
    /// USD: net proceeds share (the sell fee reduces proceeds).
    pub proceeds: Usd,
    /// USD: proceeds − cost_basis.
    pub gain_or_loss: Usd,
    /// USD: loss disallowed under IRC §1091 (0 when none).
    pub wash_sale_disallowed: Usd,
    /// USD: gain_or_loss + wash_sale_disallowed: what is realized for tax.
    pub realized_gain_or_loss: Usd,
    /// Days from holding_period_start to the sale.
    pub holding_days: i64,
    pub term: Term,
    pub wash_sale: DispositionWash,
}

/// Sums of the consumed lots' figures, USD.
#[derive(Object)]
pub struct SellTotals {
    pub cost_basis: Usd,
    pub proceeds: Usd,
    pub gain_or_loss: Usd,
    pub wash_sale_disallowed: Usd,
    pub realized_gain_or_loss: Usd,
    /// The realized short-term gain or loss after wash-sale adjustments.
    pub short_term: Usd,
    /// The realized long-term gain or loss after wash-sale adjustments.
    pub long_term: Usd,
}

/// An earlier loss sale that a buy replaced: the part of its loss now disallowed and moved into the new lot.
#[derive(Object)]
pub struct ReplacedLoss {
    pub disposition_id: String,
    /// The sell that realized the loss.
    pub sell_trade_id: String,
    /// The sell's date-time (UTC).
    pub sold: String,
    /// Units of the sale this buy replaced.
    pub quantity: Exact,
    /// USD: the loss disallowed for those units.
    pub disallowed_loss: Usd,
    /// The lot of this buy that carries it.
    pub replacement_lot_id: String,
    /// That lot's holding period start (YYYY-MM-DD), the sold lot's holding period carried over.
    pub holding_period_start: String,
}

/// Whether the wash-sale rule applied, and why.
#[derive(Object)]
pub struct WashSaleInfo {
    pub rule_applies: bool,
    pub reason: String,
    /// Days before and after a loss sale within which a buy replaces it; null when no rule is in force.
    pub window_days: Option<i64>,
    /// The rule's citation; null when no rule is in force.
    pub citation: Option<CitationView>,
    /// Sells: USD, the loss disallowed by this sale.
    #[oai(skip_serializing_if_is_none)]
    pub disallowed_loss: Option<Usd>,
    /// Buys: earlier losses this buy replaced.
    #[oai(skip_serializing_if_is_none)]
    pub replaced_losses: Option<Vec<ReplacedLoss>>,
    /// Buys: how a buy affects an earlier loss sale.
    #[oai(skip_serializing_if_is_none)]
    pub note: Option<String>,
}

/// The rates on the next dollar of gain.
#[derive(Object)]
pub struct MarginalRates {
    pub short_term: Fraction,
    pub long_term: Fraction,
}

/// Federal estimate. `available` false with `reason` (and nothing else) when the tax year's figures are not in the
/// rules. The members a method does not use are absent.
#[derive(Object, Default)]
#[oai(skip_serializing_if_is_none)]
pub struct FederalEstimate {
    pub available: bool,
    pub reason: Option<String>,
    pub tax_year: Option<i32>,
    /// individual, c_corp or pass_through.
    pub entity_type: Option<String>,
    /// bracket_aware, top_marginal_rates, corporate_flat_rate or pass_through_no_entity_tax.
    pub method: Option<String>,
    /// bracket_aware and top_marginal_rates: the filing status used.
    pub filing_status: Option<String>,
    /// USD: the sale's realized short-term gain (negative: loss).
    pub short_term_gain: Option<Usd>,
    /// USD: the sale's realized long-term gain (negative: loss).
    pub long_term_gain: Option<Usd>,
    /// USD: the part taxed at the 0/15/20% rates (long-term gain net of short-term loss).
    pub net_capital_gain: Option<Usd>,
    /// USD: the part added to (or, for a net loss, taken from) ordinary income.
    pub ordinary_income_change: Option<Usd>,
    /// USD: the change in ordinary income tax.
    pub ordinary_tax: Option<Usd>,
    /// USD: the tax at the long-term rates.
    pub long_term_tax: Option<Usd>,
    /// USD: NIIT (IRC §1411), 3.8% above the MAGI threshold.
    pub net_investment_income_tax: Option<Usd>,
    /// c_corp: the flat rate.
    pub rate: Option<Fraction>,
    /// USD: the estimated federal tax on this sale (negative: a net loss lowers tax).
    pub total_tax: Option<Usd>,
    pub marginal_rates: Option<MarginalRates>,
    pub assumptions: Option<Vec<String>>,
    /// Every figure used.
    pub citations: Option<Vec<CitationView>>,
}

/// State estimate for resident_state. `available` false with `reason` (and nothing else) when not estimated.
#[derive(Object, Default)]
pub struct StateEstimate {
    pub available: bool,
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub state: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub tax_year: Option<i32>,
    /// income_tax, gains_excise or none.
    #[oai(skip_serializing_if_is_none)]
    pub kind: Option<String>,
    /// none, exempt, ordinary, preferential or excise.
    #[oai(skip_serializing_if_is_none)]
    pub treatment: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub short_term_rate: Option<Fraction>,
    #[oai(skip_serializing_if_is_none)]
    pub long_term_rate: Option<Fraction>,
    /// The share of net long-term gain excluded.
    #[oai(skip_serializing_if_is_none)]
    pub long_term_exclusion: Option<Fraction>,
    /// USD.
    #[oai(skip_serializing_if_is_none)]
    pub taxable_short_term: Option<Usd>,
    /// USD.
    #[oai(skip_serializing_if_is_none)]
    pub taxable_long_term: Option<Usd>,
    /// USD: the tax at the state's rates.
    #[oai(skip_serializing_if_is_none)]
    pub tax: Option<Usd>,
    /// USD: surtaxes on top.
    #[oai(skip_serializing_if_is_none)]
    pub surtax: Option<Usd>,
    /// USD: tax + surtax.
    #[oai(skip_serializing_if_is_none)]
    pub total_tax: Option<Usd>,
    #[oai(skip_serializing_if_is_none)]
    pub assumptions: Option<Vec<String>>,
    #[oai(skip_serializing_if_is_none)]
    pub citation: Option<CitationView>,
    /// The treatment's note from the rules: null when it has none; absent when not estimated.
    pub note: MaybeUndefined<String>,
}

/// The federal and state estimates of a sell.
#[derive(Object)]
pub struct Estimates {
    pub federal: FederalEstimate,
    pub state: StateEstimate,
}

impl From<estimate::Estimates> for Estimates {
    fn from(e: estimate::Estimates) -> Self {
        Estimates { federal: e.federal.into(), state: e.state.into() }
    }
}

impl From<estimate::FederalEstimate> for FederalEstimate {
    fn from(f: estimate::FederalEstimate) -> Self {
        FederalEstimate {
            available: f.available,
            reason: f.reason,
            tax_year: f.tax_year,
            entity_type: f.entity_type,
            method: f.method,
            filing_status: f.filing_status,
            short_term_gain: f.short_term_gain.map(Usd::cents),
            long_term_gain: f.long_term_gain.map(Usd::cents),
            net_capital_gain: f.net_capital_gain.map(Usd::cents),
            ordinary_income_change: f.ordinary_income_change.map(Usd::cents),
            ordinary_tax: f.ordinary_tax.map(Usd::cents),
            long_term_tax: f.long_term_tax.map(Usd::cents),
            net_investment_income_tax: f.net_investment_income_tax.map(Usd::cents),
            rate: f.rate.map(Fraction::of),
            total_tax: f.total_tax.map(Usd::cents),
            marginal_rates: f
                .marginal_rates
                .map(|m| MarginalRates { short_term: Fraction::of(m.short_term), long_term: Fraction::of(m.long_term) }),
            assumptions: f.assumptions,
            citations: f.citations.map(|c| c.iter().map(CitationView::from).collect()),
        }
    }
}

impl From<estimate::StateEstimate> for StateEstimate {
    fn from(s: estimate::StateEstimate) -> Self {
        StateEstimate {
            available: s.available,
            reason: s.reason,
            state: s.state,
            tax_year: s.tax_year,
            kind: s.kind,
            treatment: s.treatment,
            short_term_rate: s.short_term_rate.map(Fraction::of),
            long_term_rate: s.long_term_rate.map(Fraction::of),
            long_term_exclusion: s.long_term_exclusion.map(Fraction::of),
            taxable_short_term: s.taxable_short_term.map(Usd::cents),
            taxable_long_term: s.taxable_long_term.map(Usd::cents),
            tax: s.tax.map(Usd::cents),
            surtax: s.surtax.map(Usd::cents),
            total_tax: s.total_tax.map(Usd::cents),
            assumptions: s.assumptions,
            citation: s.citation.as_ref().map(CitationView::from),
            // A treatment without a note sends `note: null`, as the document says.
            note: MaybeUndefined::from_opt_null(s.note),
        }
    }
}

/// A recorded trade. Buys carry `cost_basis`, `lot` and `lots`; sells carry `accounting_method`, proceeds,
/// `lots_consumed`, `totals`, `realized_gain_loss`, `holding_period` and `estimates`. The others are absent.
#[derive(Object)]
pub struct TradeResult {
    pub success: bool,
    pub trade_id: String,
    pub trade_type: TradeType,
    pub asset_symbol: String,
    /// The asset class sent with this trade or an earlier one of the asset; null when never sent.
    pub asset_class: Option<AssetClass>,
    /// Units, exactly (at most 8 decimal places).
    pub quantity: Exact,
    /// USD per unit, as sent (trailing zeros dropped).
    pub price_per_unit: Exact,
    /// USD.
    pub fee_amount: Usd,
    /// The trade's date-time (UTC).
    pub trade_date: String,
    /// Buy: USD, quantity × price + fee.
    #[oai(skip_serializing_if_is_none)]
    pub cost_basis: Option<Usd>,
    /// Buy: the lot it made (the first, when part of it replaced an earlier loss and it was split).
    #[oai(skip_serializing_if_is_none)]
    pub lot: Option<LotView>,
    /// Buy: every lot it made.
    #[oai(skip_serializing_if_is_none)]
    pub lots: Option<Vec<LotView>>,
    /// Sell: the method the lots were matched by.
    #[oai(skip_serializing_if_is_none)]
    pub accounting_method: Option<AccountingMethod>,
    /// Sell: USD, quantity × price.
    #[oai(skip_serializing_if_is_none)]
    pub gross_proceeds: Option<Usd>,
    /// Sell: USD, gross less the fee.
    #[oai(skip_serializing_if_is_none)]
    pub net_proceeds: Option<Usd>,
    /// Sell: every lot consumed, in matching order.
    #[oai(skip_serializing_if_is_none)]
    pub lots_consumed: Option<Vec<ConsumedLot>>,
    /// Sell: sums of lots_consumed.
    #[oai(skip_serializing_if_is_none)]
    pub totals: Option<SellTotals>,
    /// Sell: USD, realized gain (positive) or loss (negative) after wash-sale adjustments.
    #[oai(skip_serializing_if_is_none)]
    pub realized_gain_loss: Option<Usd>,
    /// Sell: short_term, long_term or mixed.
    #[oai(skip_serializing_if_is_none)]
    pub holding_period: Option<String>,
    pub wash_sale: WashSaleInfo,
    /// Sell: the federal and state tax estimates.
    #[oai(skip_serializing_if_is_none)]
    pub estimates: Option<Estimates>,
    pub entity_id: String,
    /// When the trade was recorded (UTC).
    pub recorded_at: String,
    pub api_version: String,
    pub disclaimer: String,
}

/// A JSON object stored as it was sent, and written back the same: its members keep their order.
pub struct Recorded(pub Value);

impl Type for Recorded {
    crate::raw_is_self!();

    fn name() -> Cow<'static, str> {
        <Obj as Type>::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        <Obj as Type>::schema_ref()
    }

    fn register(registry: &mut Registry) {
        <Obj as Type>::register(registry);
    }
}

impl ParseFromJSON for Recorded {
    fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
        match value.unwrap_or_default() {
            v @ Value::Object(_) => Ok(Recorded(v)),
            other => Err(ParseError::expected_type(other)),
        }
    }
}

impl ToJSON for Recorded {
    fn to_json(&self) -> Option<Value> {
        Some(self.0.clone())
    }
}

/// A trade in the list.
#[derive(Object)]
pub struct TradeRecord {
    pub trade_id: String,
    pub trade_type: TradeType,
    pub asset_symbol: String,
    /// The asset class sent with the trade; null when none was.
    pub asset_class: Option<AssetClass>,
    /// Units, exactly.
    pub quantity: Exact,
    /// USD per unit, as sent (trailing zeros dropped).
    pub price_per_unit: Exact,
    /// USD.
    pub fee_amount: Usd,
    /// The trade's date-time (UTC).
    pub trade_date: String,
    /// When it was recorded (UTC).
    pub recorded_at: String,
    /// Sells: the method the lots were matched by; null for buys.
    pub accounting_method: Option<AccountingMethod>,
    /// Sells: USD, as recorded (a later wash-sale replacement can change it; the summary has the current figure).
    /// Null for buys.
    pub realized_gain_or_loss: Option<Usd>,
    pub exchange: Option<String>,
    pub counterparty: Option<String>,
    pub notes: Option<String>,
    /// The response the trade got when it was recorded (a TradeResult as it was then), as stored.
    pub as_recorded: Recorded,
}

/// One asset's running totals.
#[derive(Object)]
pub struct AssetSummary {
    pub asset_symbol: String,
    /// The latest asset class sent for the asset; null when none was.
    pub asset_class: Option<AssetClass>,
    /// The latest asset name sent; null when none was.
    pub asset_name: Option<String>,
    /// Units held, exactly.
    pub held_quantity: Exact,
    pub open_lots: i64,
    /// USD: the basis of the units held.
    pub remaining_basis: Usd,
    /// USD: realized short-term gain or loss after wash-sale adjustments.
    pub realized_short_term: Usd,
    /// USD: realized long-term gain or loss after wash-sale adjustments.
    pub realized_long_term: Usd,
    /// USD: realized_short_term + realized_long_term.
    pub realized_total: Usd,
    /// USD: losses disallowed as wash sales.
    pub wash_sale_disallowed: Usd,
    /// Buys recorded.
    pub buys: i64,
    /// Sells recorded.
    pub sells: i64,
}

/// Running totals over all time: per asset, and their sums (USD).
#[derive(Object)]
pub struct TradeSummary {
    pub assets: Vec<AssetSummary>,
    pub realized_short_term: Usd,
    pub realized_long_term: Usd,
    pub realized_total: Usd,
    pub wash_sale_disallowed: Usd,
}

/// A page of the account's trades, newest trade_date first, with the summary.
#[derive(Object)]
pub struct TradeList {
    pub success: bool,
    /// Trades on this page.
    pub count: u32,
    pub limit: i64,
    pub offset: i64,
    pub trades: Vec<TradeRecord>,
    /// Over all time, per asset (or the asset asked for).
    pub summary: TradeSummary,
}

/// One disposition on the draft 1099-DA; `box_*` names say which box of the final form a value belongs to.
#[derive(Object)]
pub struct Form1099DaEntry {
    pub disposition_id: String,
    pub trade_id: String,
    pub lot_id: String,
    pub asset_symbol: String,
    pub asset_class: Option<AssetClass>,
    pub exchange: Option<String>,
    /// DTIF code: not known to the ledger (null).
    pub box_1a_digital_asset_code: Option<String>,
    pub box_1b_digital_asset_name: String,
    /// Units with 8 decimal places.
    pub box_1c_number_of_units: Exact,
    pub box_1d_date_acquired: String,
    pub box_1e_date_sold_or_disposed: String,
    /// USD, net of the sell fee.
    pub box_1f_proceeds: Usd,
    /// USD.
    pub box_1g_cost_or_other_basis: Usd,
    /// Not known to the ledger (null).
    pub box_1h_accrued_market_discount: Option<Usd>,
    /// USD.
    pub box_1i_wash_sale_loss_disallowed: Usd,
    /// Always false: a draft reports nothing to the IRS.
    pub box_2_basis_reported_to_irs: bool,
    /// net.
    pub box_3a_proceeds_reported: String,
    pub box_6_gain_or_loss_type: Term,
    /// USD: box 1f − box 1g + box 1i.
    pub gain_or_loss: Usd,
}

/// Sums of entries' figures (USD).
#[derive(Object)]
pub struct Form1099DaTotal {
    pub count: u64,
    pub box_1f_proceeds: Usd,
    pub box_1g_cost_or_other_basis: Usd,
    pub box_1i_wash_sale_loss_disallowed: Usd,
    pub gain_or_loss: Usd,
}

#[derive(Object)]
pub struct Form1099DaTotals {
    pub short_term: Form1099DaTotal,
    pub long_term: Form1099DaTotal,
    pub all: Form1099DaTotal,
}

/// The broker's block: the broker files the official form, so its name and TIN are null here.
#[derive(Object)]
pub struct Form1099DaPayer {
    /// Always null.
    pub name: Option<String>,
    /// Always null.
    pub tin: Option<String>,
    pub note: String,
}

/// The account the draft is for.
#[derive(Object)]
pub struct Form1099DaRecipient {
    /// The company name, or the agent name when the account has none.
    pub name: String,
    /// The EIN masked to its last four digits (XX-XXX1234); null when the account has no EIN.
    pub tin: Option<String>,
    /// The account's state; null when it has none.
    pub state: Option<String>,
    pub email: String,
    /// The account's id.
    pub account_number: String,
}

/// The draft Form 1099-DA for one tax year.
#[derive(Object)]
pub struct Export1099Da {
    /// 1099-DA.
    pub form: String,
    pub title: String,
    /// Always true.
    pub draft: bool,
    pub notice: String,
    pub tax_year: i32,
    pub generated_at: String,
    pub payer: Form1099DaPayer,
    pub recipient: Form1099DaRecipient,
    pub entries: Vec<Form1099DaEntry>,
    /// Sums of the entries' figures, by term.
    pub totals: Form1099DaTotals,
    /// What each box holds here.
    pub box_notes: BTreeMap<String, String>,
}

/// Compact form: st and lt rates, t treatment.
#[derive(Object)]
pub struct CompactGainsRate {
    /// The effective top rate on short-term gain.
    pub st: Fraction,
    /// The effective top rate on long-term gain.
    pub lt: Fraction,
    /// none, exempt, ordinary, preferential or excise.
    pub t: String,
}

listed_enum!(
    /// What a surtax's threshold is measured on: income_above (income and gain above `over`), gain_above (gain above
    /// `over`) or whole_gain_when_income_above (all of the gain once income and gain exceed `over`).
    SurtaxOn = crate::rules::gains::SURTAX_BASES
);

/// A surtax on capital gains.
#[derive(Object)]
pub struct GainsSurtax {
    pub rate: Fraction,
    /// USD: the threshold.
    pub over: Usd,
    pub on: SurtaxOn,
}

/// One state's treatment of a resident's capital gains.
#[derive(Object)]
pub struct StateGainsRate {
    pub state: String,
    /// income_tax, gains_excise or none.
    pub kind: String,
    /// none, exempt, ordinary, preferential or excise.
    pub treatment: String,
    /// Effective top rate on short-term gain.
    pub short_term_rate: Fraction,
    /// Effective top rate on long-term gain (after exclusion and cap).
    pub long_term_rate: Fraction,
    pub top_ordinary_rate: Fraction,
    /// flat or graduated (null where there is no tax).
    pub rate_structure: Option<String>,
    /// The share of net long-term gain excluded.
    pub long_term_exclusion: Fraction,
    /// The highest rate on long-term gain; null when uncapped.
    pub long_term_cap: Option<Fraction>,
    /// USD of gain deducted.
    pub gain_deduction: Usd,
    pub short_term_taxed: bool,
    pub surtaxes: Vec<GainsSurtax>,
    pub effective_from: String,
    /// null while open-ended.
    pub effective_to: Option<String>,
    pub citation: CitationView,
    pub note: Option<String>,
    /// With explain=true and state; absent otherwise.
    #[oai(skip_serializing_if_is_none)]
    pub explanation: Option<String>,
}

/// The full table (the default).
#[derive(Object)]
pub struct FullGainsRates {
    pub success: bool,
    /// Today (UTC).
    pub as_of: String,
    pub tax_year: i32,
    /// By state code.
    pub states: BTreeMap<String, StateGainsRate>,
    pub disclaimer: String,
}

/// The full table (default) or, with format=compact, {state: {st, lt, t}}.
#[derive(Union)]
#[oai(one_of)]
pub enum CapitalGainsRates {
    Full(FullGainsRates),
    Compact(BTreeMap<String, CompactGainsRate>),
}
