//! Trades, lots, realized gains, estimates, the draft 1099-DA and capital-gains rates (interface spec
//! item 5, "Trade request", "Capital-gains rates query" and "1099-DA export query").

use std::collections::BTreeMap;

use poem_openapi::{Enum, Object, Union};

use super::calculate::Obj;
use crate::listed_enum;

listed_enum!(TradeType = crate::gains::request::TRADE_TYPES);

/// An asset symbol as the gains tracker checks it (`gains::request::is_symbol`); the body's attribute repeats it.
pub const SYMBOL_PATTERN: &str = r"^[A-Za-z0-9._\-]{1,50}$";
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
    #[oai(validator(min_length = 1, max_length = 50, pattern = r"^[A-Za-z0-9._\-]{1,50}$"))]
    pub asset_symbol: String,
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

/// A cost-basis lot.
#[derive(Object)]
pub struct LotView {
    pub lot_id: String,
    /// The buy that made it.
    pub trade_id: String,
    pub asset_symbol: String,
    /// Acquisition date-time (UTC).
    pub acquired: String,
    /// First day of the holding period (YYYY-MM-DD): the acquisition date, earlier for a wash-sale replacement.
    pub holding_period_start: String,
    pub quantity: f64,
    /// Quantity × price + buy fee (+ any disallowed wash-sale loss).
    pub cost_basis: f64,
    pub remaining_quantity: f64,
    pub remaining_basis: f64,
    /// Disallowed wash-sale loss added to the basis.
    pub wash_sale_adjustment: f64,
    /// The disposition whose loss this lot carries, when it is a wash-sale replacement.
    pub wash_sale_replacement_for: Option<String>,
    /// The lot this one was split from (part of a lot that became a replacement).
    pub split_from: Option<String>,
    /// open or closed.
    pub status: String,
}

/// A replacement lot that took a disallowed loss.
#[derive(Object)]
pub struct Replacement {
    pub lot_id: String,
    pub quantity: f64,
    pub disallowed_loss: f64,
    pub holding_period_start: Option<String>,
    /// The buy, when the replacement came after the sale.
    pub trade_id: Option<String>,
}

#[derive(Object)]
pub struct DispositionWash {
    /// True for a loss under the wash-sale rule.
    pub applicable: bool,
    /// Loss units not (yet) matched with a replacement; a buy within the window may still match them.
    pub unreplaced_quantity: f64,
    pub replacements: Vec<Replacement>,
}

/// One lot's share of a sell.
#[derive(Object)]
pub struct ConsumedLot {
    pub disposition_id: String,
    pub lot_id: String,
    pub quantity: f64,
    pub acquired: String,
    pub holding_period_start: String,
    pub sold: String,
    /// The lot's basis share (pro rata to the quantity taken).
    pub cost_basis: f64,
    /// Net proceeds share (the sell fee reduces proceeds).
    pub proceeds: f64,
    /// proceeds − cost_basis.
    pub gain_or_loss: f64,
    /// Loss disallowed under IRC §1091 (0 when none).
    pub wash_sale_disallowed: f64,
    /// gain_or_loss + wash_sale_disallowed: what is realized for tax.
    pub realized_gain_or_loss: f64,
    /// Days from holding_period_start to the sale.
    pub holding_days: i64,
    pub term: Term,
    pub wash_sale: DispositionWash,
}

/// Sums of the consumed lots' figures.
#[derive(Object)]
pub struct SellTotals {
    pub cost_basis: f64,
    pub proceeds: f64,
    pub gain_or_loss: f64,
    pub wash_sale_disallowed: f64,
    pub realized_gain_or_loss: f64,
    pub short_term: f64,
    pub long_term: f64,
}

/// Whether the wash-sale rule applied, and why.
#[derive(Object)]
pub struct WashSaleInfo {
    pub rule_applies: bool,
    pub reason: String,
    pub window_days: Option<i64>,
    /// {cite, url}.
    pub citation: Option<Obj>,
    /// Sells: the loss disallowed by this sale.
    pub disallowed_loss: Option<f64>,
    /// Buys: earlier losses this buy replaced (disposition_id, sell_trade_id, sold, quantity, disallowed_loss, replacement_lot_id, holding_period_start).
    pub replaced_losses: Option<Vec<Obj>>,
    pub note: Option<String>,
}

/// Federal estimate. `available` false with `reason` when the tax year's figures are not in the rules.
/// method: bracket_aware, top_marginal_rates, corporate_flat_rate or pass_through_no_entity_tax.
#[derive(Object)]
pub struct FederalEstimate {
    pub available: bool,
    pub reason: Option<String>,
    pub tax_year: Option<i32>,
    pub entity_type: Option<String>,
    pub method: Option<String>,
    pub filing_status: Option<String>,
    pub short_term_gain: Option<f64>,
    pub long_term_gain: Option<f64>,
    /// The part taxed at the 0/15/20% rates (long-term gain net of short-term loss).
    pub net_capital_gain: Option<f64>,
    /// The part added to (or, for a net loss, taken from) ordinary income.
    pub ordinary_income_change: Option<f64>,
    pub ordinary_tax: Option<f64>,
    pub long_term_tax: Option<f64>,
    /// NIIT (IRC §1411), 3.8% above the MAGI threshold.
    pub net_investment_income_tax: Option<f64>,
    /// c_corp: the flat rate.
    pub rate: Option<f64>,
    /// The estimated federal tax on this sale (negative: a net loss lowers tax).
    pub total_tax: Option<f64>,
    /// {short_term, long_term}: the rates on the next dollar.
    pub marginal_rates: Option<Obj>,
    pub assumptions: Option<Vec<String>>,
    /// [{cite, url}] of every figure used.
    pub citations: Option<Vec<Obj>>,
}

/// State estimate for resident_state. `available` false with `reason` when not estimated.
#[derive(Object)]
pub struct StateEstimate {
    pub available: bool,
    pub reason: Option<String>,
    pub state: Option<String>,
    pub tax_year: Option<i32>,
    /// income_tax, gains_excise or none.
    pub kind: Option<String>,
    /// none, exempt, ordinary, preferential or excise.
    pub treatment: Option<String>,
    pub short_term_rate: Option<f64>,
    pub long_term_rate: Option<f64>,
    pub long_term_exclusion: Option<f64>,
    pub taxable_short_term: Option<f64>,
    pub taxable_long_term: Option<f64>,
    pub tax: Option<f64>,
    pub surtax: Option<f64>,
    pub total_tax: Option<f64>,
    pub assumptions: Option<Vec<String>>,
    /// {cite, url}.
    pub citation: Option<Obj>,
    pub note: Option<String>,
}

#[derive(Object)]
pub struct Estimates {
    pub federal: FederalEstimate,
    pub state: StateEstimate,
}

/// A recorded trade. Buys carry `cost_basis`, `lot` and `lots`; sells carry `accounting_method`, proceeds,
/// `lots_consumed`, `totals`, `realized_gain_loss`, `holding_period` and `estimates`.
#[derive(Object)]
pub struct TradeResult {
    pub success: bool,
    pub trade_id: String,
    pub trade_type: TradeType,
    pub asset_symbol: String,
    pub asset_class: Option<AssetClass>,
    pub quantity: f64,
    pub price_per_unit: f64,
    pub fee_amount: f64,
    pub trade_date: String,
    /// Buy: quantity × price + fee.
    pub cost_basis: Option<f64>,
    /// Buy: the lot it made (the first, when part of it replaced an earlier loss and it was split).
    pub lot: Option<LotView>,
    /// Buy: every lot it made.
    pub lots: Option<Vec<LotView>>,
    pub accounting_method: Option<AccountingMethod>,
    /// Sell: quantity × price.
    pub gross_proceeds: Option<f64>,
    /// Sell: gross less the fee.
    pub net_proceeds: Option<f64>,
    pub lots_consumed: Option<Vec<ConsumedLot>>,
    pub totals: Option<SellTotals>,
    /// Sell: realized gain (positive) or loss (negative) after wash-sale adjustments.
    pub realized_gain_loss: Option<f64>,
    /// Sell: short_term, long_term or mixed.
    pub holding_period: Option<String>,
    pub wash_sale: WashSaleInfo,
    pub estimates: Option<Estimates>,
    pub entity_id: String,
    pub recorded_at: String,
    pub api_version: String,
    pub disclaimer: String,
}

/// A trade in the list.
#[derive(Object)]
pub struct TradeRecord {
    pub trade_id: String,
    pub trade_type: TradeType,
    pub asset_symbol: String,
    pub asset_class: Option<AssetClass>,
    pub quantity: f64,
    pub price_per_unit: f64,
    pub fee_amount: f64,
    pub trade_date: String,
    pub recorded_at: String,
    pub accounting_method: Option<AccountingMethod>,
    /// Sells: as recorded (a later wash-sale replacement can change it; the summary has the current figure).
    pub realized_gain_or_loss: Option<f64>,
    pub exchange: Option<String>,
    pub counterparty: Option<String>,
    pub notes: Option<String>,
    /// The response the trade got when it was recorded.
    pub as_recorded: Obj,
}

/// One asset's running totals.
#[derive(Object)]
pub struct AssetSummary {
    pub asset_symbol: String,
    pub asset_class: Option<AssetClass>,
    pub asset_name: Option<String>,
    pub held_quantity: f64,
    pub open_lots: i64,
    pub remaining_basis: f64,
    pub realized_short_term: f64,
    pub realized_long_term: f64,
    pub realized_total: f64,
    pub wash_sale_disallowed: f64,
    pub buys: i64,
    pub sells: i64,
}

#[derive(Object)]
pub struct TradeSummary {
    pub assets: Vec<AssetSummary>,
    pub realized_short_term: f64,
    pub realized_long_term: f64,
    pub realized_total: f64,
    pub wash_sale_disallowed: f64,
}

#[derive(Object)]
pub struct TradeList {
    pub success: bool,
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
    pub box_1c_number_of_units: f64,
    pub box_1d_date_acquired: String,
    pub box_1e_date_sold_or_disposed: String,
    /// Net of the sell fee.
    pub box_1f_proceeds: f64,
    pub box_1g_cost_or_other_basis: f64,
    pub box_1h_accrued_market_discount: Option<f64>,
    pub box_1i_wash_sale_loss_disallowed: f64,
    /// Always false: a draft reports nothing to the IRS.
    pub box_2_basis_reported_to_irs: bool,
    /// net.
    pub box_3a_proceeds_reported: String,
    pub box_6_gain_or_loss_type: Term,
    /// box 1f − box 1g + box 1i.
    pub gain_or_loss: f64,
}

#[derive(Object)]
pub struct Form1099DaTotal {
    pub count: u64,
    pub box_1f_proceeds: f64,
    pub box_1g_cost_or_other_basis: f64,
    pub box_1i_wash_sale_loss_disallowed: f64,
    pub gain_or_loss: f64,
}

#[derive(Object)]
pub struct Form1099DaTotals {
    pub short_term: Form1099DaTotal,
    pub long_term: Form1099DaTotal,
    pub all: Form1099DaTotal,
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
    /// The broker's block: the broker files the official form (null name and TIN here).
    pub payer: Obj,
    /// The account: name, masked TIN (last four of the EIN), state, email, account_number.
    pub recipient: Obj,
    pub entries: Vec<Form1099DaEntry>,
    /// Sums of the entries' figures, by term.
    pub totals: Form1099DaTotals,
    /// What each box holds here.
    pub box_notes: BTreeMap<String, String>,
}

/// Compact form: st and lt rates, t treatment.
#[derive(Object)]
pub struct CompactGainsRate {
    pub st: f64,
    pub lt: f64,
    /// none, exempt, ordinary, preferential or excise.
    pub t: String,
}

/// One state's treatment of a resident's capital gains.
#[derive(Object)]
pub struct StateGainsRate {
    pub state: String,
    /// income_tax, gains_excise or none.
    pub kind: String,
    pub treatment: String,
    /// Effective top rate on short-term gain.
    pub short_term_rate: f64,
    /// Effective top rate on long-term gain (after exclusion and cap).
    pub long_term_rate: f64,
    pub top_ordinary_rate: f64,
    /// flat or graduated (null where there is no tax).
    pub rate_structure: Option<String>,
    pub long_term_exclusion: f64,
    pub long_term_cap: Option<f64>,
    pub gain_deduction: f64,
    pub short_term_taxed: bool,
    /// [{rate, over, on}]; on is income_above, gain_above or whole_gain_when_income_above.
    pub surtaxes: Vec<Obj>,
    pub effective_from: String,
    pub effective_to: Option<String>,
    /// {cite, url}.
    pub citation: Obj,
    pub note: Option<String>,
    /// With explain=true and state.
    pub explanation: Option<String>,
}

#[derive(Object)]
pub struct FullGainsRates {
    pub success: bool,
    pub as_of: String,
    pub tax_year: i32,
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
