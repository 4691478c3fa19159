//! The wallet bodies: link request, the wallet as shown, the list and the unlink answer.

use poem_openapi::Object;

use super::param::{ChainName, WalletAddress};

/// Body of POST /api/v1/wallets.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct WalletLinkRequest {
    /// The wallet: `0x` and 40 hex digits, any case (compared case-insensitively).
    pub wallet_address: WalletAddress,
    /// A name for the wallet, up to 128 characters.
    #[oai(validator(max_length = 128))]
    pub label: Option<String>,
    /// The chain it pays on (default `base`).
    pub chain: Option<ChainName>,
}

/// A linked wallet.
#[derive(Object)]
pub struct Wallet {
    /// Lowercase.
    pub wallet_address: String,
    pub label: Option<String>,
    pub chain: String,
    /// When it was first linked (ISO 8601, UTC).
    pub linked_at: String,
}

#[derive(Object)]
pub struct WalletLinked {
    pub success: bool,
    pub wallet: Wallet,
}

#[derive(Object)]
pub struct WalletList {
    pub success: bool,
    /// In the order they were linked.
    pub wallets: Vec<Wallet>,
}

#[derive(Object)]
pub struct WalletUnlinked {
    pub success: bool,
    /// Lowercase.
    pub wallet_address: String,
    pub unlinked: bool,
}
