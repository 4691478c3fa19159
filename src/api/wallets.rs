//! POST, GET and DELETE /api/v1/wallets: the wallets whose x402 payments are recorded to the account.

use std::sync::Arc;

use poem_openapi::param::Query;
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::{json, Value};

use super::auth::KeyAuth;
use super::error::ApiError;
use super::payload::{JsonBody, JsonText};
use super::schema::param::{Param, WalletAddress};
use super::schema::wallets::{WalletLinkRequest, WalletLinked, WalletList, WalletUnlinked};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::error_responses;
use crate::payments::x402::{is_address, NETWORKS};
use crate::store::entity::wallet;
use crate::store::wallets::Linked;
use crate::validate::Checker;

pub struct WalletsApi(pub Arc<AppState>);

/// The longest label, in characters.
const MAX_LABEL: usize = 128;

fn view(w: &wallet::Model) -> Value {
    json!({"wallet_address": w.address, "label": w.label, "chain": w.chain, "linked_at": iso(w.created_at)})
}

/// A wallet address as sent, checked; lowercase.
fn address(c: &mut Checker, field: &str, s: &str) -> Option<String> {
    if is_address(s) && s.starts_with("0x") {
        Some(s.to_ascii_lowercase())
    } else {
        c.err(field, format!("`{s}` is not a wallet address: 0x and 40 hex digits expected"));
        None
    }
}

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum LinkWalletResponses {
    /// The wallet is linked to the account (or was, and its label and chain are updated).
    #[oai(status = 200)]
    Ok(JsonText<WalletLinked>),
}

error_responses!(LinkWalletErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field) or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    409 => Conflict: "RESOURCE_CONFLICT: another account has linked this wallet.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum ListWalletsResponses {
    /// The account's linked wallets.
    #[oai(status = 200)]
    Ok(JsonText<WalletList>),
}

error_responses!(ListWalletsErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum UnlinkWalletResponses {
    /// The wallet is unlinked: its next payments are recorded to the wallet's own account.
    #[oai(status = 200)]
    Ok(JsonText<WalletUnlinked>),
}

error_responses!(UnlinkWalletErrors {
    400 => BadRequest: "INVALID_INPUT: wallet_address missing or not an address.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has not linked this wallet.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Wallets")]
impl WalletsApi {
    /// Link a wallet to the account
    ///
    /// x402 payments signed by a linked wallet are recorded to the account (its ledger, 1099 and nexus figures).
    /// A wallet belongs to one account: linking one another account holds is 409. Addresses are compared
    /// case-insensitively and stored lowercase. Linking a wallet again updates its label and chain.
    #[oai(path = "/wallets", method = "post", operation_id = "linkWallet")]
    async fn link(&self, auth: KeyAuth, body: JsonBody<WalletLinkRequest>) -> Result<LinkWalletResponses, LinkWalletErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let value = body.value()?;
        let mut c = Checker::default();
        let Some(obj) = c.object(value, &["wallet_address", "label", "chain"]) else { return Err(ApiError::fields(&c.errors).into()) };
        let wallet_address = c.text(obj, "wallet_address", true, 1, 42).and_then(|a| address(&mut c, "wallet_address", &a));
        let label = c.text(obj, "label", false, 0, MAX_LABEL);
        let chains: Vec<&str> = NETWORKS.iter().map(|n| n.name).collect();
        let chain = c.one_of(obj, "chain", false, &chains).unwrap_or_else(|| "base".into());
        let Some(address) = wallet_address.filter(|_| c.errors.is_empty()) else { return Err(ApiError::fields(&c.errors).into()) };
        let row = wallet::Model { address, entity_id: owner.entity.id, label, chain, created_at: s.clock.now_ms() };
        match s.store.link_wallet(row).await.map_err(ApiError::from)? {
            Linked::Ok(w) => Ok(LinkWalletResponses::Ok(JsonText::value(&json!({"success": true, "wallet": view(&w)})))),
            Linked::HeldElsewhere => Err(ApiError::conflict("another account has linked this wallet").into()),
        }
    }

    /// List the account's linked wallets
    #[oai(path = "/wallets", method = "get", operation_id = "listWallets")]
    async fn list(&self, auth: KeyAuth) -> Result<ListWalletsResponses, ListWalletsErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let wallets = s.store.wallets(&owner.entity.id).await.map_err(ApiError::from)?;
        Ok(ListWalletsResponses::Ok(JsonText::value(&json!({"success": true, "wallets": wallets.iter().map(view).collect::<Vec<_>>()}))))
    }

    /// Unlink a wallet from the account
    #[oai(path = "/wallets", method = "delete", operation_id = "unlinkWallet")]
    async fn unlink(
        &self,
        auth: KeyAuth,
        /// The wallet to unlink: `0x` and 40 hex digits, any case.
        wallet_address: Query<Param<WalletAddress>>,
    ) -> Result<UnlinkWalletResponses, UnlinkWalletErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let mut c = Checker::default();
        let Some(address) = address(&mut c, "wallet_address", &wallet_address.0 .0) else { return Err(ApiError::fields(&c.errors).into()) };
        if !s.store.unlink_wallet(&owner.entity.id, &address).await.map_err(ApiError::from)? {
            return Err(ApiError::not_found(format!("this account has not linked the wallet {address}")).into());
        }
        Ok(UnlinkWalletResponses::Ok(JsonText::value(&json!({"success": true, "wallet_address": address, "unlinked": true}))))
    }
}
