//! The liability report and filed periods.

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseResult, Type};
use poem_openapi::Object;

use super::number::Usd;
use crate::ledger::liability::Reason;
use crate::ledger::report::{Figures, Totals};
use crate::listed_enum;

super::param::documented!(
    /// Why sales owe no tax: not_taxable (by category), b2b_exemption, exemption_certificate, marketplace_facilitator (it collects), no_nexus, seller_collected (a purchase whose seller collected), outside_sales_tax, not_itemized (recorded before the ledger itemized).
    ExemptReason => MetaSchema {
        enum_items: Reason::ALL.iter().map(|r| serde_json::Value::String(r.id().to_string())).collect(),
        ..MetaSchema::new("string")
    }
);

listed_enum!(
    /// How long each filing period is: month (the default), quarter or year.
    ReportPeriod = crate::ledger::report::Granularity::VALUES
);

listed_enum!(
    /// json (the default) or csv (the worksheet, with a totals row); `Accept: text/csv` also gives csv.
    ReportFormat = ["json", "csv"]
);

/// Which return a figure belongs to.
#[derive(poem_openapi::Enum, Clone, Copy, Debug, PartialEq, Eq)]
#[oai(rename_all = "snake_case")]
pub enum ReturnTax {
    /// The account's sales, as seller.
    SalesTax,
    /// The account's purchases, as buyer.
    UseTax,
}

#[derive(Object)]
pub struct ExemptPart {
    pub reason: ExemptReason,
    pub amount: Usd,
}

#[derive(Object)]
pub struct ExemptSales {
    pub total: Usd,
    /// Each reason with sales, in the order of the reason's list.
    pub by_reason: Vec<ExemptPart>,
}

/// The refunds dated in the period (negative figures).
#[derive(Object)]
pub struct RefundFigures {
    pub count: u64,
    pub sales: Usd,
    pub taxable_sales: Usd,
    pub tax: Usd,
}

/// The voided transactions dated in the period: shown apart, counted in no other figure.
#[derive(Object)]
pub struct VoidFigures {
    pub count: u64,
    pub sales: Usd,
    pub tax: Usd,
}

/// A period's figures.
#[derive(Object)]
pub struct LiabilityFigures {
    /// Transactions dated in the period (refunds and voided ones apart).
    pub transactions: u64,
    pub gross_sales: Usd,
    pub exempt_sales: ExemptSales,
    pub taxable_sales: Usd,
    /// Tax charged on them (for use tax: owed on the purchases).
    pub tax_collected: Usd,
    pub refunds: RefundFigures,
    pub voids: VoidFigures,
    /// taxable_sales plus refunds.taxable_sales.
    pub net_taxable_sales: Usd,
    /// tax_collected plus refunds.tax: what the return pays.
    pub net_tax_due: Usd,
}

impl From<&Totals> for LiabilityFigures {
    fn from(t: &Totals) -> Self {
        let Figures { count, gross, exempt, taxable, tax } = &t.sales;
        let by_reason = Reason::ALL
            .iter()
            .filter_map(|r| exempt.get(r).filter(|x| !x.is_zero()).map(|x| (r, x)))
            .map(|(r, x)| ExemptPart { reason: ExemptReason(serde_json::Value::String(r.id().into())), amount: Usd::cents(*x) })
            .collect();
        LiabilityFigures {
            transactions: *count,
            gross_sales: Usd::cents(*gross),
            exempt_sales: ExemptSales { total: Usd::cents(t.sales.exempt_total()), by_reason },
            taxable_sales: Usd::cents(*taxable),
            tax_collected: Usd::cents(*tax),
            refunds: RefundFigures {
                count: t.refunds.count,
                sales: Usd::cents(t.refunds.gross),
                taxable_sales: Usd::cents(t.refunds.taxable),
                tax: Usd::cents(t.refunds.tax),
            },
            voids: VoidFigures { count: t.voids.count, sales: Usd::cents(t.voids.gross), tax: Usd::cents(t.voids.tax) },
            net_taxable_sales: Usd::cents(t.net_taxable()),
            net_tax_due: Usd::cents(t.net_tax()),
        }
    }
}

/// One jurisdiction of a return.
#[derive(Object)]
pub struct JurisdictionLiability {
    /// The state's code, or a local or special tax's id in the rule files (`tx.austin`).
    pub jurisdiction_id: String,
    /// state, a local level (county, city, special_district, …) or special.
    pub level: String,
    pub name: String,
    #[oai(flatten)]
    pub figures: LiabilityFigures,
}

/// One return: a state, a tax and a period, with its jurisdictions.
#[derive(Object)]
pub struct LiabilityReturn {
    pub state: String,
    pub tax: ReturnTax,
    /// Its label: YYYY-MM, YYYY-Qn or YYYY.
    pub period: String,
    /// YYYY-MM-DD.
    pub first_day: String,
    /// YYYY-MM-DD.
    pub last_day: String,
    /// Whether a period of the state holding this one was marked filed (POST /api/v1/reports/liability/filed).
    pub filed: bool,
    pub filed_at: Option<String>,
    #[oai(flatten)]
    pub figures: LiabilityFigures,
    /// The state first, then its local and special taxes; their net_tax_due add up to the return's.
    pub jurisdictions: Vec<JurisdictionLiability>,
}

/// GET /api/v1/reports/liability.
#[derive(Object)]
pub struct LiabilityReport {
    pub success: bool,
    pub entity_id: String,
    /// YYYY-MM-DD.
    pub from: String,
    /// YYYY-MM-DD.
    pub to: String,
    /// month, quarter or year.
    pub period: String,
    /// The state asked for; null: every state.
    pub state: Option<String>,
    /// By state, tax, then period.
    pub returns: Vec<LiabilityReturn>,
    /// Of every return: net_tax_due is the ledger's tax over the days asked, refunds included, voids left out.
    pub totals: LiabilityFigures,
    pub generated_at: String,
}

/// Body of POST /api/v1/reports/liability/filed.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct FiledBody {
    /// Two-letter state code (lowercase accepted).
    pub state: super::param::StateParam,
    /// YYYY-MM, YYYY-Qn or YYYY.
    pub period: super::param::PeriodParam,
}

/// A period marked filed.
#[derive(Object)]
pub struct FiledPeriod {
    pub success: bool,
    pub state: String,
    pub period: String,
    /// YYYY-MM-DD.
    pub first_day: String,
    /// YYYY-MM-DD.
    pub last_day: String,
    pub filed_at: String,
    /// True when it was marked before: nothing changed.
    pub already_filed: bool,
}
