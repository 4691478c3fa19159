//! POST, GET and DELETE /api/v1/wallets: the wallets whose x402 payments are recorded to the account.

use std::sync::Arc;

use poem_openapi::param::Query;
use poem_openapi::OpenApi;

use super::auth::KeyAuth;
use super::error::ApiError;
use super::payload::{Body, Json};
use super::schema::param::{Param, WalletAddress};
use super::schema::wallets::{Wallet, WalletLinkRequest, WalletLinked, WalletList, WalletUnlinked};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::payments::x402::is_address;
use crate::store::entity::wallet;
use crate::store::wallets::Linked;
use crate::{error_responses, ok_responses};

pub struct WalletsApi(pub Arc<AppState>);

fn view(w: wallet::Model) -> Wallet {
    Wallet { wallet_address: w.address, label: w.label, chain: w.chain, linked_at: iso(w.created_at) }
}

/// A wallet address as sent (a query parameter is not checked by the body's schema), checked; lowercase.
fn address(s: &str) -> Result<String, ApiError> {
    if is_address(s) && s.starts_with("0x") {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(ApiError::field("wallet_address", format!("`{s}` is not a wallet address: 0x and 40 hex digits expected")))
    }
}

ok_responses!(LinkWalletResponses {
    200 => Ok(Json<WalletLinked>): "The wallet is linked to the account (or was, and its label and chain are updated).",
});

error_responses!(LinkWalletErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field) or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    409 => Conflict: "RESOURCE_CONFLICT: another account has linked this wallet.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(ListWalletsResponses {
    200 => Ok(Json<WalletList>): "The account's linked wallets.",
});

error_responses!(ListWalletsErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(UnlinkWalletResponses {
    200 => Ok(Json<WalletUnlinked>): "The wallet is unlinked: its next payments are recorded to the wallet's own account.",
});

error_responses!(UnlinkWalletErrors {
    400 => BadRequest: "INVALID_INPUT: wallet_address missing or not an address.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has not linked this wallet.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Wallets")]
impl WalletsApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LINK_WALLET_EXAMPLE: &'static str = r#"{
        "body": {"wallet_address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "label": "treasury"},
        "status": 200,
        "expect": {"/wallet/wallet_address": "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", "/wallet/chain": "base"}
    }"#;

    /// Link a wallet to the account
    ///
    /// x402 payments signed by a linked wallet are recorded to the account (its ledger, 1099 and nexus figures).
    /// A wallet belongs to one account: linking one another account holds is 409. Addresses are compared
    /// case-insensitively and stored lowercase. Linking a wallet again updates its label and chain.
    #[oai(
        path = "/wallets",
        method = "post",
        operation_id = "linkWallet",
        code_sample(lang = "json", label = "example", source = "Self::LINK_WALLET_EXAMPLE")
    )]
    async fn link(&self, auth: KeyAuth, body: Body<WalletLinkRequest>) -> Result<LinkWalletResponses, LinkWalletErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let req = body.parse()?;
        let address = req.wallet_address.text().to_ascii_lowercase();
        let chain = req.chain.map_or_else(|| "base".to_string(), |c| c.text().to_string());
        let row = wallet::Model { address, entity_id: owner.entity.id, label: req.label, chain, created_at: s.clock.now_ms() };
        match s.store.link_wallet(row).await.map_err(ApiError::from)? {
            Linked::Ok(w) => Ok(LinkWalletResponses::Ok(Json(WalletLinked { success: true, wallet: view(w) }))),
            Linked::HeldElsewhere => Err(ApiError::conflict("another account has linked this wallet").into()),
        }
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LIST_WALLETS_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/wallets/0/label": "treasury"}
    }"#;

    /// List the account's linked wallets
    #[oai(
        path = "/wallets",
        method = "get",
        operation_id = "listWallets",
        code_sample(lang = "json", label = "example", source = "Self::LIST_WALLETS_EXAMPLE")
    )]
    async fn list(&self, auth: KeyAuth) -> Result<ListWalletsResponses, ListWalletsErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let wallets = s.store.wallets(&owner.entity.id).await.map_err(ApiError::from)?;
        Ok(ListWalletsResponses::Ok(Json(WalletList { success: true, wallets: wallets.into_iter().map(view).collect() })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const UNLINK_WALLET_EXAMPLE: &'static str = r#"{
        "query": "wallet_address=0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "status": 200,
        "expect": {"/unlinked": true}
    }"#;

    /// Unlink a wallet from the account
    #[oai(
        path = "/wallets",
        method = "delete",
        operation_id = "unlinkWallet",
        code_sample(lang = "json", label = "example", source = "Self::UNLINK_WALLET_EXAMPLE")
    )]
    async fn unlink(
        &self,
        auth: KeyAuth,
        /// The wallet to unlink: `0x` and 40 hex digits, any case.
        wallet_address: Query<Param<WalletAddress>>,
    ) -> Result<UnlinkWalletResponses, UnlinkWalletErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let address = address(&wallet_address.0 .0)?;
        if !s.store.unlink_wallet(&owner.entity.id, &address).await.map_err(ApiError::from)? {
            return Err(ApiError::not_found(format!("this account has not linked the wallet {address}")).into());
        }
        Ok(UnlinkWalletResponses::Ok(Json(WalletUnlinked { success: true, wallet_address: address, unlinked: true })))
    }
}
