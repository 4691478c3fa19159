//! Subscription plans and what happens past their monthly allowance (interface spec, Limits).

pub enum Overage {
    /// Refuse further calls until the month ends (429 "Monthly limit reached", no Retry-After).
    HardCutoff,
    /// Serve the call and record it as metered usage at this price per call (USD).
    Meter(&'static str),
}

pub struct Plan {
    pub id: &'static str,
    pub name: &'static str,
    pub monthly_calls: i64,
    pub overage: Overage,
    /// Optimization reports (GET /api/v1/optimization-report) the plan includes per calendar month (UTC).
    pub optimization_reports_per_month: i64,
}

pub const PLANS: &[Plan] = &[
    Plan { id: "free", name: "Free", monthly_calls: 1_500, overage: Overage::HardCutoff, optimization_reports_per_month: 1 },
    // The spec records both "no overage billing" and "0.01 USD overage" for starter; the issue asks every paid plan to meter.
    Plan { id: "starter", name: "Starter", monthly_calls: 10_000, overage: Overage::Meter("0.01"), optimization_reports_per_month: 5 },
    Plan { id: "growth", name: "Growth", monthly_calls: 100_000, overage: Overage::Meter("0.01"), optimization_reports_per_month: 25 },
    Plan { id: "pro", name: "Pro", monthly_calls: 1_000_000, overage: Overage::Meter("0.005"), optimization_reports_per_month: 100 },
];

pub fn plan(id: &str) -> &'static Plan {
    PLANS.iter().find(|p| p.id == id).unwrap_or(&PLANS[0])
}
