//! Parses condition and outcome text with the pest grammar and lowers the pairs to the AST,
//! resolving fact names and values against the schema as it goes.

use pest::iterators::Pair;
use pest::Parser as _;
use pest_derive::Parser;
use rust_decimal::Decimal;

use super::ast::{Cond, Sourcing, TaxOutcome};
use super::diag::{Diagnostic, Span};
use super::schema::{Fact, FactKind, FACTS};

#[derive(Parser)]
#[grammar = "../../grammar/rules.pest"]
struct RuleGrammar;

type Diags = Vec<Diagnostic>;

/// Where the expression's text starts in its file; pest offsets are added to it.
#[derive(Clone)]
pub struct ExprSource<'a> {
    pub text: &'a str,
    pub span: Span,
}

impl ExprSource<'_> {
    fn at(&self, pair_start: usize, len: usize) -> Span {
        // Offsets are in bytes; columns count characters.
        let col_offset = self.text.get(..pair_start).map_or(pair_start, |s| s.chars().count());
        self.span.inner(col_offset, len)
    }

    fn span_of(&self, pair: &Pair<Rule>) -> Span {
        let s = pair.as_span();
        self.at(s.start(), pair.as_str().chars().count())
    }

    fn syntax_error(&self, e: pest::error::Error<Rule>, what: &str) -> Diagnostic {
        let pos = match e.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((s, _)) => s,
        };
        let expected = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. } => describe_expected(positives),
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        let found = self.text.get(pos..).and_then(|rest| rest.split_whitespace().next()).unwrap_or("end of text");
        Diagnostic::error(
            "R201",
            Some(&self.at(pos, found.chars().count().max(1))),
            format!("cannot read this {what}: expected {expected}, found `{found}`"),
        )
        .with_help(match what {
            "condition" => "a condition looks like `category in {saas, data_processing} and is_b2b`",
            "taxability outcome" => "an outcome looks like `taxable`, `taxable at 3%`, `taxable on 80% of base` or `exempt \"reason\"`",
            _ => "a sourcing outcome is `origin` or `destination`",
        })
    }
}

fn describe_expected(rules: &[Rule]) -> String {
    let mut names: Vec<&str> = rules
        .iter()
        .map(|r| match r {
            Rule::ident | Rule::flag | Rule::membership | Rule::comparison | Rule::presence | Rule::term => "a fact name",
            Rule::value | Rule::set => "a value",
            Rule::kw_and | Rule::kw_or => "`and` or `or`",
            Rule::kw_in => "`in`",
            Rule::kw_set => "`set`",
            Rule::cmp_op => "`==` or `!=`",
            Rule::EOI => "the end of the expression",
            Rule::percent | Rule::number => "a percentage such as `6.25%`",
            Rule::string => "a quoted reason",
            Rule::taxable | Rule::exempt => "`taxable` or `exempt`",
            Rule::origin | Rule::destination => "`origin` or `destination`",
            Rule::rate_clause | Rule::base_clause | Rule::without_local => "`at`, `on` or `without local`",
            _ => "more text",
        })
        .collect();
    names.dedup();
    names.join(" or ")
}

fn internal(src: &ExprSource, what: &str) -> Diagnostic {
    Diagnostic::error("R900", Some(&src.span), format!("internal error: the grammar and the AST disagree about {what}"))
        .with_help("this is a bug in levy, not in the rule file; please report it with this file")
}

/// Parses the text of a `when:` key.
pub fn condition(src: &ExprSource) -> Result<Cond, Diags> {
    let mut pairs = RuleGrammar::parse(Rule::condition, src.text).map_err(|e| vec![src.syntax_error(e, "condition")])?;
    let root = pairs.next().ok_or_else(|| vec![internal(src, "an empty condition")])?;
    let or = root.into_inner().next().ok_or_else(|| vec![internal(src, "a condition without a body")])?;
    let mut diags = vec![];
    let cond = lower_or(src, or, &mut diags);
    if diags.is_empty() {
        cond.ok_or_else(|| vec![internal(src, "a condition")])
    } else {
        Err(diags)
    }
}

fn lower_or(src: &ExprSource, pair: Pair<Rule>, d: &mut Diags) -> Option<Cond> {
    let parts: Vec<Cond> = pair.into_inner().filter(|p| p.as_rule() == Rule::and_expr).filter_map(|p| lower_and(src, p, d)).collect();
    collapse(parts, Cond::Or)
}

fn lower_and(src: &ExprSource, pair: Pair<Rule>, d: &mut Diags) -> Option<Cond> {
    let parts: Vec<Cond> = pair.into_inner().filter(|p| p.as_rule() == Rule::term).filter_map(|p| lower_term(src, p, d)).collect();
    collapse(parts, Cond::And)
}

fn collapse(mut parts: Vec<Cond>, join: fn(Vec<Cond>) -> Cond) -> Option<Cond> {
    match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(join(parts)),
    }
}

fn lower_term(src: &ExprSource, pair: Pair<Rule>, d: &mut Diags) -> Option<Cond> {
    let Some(inner) = pair.into_inner().next() else {
        d.push(internal(src, "an empty term"));
        return None;
    };
    match inner.as_rule() {
        Rule::negated => {
            let term = inner.into_inner().find(|p| p.as_rule() == Rule::term)?;
            lower_term(src, term, d).map(|c| Cond::Not(Box::new(c)))
        }
        Rule::or_expr => lower_or(src, inner, d),
        Rule::membership | Rule::comparison | Rule::presence | Rule::flag => lower_test(src, inner, d),
        other => {
            d.push(internal(src, &format!("term {other:?}")));
            None
        }
    }
}

fn lower_test(src: &ExprSource, pair: Pair<Rule>, d: &mut Diags) -> Option<Cond> {
    let span = src.span_of(&pair);
    let rule = pair.as_rule();
    let mut parts = pair.into_inner();
    let name_pair = parts.next()?;
    let fact = resolve_fact(src, &name_pair, d)?;
    let mut negated = false;
    match rule {
        Rule::membership => {
            let mut values = vec![];
            let mut ok = true;
            for p in parts {
                match p.as_rule() {
                    Rule::not_marker => negated = true,
                    Rule::set => {
                        for v in p.into_inner() {
                            match resolve_value(src, fact, &v, d) {
                                Some(i) if values.contains(&i) => {
                                    d.push(Diagnostic::error(
                                        "R207",
                                        Some(&src.span_of(&v)),
                                        format!("`{}` appears twice in this set", v.as_str()),
                                    ));
                                    ok = false;
                                }
                                Some(i) => values.push(i),
                                None => ok = false,
                            }
                        }
                    }
                    _ => {}
                }
            }
            ok.then_some(Cond::In { fact, values, negated, span })
        }
        Rule::comparison => {
            let op = parts.next()?;
            negated = op.as_str() == "!=";
            let v = parts.next()?;
            let value = resolve_value(src, fact, &v, d)?;
            Some(Cond::Eq { fact, value, negated, span })
        }
        Rule::presence => {
            negated = parts.any(|p| p.as_rule() == Rule::not_marker);
            Some(Cond::Set { fact, negated, span })
        }
        _ => {
            if fact.def().kind != FactKind::Bool {
                d.push(
                    Diagnostic::error(
                        "R206",
                        Some(&src.span_of(&name_pair)),
                        format!("`{}` is not a yes/no fact, so it cannot stand alone", fact.name()),
                    )
                    .with_help(format!(
                        "compare it with a value, e.g. `{} == {}`",
                        fact.name(),
                        fact.def().kind.values().first().unwrap_or(&"x")
                    )),
                );
                return None;
            }
            Some(Cond::Flag { fact, span })
        }
    }
}

fn resolve_fact(src: &ExprSource, pair: &Pair<Rule>, d: &mut Diags) -> Option<Fact> {
    let name = pair.as_str();
    match Fact::by_name(name) {
        Some(f) => Some(f),
        None => {
            d.push(
                Diagnostic::error("R204", Some(&src.span_of(pair)), format!("unknown fact `{name}`"))
                    .suggest(name, FACTS.iter().map(|f| f.name))
                    .with_default_help("the facts a rule may name are listed in rules/README.md"),
            );
            None
        }
    }
}

fn resolve_value(src: &ExprSource, fact: Fact, pair: &Pair<Rule>, d: &mut Diags) -> Option<u16> {
    let text = pair.as_str();
    let kind = fact.def().kind;
    match kind.index_of(text) {
        Some(i) => Some(i),
        None => {
            let allowed = kind.values();
            let shown = if allowed.len() > 12 { format!("{} values", allowed.len()) } else { allowed.join(", ") };
            d.push(
                Diagnostic::error("R205", Some(&src.span_of(pair)), format!("`{text}` is not a value of `{}`", fact.name()))
                    .suggest(text, allowed.iter().copied())
                    .with_default_help(format!("`{}` takes: {shown}", fact.name())),
            );
            None
        }
    }
}

trait DefaultHelp {
    fn with_default_help(self, help: impl Into<String>) -> Self;
}

impl DefaultHelp for Diagnostic {
    fn with_default_help(self, help: impl Into<String>) -> Self {
        if self.help.is_some() {
            self
        } else {
            self.with_help(help)
        }
    }
}

/// Parses the text of a `then:` key in a taxability rule.
pub fn tax_outcome(src: &ExprSource) -> Result<TaxOutcome, Diags> {
    let mut pairs = RuleGrammar::parse(Rule::tax_outcome, src.text).map_err(|e| vec![src.syntax_error(e, "taxability outcome")])?;
    let root = pairs.next().ok_or_else(|| vec![internal(src, "an empty outcome")])?;
    let body = root.into_inner().next().ok_or_else(|| vec![internal(src, "an outcome without a body")])?;
    match body.as_rule() {
        Rule::taxable => {
            let (mut state_rate, mut base_share, mut with_local) = (None, Decimal::ONE, true);
            for clause in body.into_inner() {
                match clause.as_rule() {
                    Rule::rate_clause => state_rate = Some(percent(src, clause)?),
                    Rule::base_clause => {
                        let share = percent(src, clause.clone())?;
                        if share <= Decimal::ZERO || share > Decimal::ONE {
                            return Err(vec![Diagnostic::error(
                                "R208",
                                Some(&src.span_of(&clause)),
                                "the taxed share of the base must be more than 0% and at most 100%",
                            )]);
                        }
                        base_share = share;
                    }
                    Rule::without_local => with_local = false,
                    _ => return Err(vec![internal(src, "a taxable clause")]),
                }
            }
            Ok(TaxOutcome::Taxable { state_rate, base_share, with_local })
        }
        Rule::exempt => {
            let mut kind = "not_taxable".to_string();
            let mut reason = String::new();
            for p in body.into_inner() {
                match p.as_rule() {
                    Rule::ident => kind = p.as_str().to_string(),
                    Rule::string => reason = p.into_inner().next().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    _ => {}
                }
            }
            if reason.trim().is_empty() {
                return Err(vec![Diagnostic::error("R209", Some(&src.span), "an exemption needs a reason")
                    .with_help("write `exempt \"why the sale is exempt\"`")]);
            }
            Ok(TaxOutcome::Exempt { kind, reason })
        }
        _ => Err(vec![internal(src, "an outcome")]),
    }
}

fn percent(src: &ExprSource, clause: Pair<Rule>) -> Result<Decimal, Diags> {
    let p = clause.into_inner().find(|p| p.as_rule() == Rule::percent).ok_or_else(|| vec![internal(src, "a percentage")])?;
    let span = src.span_of(&p);
    let number = p.as_str().trim_end_matches('%');
    parse_percent_number(number)
        .ok_or_else(|| vec![Diagnostic::error("R208", Some(&span), format!("`{}` is not a usable percentage", p.as_str()))])
}

/// `6.25` → 0.0625. Rejects numbers above 100.
pub fn parse_percent_number(number: &str) -> Option<Decimal> {
    let v: Decimal = number.parse().ok()?;
    if v > Decimal::from(100) || v < Decimal::ZERO {
        return None;
    }
    v.checked_div(Decimal::from(100))
}

/// Parses the text of a `then:` key in a sourcing rule.
pub fn sourcing(src: &ExprSource) -> Result<Sourcing, Diags> {
    let mut pairs = RuleGrammar::parse(Rule::sourcing_outcome, src.text).map_err(|e| vec![src.syntax_error(e, "sourcing outcome")])?;
    let root = pairs.next().ok_or_else(|| vec![internal(src, "an empty sourcing outcome")])?;
    match root.into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::origin) => Ok(Sourcing::Origin),
        Some(Rule::destination) => Ok(Sourcing::Destination),
        _ => Err(vec![internal(src, "a sourcing outcome")]),
    }
}
