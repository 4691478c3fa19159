//! The schema check on its own: every kind of problem, reported together, with paths and suggestions.

use poem_openapi::Object;
use serde_json::{json, Value};

use super::*;
use crate::api::schema::calculate::{Role, StateCode};
use crate::api::schema::param::{StateMap, WalletAddress};

#[derive(Object)]
#[oai(deny_unknown_fields)]
struct Line {
    #[oai(validator(min_length = 1, max_length = 3))]
    code: String,
    count: Option<u32>,
}

#[derive(Object)]
#[oai(deny_unknown_fields)]
struct Flag {
    #[oai(rename = "hasFlag")]
    has_flag: bool,
}

#[derive(Object)]
#[oai(deny_unknown_fields)]
struct Order {
    #[oai(validator(max_length = 5))]
    name: String,
    label: Option<String>,
    role: Option<Role>,
    state: Option<StateCode>,
    #[oai(validator(minimum(value = "0", exclusive), maximum(value = "1000")))]
    amount: f64,
    #[oai(validator(max_items = 3))]
    lines: Vec<Line>,
    first: Option<Line>,
    paid: Option<bool>,
    wallet: Option<WalletAddress>,
    flags: Option<StateMap<Flag>>,
    #[oai(validator(minimum(value = "2020"), maximum(value = "2030")))]
    year: Option<i64>,
}

fn problems(mut v: Value) -> Vec<String> {
    contract::<Order>().check(&mut v).iter().map(ToString::to_string).collect()
}

fn good() -> Value {
    json!({"name": "a", "amount": 1, "lines": [{"code": "x"}]})
}

#[test]
fn a_good_body_parses_into_its_type() {
    let Ok(order) = parse::<Order>(json!({
        "name": "ab", "label": null, "role": "buyer", "state": "TX", "amount": "12.50", "lines": [{"code": "abc", "count": 2}],
        "paid": true, "wallet": "0x00000000000000000000000000000000000000aB", "flags": {"tx": {"hasFlag": true}}, "year": 2026
    })) else {
        panic!("a good body is refused")
    };
    assert_eq!(order.amount, 12.5, "a decimal string reads as the number it names");
    assert_eq!(order.label, None, "null is absent");
    assert_eq!(order.role.map(|r| r.0), Some("buyer".to_string()));
    assert_eq!(order.lines[0].count, Some(2));
    assert_eq!(order.wallet.map(|w| w.text().to_string()), Some("0x00000000000000000000000000000000000000aB".to_string()));
    assert!(order.flags.is_some_and(|f| f.0["tx"].has_flag));
}

#[test]
fn every_problem_is_reported_at_once_with_its_path() {
    let got = problems(json!({
        "nme": "x",
        "label": 5,
        "role": "byer",
        "state": "XX",
        "amount": 0,
        "lines": [{"code": "abcd"}, {"code": "", "count": -1, "extra": 1}, 7],
        "first": {"count": 1.5},
        "paid": "yes",
        "wallet": "0x12",
        "flags": {"txx": {"hasFlag": true}, "wa": {}},
        "year": 2019,
    }));
    let want = [
        "nme: unknown field (did you mean `name`?)",
        "name: is required",
        "label: must be a string",
        "role: `byer` is not one of: seller, buyer; did you mean `buyer`?",
        "state: `XX` is not a two-letter US state code or DC",
        "amount: must be greater than 0",
        "lines[0].code: must be at most 3 characters",
        "lines[1].extra: unknown field",
        "lines[1].code: must not be empty",
        "lines[1].count: must be at least 0",
        "lines[2]: must be an object",
        "first.code: is required",
        "first.count: must be a whole number",
        "paid: must be true or false",
        "wallet: `0x12` is not a wallet address: 0x and 40 hex digits expected",
        "flags.txx: `txx` is not a two-letter US state code or DC (did you mean `TX`?)",
        "flags.wa.hasFlag: is required",
        "year: must be at least 2020",
    ];
    assert_eq!(got, want);
}

#[test]
fn bounds_lengths_and_counts() {
    let with = |k: &str, v: Value| {
        let mut body = good();
        body[k] = v;
        problems(body)
    };
    assert_eq!(with("amount", json!(1000.01)), ["amount: must be at most 1000"]);
    assert_eq!(with("amount", json!("1e400")), ["amount: `1e400` is not a finite decimal number"]);
    assert_eq!(with("amount", json!([])), ["amount: must be a number"]);
    assert_eq!(with("name", json!("ééééé")), Vec::<String>::new(), "lengths count characters, not bytes");
    assert_eq!(with("name", json!("éééééé")), ["name: must be at most 5 characters"]);
    assert_eq!(with("lines", json!([{"code": "a"}, {"code": "a"}, {"code": "a"}, {"code": "a"}])), ["lines: must hold at most 3 items"]);
    assert_eq!(with("lines", json!({})), ["lines: must be an array"]);
    assert_eq!(with("year", json!("2026")), ["year: must be a whole number"]);
    assert_eq!(problems(json!([1])), ["body: must be a JSON object"]);
    assert_eq!(
        problems(json!({"name": null, "amount": null, "lines": null})),
        ["name: is required", "amount: is required", "lines: is required"]
    );
}

#[test]
fn an_error_is_invalid_input_naming_each_field() {
    let Err(e) = parse::<Order>(json!({"amount": 1, "lines": []})) else { panic!("a body without its name parses") };
    assert_eq!(e.status.as_u16(), 400);
    assert!(matches!(e.code, crate::api::error::ErrorCode::InvalidInput));
    assert_eq!(e.errors, ["name: is required"]);
}
