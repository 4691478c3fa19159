//! The MCP tools: each is one operation of the OpenAPI document, named for a model and described for one.
//! Their input schemas, methods and paths are read from the document (`mcp::Catalog`), never written here.

/// What a tool does to the account's data, as the MCP annotations say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Reads only (`readOnlyHint`); calling it again gives the same answer for the same data.
    Reads,
    /// Adds to the account's records (the ledger, the trades); nothing is overwritten.
    Records,
    /// Replaces what the account had (`destructiveHint`); the same call twice leaves the same state.
    Replaces,
}

/// One tool: its name, the operation it calls (the document's `operationId`), and its description.
pub struct ToolSpec {
    pub name: &'static str,
    pub operation: &'static str,
    pub effect: Effect,
    pub description: &'static str,
}

/// Every tool, in the order `tools/list` gives them.
pub const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "calculate_tax",
        operation: "calculate",
        effect: Effect::Records,
        description: "Work out the US sales or use tax one sale or purchase owes, in any of the 51 jurisdictions. \
            Use it before charging a buyer, or to know the use tax owed on a purchase. Give the amount, the buyer's \
            state (and buyer_zip for the county and city layers), what is sold (transaction_type, e.g. saas, \
            digital_good, physical_good) and your role (seller or buyer). The answer has the tax, the combined rate, \
            each rate layer with its citation, the rule that decided and why, and nexus and 1099 notes. With an API \
            key the call is recorded in the account's ledger (nexus revenue, 1099 totals) and counts as one call of \
            the plan's monthly allowance (get_pricing); without a key it is a demo answer under the demo limits and \
            nothing is recorded.",
    },
    ToolSpec {
        name: "ingest_transactions",
        operation: "ingestTransactions",
        effect: Effect::Records,
        description: "Record one sale or purchase that was already made (an order from a shop, a payment to a \
            vendor) so that nexus revenue, 1099 totals and reports include it. It takes calculate_tax's fields plus \
            external_tx_id (the order's id in your system), is determined like calculate_tax and written to the \
            ledger; a record whose external_tx_id was recorded before is not written again and the original comes \
            back. Batches of up to 100 are the REST operation's. Needs an API key; counts as one call of the plan's \
            allowance.",
    },
    ToolSpec {
        name: "list_transactions",
        operation: "listTransactions",
        effect: Effect::Reads,
        description: "List the account's recorded transactions, newest first, with filters (role, state, \
            transaction_type, since) and paging (limit, offset). Use it to review what was charged or to reconcile. \
            Needs an API key; free.",
    },
    ToolSpec {
        name: "get_transaction",
        operation: "getTransaction",
        effect: Effect::Reads,
        description: "One recorded transaction (transaction_id from list_transactions or calculate_tax's answer) with \
            its calculation, its refunds, and what is left to refund of it (the sale amount and the tax). Use it \
            before refund_transaction to see what can still be given back. Needs an API key; free.",
    },
    ToolSpec {
        name: "refund_transaction",
        operation: "refundTransaction",
        effect: Effect::Records,
        description: "Refund a recorded transaction (transaction_id from list_transactions), in whole or in part: \
            amount (default all that is left), tax_lines (only those jurisdictions' tax, e.g. a city tax charged in \
            error), refund_date (default today; it decides the filing period the refund lands in). The refund is a \
            ledger row of its own, negative in sales and tax; its tax is the original's in proportion, to the cent, \
            and never more than remains unrefunded. Needs an API key; free.",
    },
    ToolSpec {
        name: "void_transaction",
        operation: "voidTransaction",
        effect: Effect::Replaces,
        description: "Void a recorded transaction that was a mistake or a duplicate: it and its refunds leave every \
            total (the liability report, nexus revenue, 1099 totals) and stay listed as voided. Refused once the \
            state's return for its period is marked filed; refund it instead. Needs an API key; free.",
    },
    ToolSpec {
        name: "get_liability_report",
        operation: "liabilityReport",
        effect: Effect::Reads,
        description: "What to file: per state, tax (sales or use) and period (month, quarter or year) between from \
            and to, then per jurisdiction (state, county, city, special district), the gross sales, exempt sales by \
            reason (not taxable, certificate, marketplace facilitator, no nexus, B2B), taxable sales, tax collected, \
            refunds and voids of the period, and the net tax due. format=csv gives the worksheet. Needs an API key; \
            free.",
    },
    ToolSpec {
        name: "mark_period_filed",
        operation: "markPeriodFiled",
        effect: Effect::Records,
        description: "Record that a state's return for a period that has ended (YYYY-MM, YYYY-Qn or YYYY) was filed: \
            its transactions can then no longer be voided, and refunds must be dated in an open period. Needs an \
            API key; free.",
    },
    ToolSpec {
        name: "get_nexus",
        operation: "getNexus",
        effect: Effect::Reads,
        description: "The states where the account has said it has nexus (a duty to collect), as stored. A \
            seller's calculate_tax charges tax only where nexus is set. Needs an API key; free.",
    },
    ToolSpec {
        name: "configure_nexus",
        operation: "setNexus",
        effect: Effect::Replaces,
        description: "Set, for each state named, whether the account has nexus there (hasNexus and an optional \
            reason). States not named keep their setting. Use it after registering to collect in a state, or when \
            get_nexus_alerts says a threshold is crossed. Needs an API key; free.",
    },
    ToolSpec {
        name: "get_nexus_alerts",
        operation: "nexusAlerts",
        effect: Effect::Reads,
        description: "The states where the account's recorded sales reach 80% or more of the economic-nexus \
            threshold, each over its own period, with revenue, transaction counts and the threshold. Use it to \
            learn where to register before collecting is required. Needs an API key; free.",
    },
    ToolSpec {
        name: "log_trade",
        operation: "recordTrade",
        effect: Effect::Records,
        description: "Record a buy or sell of a digital asset for the capital-gains tracker. A sell is matched \
            to open lots (FIFO unless a method or lot is given) and the answer has the realised gain, its term, and \
            an estimate of the federal and state tax on it. Needs an API key.",
    },
    ToolSpec {
        name: "list_trades",
        operation: "listTrades",
        effect: Effect::Reads,
        description: "List the account's recorded trades with their matched lots and gains, with filters \
            (asset_symbol, trade_type, since, until) and paging. Needs an API key; free.",
    },
    ToolSpec {
        name: "export_1099_da",
        operation: "export1099Da",
        effect: Effect::Reads,
        description: "A draft Form 1099-DA for one tax year from the recorded trades: one entry per disposition \
            with proceeds, basis, dates and term under the form's box names. Use it to prepare the year's filing. \
            Needs an API key; free.",
    },
    ToolSpec {
        name: "get_rates",
        operation: "rates",
        effect: Effect::Reads,
        description: "The state sales-tax rate of each of the 51 jurisdictions (or one, with state), whether \
            local taxes add to it, and whether SaaS and digital goods are taxable, with effective dates and \
            citations. With explain=true each state also says how it sources a sale and its economic-nexus \
            threshold. For one address's combined rate use get_local_rate. No key needed; free.",
    },
    ToolSpec {
        name: "get_local_rate",
        operation: "localRates",
        effect: Effect::Reads,
        description: "The combined sales-tax rate at one US ZIP code (5 digits or ZIP+4): the state rate and each \
            county, city and district layer with its citation, and whether the ZIP straddles jurisdictions. Use \
            it to show a buyer's rate before a sale. No key needed; free.",
    },
    ToolSpec {
        name: "get_capital_gains_rates",
        operation: "capitalGainsRates",
        effect: Effect::Reads,
        description: "How each state taxes capital gains: its short- and long-term rates, exclusions, \
            deductions and surtaxes, with citations (or one state, with state). No key needed; free.",
    },
    ToolSpec {
        name: "verify_rates",
        operation: "verifyRates",
        effect: Effect::Reads,
        description: "Check a rate table you hold against levy's: send state codes with your rate (and whether \
            digital goods are taxable) and get back which agree and, for each difference, levy's figure and its \
            citation. Nothing is stored about the account. No key needed; free.",
    },
    ToolSpec {
        name: "get_pricing",
        operation: "pricing",
        effect: Effect::Reads,
        description: "levy's plans and prices: each plan's monthly price, allowances, overage prices and the \
            per-call payment options for callers without a plan. Use it to know what a call costs. Free.",
    },
    ToolSpec {
        name: "get_usage",
        operation: "usageStatement",
        effect: Effect::Reads,
        description: "The account's usage for a month (YYYY-MM, this month by default): calls per product, the \
            plan's allowance, overage and its amount in USD. Needs an API key; free.",
    },
    ToolSpec {
        name: "get_optimization_report",
        operation: "optimizationReport",
        effect: Effect::Reads,
        description: "A report on the account's ledger for this year: states near a nexus threshold, answers \
            made conservatively because a fact was missing (and what giving it would change), and tax not \
            collected for want of nexus. Use it to find what to fix. Needs an API key; free.",
    },
    ToolSpec {
        name: "get_agents_guide",
        operation: "agentsGuide",
        effect: Effect::Reads,
        description: "The guide for agents: how to call levy, its operations and examples, limits and errors. \
            Read it once when starting to use levy. Free.",
    },
    ToolSpec {
        name: "check_health",
        operation: "health",
        effect: Effect::Reads,
        description: "Whether the levy service is up and its database answers, with the engine's and the rule \
            set's versions. Free.",
    },
];
