//! PostgreSQL: the ledger batch's hot statements, prepared once per connection with SQL `PREPARE` and run in the
//! batch's scripts as `EXECUTE`s (`script::Sql::prepared`).
//!
//! A script goes to PostgreSQL as one simple query, which takes no parameters, so PostgreSQL parsed and planned
//! every statement of every batch anew, values written into the text: the first script of a batch of one took
//! about 0.4 ms of server time (`log_min_duration_statement`), against about 0.17 ms for the same statements
//! prepared and executed (pgbench). Prepared here, a statement's values are arrays (`unnest`, `= ANY`), so one
//! text serves any number of rows, and an `EXECUTE` costs PostgreSQL the parse of its literals.
//!
//! Statements are prepared on first need, not when a connection opens: a connection opened before the
//! migrations ran could not prepare them. A script that begins a transaction and meets a connection without them
//! (SQLSTATE 26000), or with them prepared against columns a migration has changed since (0A000), is rolled back
//! and run again after they are prepared (`ScriptConn::run`). The batch's first script always holds one, so its
//! second finds them.

use std::sync::LazyLock;

use sea_orm::sqlx::{self, Executor, PgConnection};

/// An adding upsert (`store::adding_upserts`): its table, its columns with their PostgreSQL types (each as an
/// array's element), of which the first `keys` are the conflict key and the next `added` are added to the stored
/// ones, and whether it returns the rows as stored.
pub struct Upsert {
    pub table: &'static str,
    pub columns: &'static [(&'static str, &'static str)],
    pub keys: usize,
    pub added: usize,
    pub returning: bool,
}

impl Upsert {
    pub fn name(&self) -> String {
        format!("levy_add_{}", self.table)
    }

    /// `ON CONFLICT (keys) DO UPDATE SET` each added column to the stored value plus the new, and `RETURNING *`
    /// if the upsert returns its rows: what ends both its `VALUES` form and its prepared form.
    pub fn conflict(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(c, _)| *c).collect();
        let sums: Vec<String> = names[self.keys..self.keys + self.added]
            .iter()
            .map(|c| format!("\"{c}\" = \"{}\".\"{c}\" + \"excluded\".\"{c}\"", self.table))
            .collect();
        let mut text = format!("ON CONFLICT ({}) DO UPDATE SET {}", super::quoted(&names[..self.keys]), sums.join(", "));
        if self.returning {
            text.push_str(" RETURNING *");
        }
        text
    }

    /// `(types) AS INSERT ... SELECT ... FROM unnest(...)`, rows inserted in the order of the arrays (the callers
    /// sort them by key, so that concurrent writers take their rows in one order).
    fn prepare(&self) -> String {
        let names = super::quoted(&self.columns.iter().map(|(c, _)| *c).collect::<Vec<_>>());
        let types: Vec<String> = self.columns.iter().map(|(_, t)| format!("{t}[]")).collect();
        let params: Vec<String> = (1..=self.columns.len()).map(|i| format!("${i}")).collect();
        format!(
            r#"({}) AS INSERT INTO "{}" ({names}) SELECT {names} FROM unnest({}) WITH ORDINALITY AS "v" ({names}, "n") ORDER BY "n" {}"#,
            types.join(", "),
            self.table,
            params.join(", "),
            self.conflict(),
        )
    }
}

/// A query prepared as `PREPARE name params AS body`.
pub struct Query {
    pub name: &'static str,
    pub params: &'static str,
    pub body: &'static str,
}

/// `Store::key_owners_sql` prepared.
pub const KEY_OWNERS: Query = Query {
    name: "levy_key_owners",
    params: "(text[])",
    body: r#"SELECT "k"."id" AS "key_id", "e".* FROM "api_keys" AS "k" JOIN "entities" AS "e" ON "e"."id" = "k"."entity_id" WHERE "k"."id" = ANY($1) AND "k"."revoked_at" IS NULL"#,
};

/// The 1099 totals: per (account, counterparty, tax year), the payments' sum and count; returned as stored.
pub const VENDOR_YTD: Upsert = Upsert {
    table: "vendor_ytd",
    columns: &[("entity_id", "text"), ("counterparty_id", "text"), ("tax_year", "int4"), ("total_micros", "int8"), ("payments", "int8")],
    keys: 3,
    added: 2,
    returning: true,
};

/// The revenue nexus counts: per (account, state, month), the sales' sum and count.
pub const STATE_REVENUE: Upsert = Upsert {
    table: "state_revenue",
    columns: &[("entity_id", "text"), ("state", "text"), ("month", "int4"), ("sales_micros", "int8"), ("tx_count", "int8")],
    keys: 3,
    added: 2,
    returning: false,
};

/// `Store::state_revenue_sql` prepared.
pub const STATE_REVENUE_FROM: Query = Query {
    name: "levy_state_revenue_from",
    params: "(text[], int4)",
    body: r#"SELECT * FROM "state_revenue" WHERE "entity_id" = ANY($1) AND "month" >= $2"#,
};

/// The limiter's windows: a count added per (name, window start); returned as stored.
pub const COUNTERS: Upsert = Upsert {
    table: "counters",
    columns: &[("name", "text"), ("window_start", "int8"), ("count", "int8"), ("expires_at", "int8")],
    keys: 2,
    added: 1,
    returning: true,
};

/// `Store::nexus_states_sql` prepared.
pub const NEXUS_STATES: Query =
    Query { name: "levy_nexus_states", params: "(text[])", body: r#"SELECT * FROM "nexus_states" WHERE "entity_id" = ANY($1)"# };

/// Every statement prepared: (name, the text after `PREPARE "name"`).
fn statements() -> &'static [(String, String)] {
    static ALL: LazyLock<Vec<(String, String)>> = LazyLock::new(|| {
        let upserts = [&COUNTERS, &VENDOR_YTD, &STATE_REVENUE];
        let queries = [&KEY_OWNERS, &NEXUS_STATES, &STATE_REVENUE_FROM];
        let mut all: Vec<(String, String)> = upserts.iter().map(|u| (u.name(), u.prepare())).collect();
        all.extend(queries.iter().map(|q| (q.name.to_string(), format!("{} AS {}", q.params, q.body))));
        all
    });
    &ALL
}

/// Whether a script failed because the connection lacks the statements, or holds them prepared against a table
/// that has changed since.
pub(super) fn missing(e: &sqlx::Error) -> bool {
    e.as_database_error().and_then(|d| d.code()).is_some_and(|c| c == "26000" || c == "0A000")
}

/// Prepares every statement on the connection (outside any transaction), replacing those it holds already.
pub async fn prepare(conn: &mut PgConnection) -> Result<(), sqlx::Error> {
    let held: Vec<String> =
        sqlx::query_scalar("SELECT name FROM pg_prepared_statements WHERE name LIKE 'levy\\_%'").fetch_all(&mut *conn).await?;
    let mut sql = String::new();
    for (name, text) in statements() {
        if held.contains(name) {
            sql.push_str(&format!("DEALLOCATE \"{name}\";\n"));
        }
        sql.push_str(&format!("PREPARE \"{name}\" {text};\n"));
    }
    conn.execute(sqlx::raw_sql(&sql)).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upsert_is_prepared_from_its_columns() {
        let text = STATE_REVENUE.prepare();
        assert_eq!(
            text,
            r#"(text[], text[], int4[], int8[], int8[]) AS INSERT INTO "state_revenue" ("entity_id", "state", "month", "sales_micros", "tx_count") SELECT "entity_id", "state", "month", "sales_micros", "tx_count" FROM unnest($1, $2, $3, $4, $5) WITH ORDINALITY AS "v" ("entity_id", "state", "month", "sales_micros", "tx_count", "n") ORDER BY "n" ON CONFLICT ("entity_id", "state", "month") DO UPDATE SET "sales_micros" = "state_revenue"."sales_micros" + "excluded"."sales_micros", "tx_count" = "state_revenue"."tx_count" + "excluded"."tx_count""#
        );
        assert!(COUNTERS.prepare().ends_with(r#""count" = "counters"."count" + "excluded"."count" RETURNING *"#));
        // Names are distinct.
        let names: std::collections::HashSet<&String> = statements().iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), statements().len());
    }
}
