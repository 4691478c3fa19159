//! Secrets: password hashing (argon2), API keys and session tokens (random, stored as SHA-256),
//! and the EIN's encryption at rest (AES-256-GCM).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use base64::Engine as _;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// The neutral live-key prefix of the interface spec.
pub const LIVE_KEY_PREFIX: &str = "svc_live_";
/// Characters of a key kept in clear to list and revoke it.
pub const KEY_PREFIX_LEN: usize = 16;

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut buf);
    hex::encode(buf)
}

/// A new live API key: `svc_live_` and 32 lowercase hex characters.
pub fn new_api_key() -> String {
    format!("{LIVE_KEY_PREFIX}{}", random_hex(16))
}

/// The part of a key that is stored and shown in listings.
pub fn key_prefix(key: &str) -> String {
    key.chars().take(KEY_PREFIX_LEN).collect()
}

/// True when the text has the shape of a live key (it may still be unknown or revoked).
pub fn looks_like_api_key(key: &str) -> bool {
    key.strip_prefix(LIVE_KEY_PREFIX).is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A new dashboard session token (256 random bits).
pub fn new_session_token() -> String {
    format!("sess_{}", random_hex(32))
}

/// An identifier that sorts by creation: `tx_` + the time in ms (12 hex) + a per-process sequence (6 hex)
/// + randomness, so that rows written in the same millisecond still list in the order they were written.
pub fn new_ordered_id(kind: &str, now_ms: i64) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed) & 0xff_ffff;
    format!("{kind}_{:012x}{seq:06x}{}", now_ms.max(0), random_hex(4))
}

/// An opaque identifier with a readable kind prefix: `ent_…`, `tx_…`, `key_…`.
pub fn new_id(kind: &str) -> String {
    format!("{kind}_{}", random_hex(12))
}

pub fn hash_password(password: &str) -> Result<String, String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default().hash_password(password.as_bytes(), &salt).map(|h| h.to_string()).map_err(|e| e.to_string())
}

/// `work` on a blocking thread, off the request threads: argon2 takes tens of milliseconds of CPU by design. Its
/// value, or why the thread failed.
pub async fn off_request_threads<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(work).await.map_err(|e| e.to_string())
}

/// [`hash_password`] off the request threads.
pub async fn hash_password_off_thread(password: String) -> Result<String, String> {
    off_request_threads(move || hash_password(&password)).await?
}

pub fn verify_password(password: &str, stored: &str) -> bool {
    PasswordHash::new(stored).is_ok_and(|h| Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

/// The hash of a password no one knows, made once with the parameters of every stored hash.
fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password(&random_hex(32)).unwrap_or_default())
}

/// Whether `password` opens the account whose hash is `stored`. With no account (an unknown email) the same
/// argon2 work is done against a decoy hash, so the time taken does not tell which emails exist.
pub fn check_login_password(password: &str, stored: Option<&str>) -> bool {
    match stored {
        Some(hash) => verify_password(password, hash),
        None => {
            let _ = verify_password(password, decoy_hash());
            false
        }
    }
}

/// The key that encrypts EINs at rest.
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl DataKey {
    pub fn generate() -> Self {
        let mut k = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut k);
        DataKey(k)
    }

    /// From 64 hex characters (the form written to the key file and accepted from LEVY_DATA_KEY).
    pub fn from_hex(text: &str) -> Result<Self, String> {
        let bytes = hex::decode(text.trim()).map_err(|e| format!("data key is not hex: {e}"))?;
        let k: [u8; 32] = bytes.try_into().map_err(|_| "data key must be 32 bytes (64 hex characters)".to_string())?;
        Ok(DataKey(k))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// base64(nonce ‖ ciphertext ‖ tag), a fresh 96-bit nonce each time.
    pub fn encrypt(&self, plain: &str) -> Result<String, String> {
        let cipher = Aes256Gcm::new_from_slice(&self.0).map_err(|e| e.to_string())?;
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let mut out = nonce.to_vec();
        out.extend(cipher.encrypt(Nonce::from_slice(&nonce), plain.as_bytes()).map_err(|e| e.to_string())?);
        Ok(base64::engine::general_purpose::STANDARD.encode(out))
    }

    pub fn decrypt(&self, sealed: &str) -> Result<String, String> {
        let raw = base64::engine::general_purpose::STANDARD.decode(sealed).map_err(|e| e.to_string())?;
        if raw.len() < 12 {
            return Err("ciphertext too short".into());
        }
        let (nonce, body) = raw.split_at(12);
        let cipher = Aes256Gcm::new_from_slice(&self.0).map_err(|e| e.to_string())?;
        let plain = cipher.decrypt(Nonce::from_slice(nonce), body).map_err(|_| "ciphertext does not open under this key".to_string())?;
        String::from_utf8(plain).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_spec_shape() {
        let k = new_api_key();
        assert!(looks_like_api_key(&k), "{k}");
        assert_eq!(k.len(), 9 + 32);
        assert_eq!(key_prefix(&k).len(), 16);
        assert!(!looks_like_api_key("svc_live_XYZ"));
    }

    #[test]
    fn ein_round_trips_and_is_not_stored_plain() {
        let key = DataKey::generate();
        let sealed = key.encrypt("123456789").unwrap();
        assert!(!sealed.contains("123456789"));
        assert_eq!(key.decrypt(&sealed).unwrap(), "123456789");
        assert!(DataKey::generate().decrypt(&sealed).is_err());
    }

    #[test]
    fn unknown_emails_cost_a_full_verification() {
        // The decoy is a real argon2 hash with the parameters (algorithm, version, memory, time, lanes) of a
        // stored one, so checking against it does the same work; and it opens for no password.
        let stored = hash_password("correct horse").unwrap();
        let params = |h: &str| {
            let h = PasswordHash::new(h).unwrap();
            (h.algorithm.to_string(), h.version, h.params.to_string(), h.salt.map(|s| s.len()), h.hash.map(|o| o.len()))
        };
        assert_eq!(params(decoy_hash()), params(&stored));
        assert_eq!(params(&stored).2, "m=19456,t=2,p=1", "argon2id's OWASP parameters, the argon2 crate's default");
        assert!(!check_login_password("correct horse", None));
        assert!(!check_login_password("", None));
        assert!(check_login_password("correct horse", Some(&stored)));
        assert!(!check_login_password("wrong horse", Some(&stored)));
    }

    #[test]
    fn passwords_verify_only_with_the_right_text() {
        let h = hash_password("correct horse").unwrap();
        assert!(h.starts_with("$argon2"));
        assert!(verify_password("correct horse", &h));
        assert!(!verify_password("wrong horse", &h));
    }
}
