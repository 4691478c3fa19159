//! The operator's partner commands: create a partner (its key and webhook secret are printed once), list them,
//! deactivate or reactivate one, rotate its webhook secret (the old one verifies for a grace period), change its terms.

use serde_json::json;

use crate::clock::iso;
use crate::partners::{self as terms, DEFAULT_RATE_LIMIT_PER_MINUTE, SECRET_GRACE_MS};
use crate::security::{key_prefix, new_id, sha256_hex};
use crate::store::entity::partner;
use crate::store::{Store, StoreError};

/// A partner's terms as the command line gives them (text, checked here).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Terms {
    /// The revenue share, in percent (0 to 100, at most 2 decimal places).
    #[arg(long)]
    pub revshare: Option<String>,
    /// The wholesale price of a billable call, in USD (at most 6 decimal places).
    #[arg(long)]
    pub wholesale_per_call: Option<String>,
    /// Calls per provisioned user per calendar month that are not billed (default 0).
    #[arg(long)]
    pub free_calls_per_user: Option<i64>,
    /// Partner-route calls per minute, `N/min` (default 600/min).
    #[arg(long)]
    pub rate_limit: Option<String>,
}

/// `levy partners create --slug S --name N --revshare PCT --wholesale-per-call USD [--free-calls-per-user N]
/// [--rate-limit N/min]`: the partner key and the webhook signing secret, shown this once.
pub async fn create(store: &Store, slug: &str, name: &str, t: &Terms, now_ms: i64) -> Result<String, String> {
    if !terms::valid_slug(slug) {
        return Err(format!("`{slug}` is not a slug: 2 to 64 of a-z, 0-9 and -, not starting with -"));
    }
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err("the name is 1 to 200 characters".into());
    }
    let revshare = terms::parse_revshare(t.revshare.as_deref().ok_or("--revshare PCT is required")?)?;
    let wholesale = terms::parse_wholesale(t.wholesale_per_call.as_deref().ok_or("--wholesale-per-call USD is required")?)?;
    let free = t.free_calls_per_user.unwrap_or(0);
    if free < 0 {
        return Err("--free-calls-per-user is 0 or more".into());
    }
    let rate = t.rate_limit.as_deref().map(terms::parse_rate_limit).transpose()?.unwrap_or(DEFAULT_RATE_LIMIT_PER_MINUTE);
    let key = terms::new_partner_key();
    let secret = terms::new_webhook_secret();
    let row = partner::Model {
        id: new_id("ptn"),
        slug: slug.to_string(),
        name: name.to_string(),
        key_hash: sha256_hex(key.as_bytes()),
        key_prefix: key_prefix(&key),
        secret: secret.clone(),
        previous_secret: None,
        previous_secret_until: None,
        revshare_pct: revshare.to_string(),
        wholesale_per_call: wholesale.to_string(),
        free_calls_per_user: free,
        rate_limit_per_minute: rate,
        active: true,
        created_at: now_ms,
    };
    match store.create_partner(row.clone()).await {
        Ok(()) => {}
        Err(StoreError::Conflict(_)) => return Err(format!("a partner with the slug {slug} exists")),
        Err(e) => return Err(e.to_string()),
    }
    Ok(format!(
        "ok: partner {slug} ({}) created: revshare {revshare}%, wholesale {wholesale} USD per call, {free} free calls per user per month, \
         {rate} calls per minute\npartner key (shown once): {key}\nwebhook signing secret (shown once): {secret}",
        row.id
    ))
}

/// `levy partners list [--json]`: every partner, its terms and state (never its key or secrets).
pub async fn list(store: &Store, json: bool) -> Result<String, String> {
    let rows = store.partners().await.map_err(|e| e.to_string())?;
    if json {
        let out: Vec<_> = rows
            .iter()
            .map(|p| {
                json!({
                    "id": p.id, "slug": p.slug, "name": p.name, "key_prefix": p.key_prefix, "active": p.active,
                    "revshare_pct": p.revshare_pct, "wholesale_per_call": p.wholesale_per_call,
                    "free_calls_per_user": p.free_calls_per_user, "rate_limit_per_minute": p.rate_limit_per_minute,
                    "previous_secret_valid_until": p.previous_secret_until.map(iso), "created_at": iso(p.created_at),
                })
            })
            .collect();
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut text = format!(
        "{:<24} {:<18} {:<8} {:>9} {:>12} {:>6} {:>10}\n",
        "slug", "key prefix", "active", "revshare", "wholesale", "free", "rate/min"
    );
    for p in &rows {
        text.push_str(&format!(
            "{:<24} {:<18} {:<8} {:>9} {:>12} {:>6} {:>10}\n",
            p.slug, p.key_prefix, p.active, p.revshare_pct, p.wholesale_per_call, p.free_calls_per_user, p.rate_limit_per_minute
        ));
    }
    text.push_str(&format!("{} partners", rows.len()));
    Ok(text)
}

/// `levy partners deactivate SLUG` / `reactivate SLUG`: a deactivated partner gets 403 on every partner route.
pub async fn set_active(store: &Store, slug: &str, active: bool) -> Result<String, String> {
    match store.update_partner(slug, |p| p.active = active).await.map_err(|e| e.to_string())? {
        Some(_) => Ok(format!("ok: partner {slug} is {}", if active { "active" } else { "deactivated" })),
        None => Err(format!("no partner has the slug {slug}")),
    }
}

/// `levy partners rotate-secret SLUG`: a new webhook signing secret, shown once; the old one still verifies for 24
/// hours.
pub async fn rotate_secret(store: &Store, slug: &str, now_ms: i64) -> Result<String, String> {
    let secret = terms::new_webhook_secret();
    let until = now_ms + SECRET_GRACE_MS;
    let new = secret.clone();
    let changed = store
        .update_partner(slug, move |p| {
            p.previous_secret = Some(std::mem::replace(&mut p.secret, new));
            p.previous_secret_until = Some(until);
        })
        .await
        .map_err(|e| e.to_string())?;
    match changed {
        Some(_) => Ok(format!(
            "ok: partner {slug} has a new webhook signing secret; the previous one verifies until {}\nwebhook signing secret (shown once): {secret}",
            iso(until)
        )),
        None => Err(format!("no partner has the slug {slug}")),
    }
}

/// `levy partners set-terms SLUG [--revshare PCT] [--wholesale-per-call USD] [--free-calls-per-user N] [--rate-limit
/// N/min]`: from now on. A revenue share already locked by an account's first upgrade does not change.
pub async fn set_terms(store: &Store, slug: &str, t: &Terms) -> Result<String, String> {
    let revshare = t.revshare.as_deref().map(terms::parse_revshare).transpose()?;
    let wholesale = t.wholesale_per_call.as_deref().map(terms::parse_wholesale).transpose()?;
    let rate = t.rate_limit.as_deref().map(terms::parse_rate_limit).transpose()?;
    if t.free_calls_per_user.is_some_and(|n| n < 0) {
        return Err("--free-calls-per-user is 0 or more".into());
    }
    let free = t.free_calls_per_user;
    let changed = store
        .update_partner(slug, move |p| {
            if let Some(r) = revshare {
                p.revshare_pct = r.to_string();
            }
            if let Some(w) = wholesale {
                p.wholesale_per_call = w.to_string();
            }
            if let Some(n) = free {
                p.free_calls_per_user = n;
            }
            if let Some(r) = rate {
                p.rate_limit_per_minute = r;
            }
        })
        .await
        .map_err(|e| e.to_string())?;
    match changed {
        Some(p) => Ok(format!(
            "ok: partner {slug}: revshare {}%, wholesale {} USD per call, {} free calls per user per month, {} calls per minute",
            p.revshare_pct, p.wholesale_per_call, p.free_calls_per_user, p.rate_limit_per_minute
        )),
        None => Err(format!("no partner has the slug {slug}")),
    }
}
