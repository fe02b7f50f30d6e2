//! The sealed file format of the credential store: Argon2id over the passphrase, then
//! XChaCha20-Poly1305 over the JSON payload with the whole header as associated data.
//!
//! Primitives come from RustCrypto's `argon2` and `chacha20poly1305` crates; this file only
//! lays out bytes. Format 1, all integers little-endian:
//!
//! | offset | bytes | field |
//! | --- | --- | --- |
//! | 0 | 14 | magic `crewmux-creds\n` |
//! | 14 | 1 | format version (1) |
//! | 15 | 4+4+4 | Argon2id memory (KiB), passes, lanes |
//! | 27 | 16 | salt |
//! | 43 | 32 | passphrase check: bytes 32..64 of the Argon2id output |
//! | 75 | 24 | nonce (random per write) |
//! | 99 | 4 | ciphertext length, bytes (tag included) |
//! | 103 | n | ciphertext of the JSON payload + 16-byte tag |
//!
//! The AEAD key is bytes 0..32 of the same Argon2id output. The check value tells a wrong
//! passphrase from a modified file; guessing a passphrase against it costs one Argon2id run,
//! as against the ciphertext. The recorded length tells a truncated file from a tampered one.
#![allow(
    clippy::expect_used,
    reason = "constant KDF parameters and lengths fixed by the file format"
)]

use argon2::{Algorithm, Argon2, Params, Version};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

const MAGIC: &[u8; 14] = b"crewmux-creds\n";
/// The newest format this build reads and the one it writes.
pub const FORMAT_VERSION: u8 = 1;
const SALT_LEN: usize = 16;
const CHECK_LEN: usize = 32;
const NONCE_LEN: usize = 24;
const TAG_LEN: usize = 16;
const HEADER_LEN: usize = 14 + 1 + 12 + SALT_LEN + CHECK_LEN + NONCE_LEN + 4;

/// Argon2id cost of a new store: RFC 9106 §4's second recommended setting (64 MiB, 3 passes,
/// 4 lanes). About 0.2–0.4 s per derivation on a current x86 core.
pub const DEFAULT_KDF: KdfParams = KdfParams {
    memory_kib: 64 * 1024,
    passes: 3,
    lanes: 4,
};

/// Argon2id parameters as stored in the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KdfParams {
    pub memory_kib: u32,
    pub passes: u32,
    pub lanes: u32,
}

impl KdfParams {
    /// Accepted when reading: 8 KiB per lane up to 1 GiB, 1..=16 passes, 1..=16 lanes, so a
    /// modified header cannot make the reader allocate or spin without bound.
    fn plausible(&self) -> bool {
        (1..=16).contains(&self.lanes)
            && (1..=16).contains(&self.passes)
            && self.memory_kib >= 8 * self.lanes
            && self.memory_kib <= 1024 * 1024
    }
}

/// Why a store file could not be opened. Each reads as one line after the file's path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("not a crewmux credential store (unknown leading bytes)")]
    NotAStore,
    #[error(
        "written by a newer crewmux (store format {0}, this build reads up to \
         {FORMAT_VERSION}); upgrade crewmux"
    )]
    NewerFormat(u8),
    #[error("truncated: {found} bytes where {expected} were written; restore it from a backup")]
    Truncated { expected: usize, found: usize },
    #[error("damaged: {0}; restore it from a backup")]
    Damaged(String),
    #[error(
        "wrong passphrase (check CREWMUX_CREDENTIAL_PASSPHRASE or what was typed at the \
         prompt), or its header was modified"
    )]
    WrongPassphrase,
    #[error("modified since it was written (authentication failed); restore it from a backup")]
    Tampered,
}

/// A key derived from the passphrase for one salt and cost, kept so later writes in the same
/// process need no second Argon2id run. Zeroed on drop.
pub struct SealKey {
    params: KdfParams,
    salt: [u8; SALT_LEN],
    key: Zeroizing<[u8; 32]>,
    check: [u8; CHECK_LEN],
}

impl SealKey {
    /// Derive the key for a new store: fresh random salt, [`DEFAULT_KDF`] cost.
    pub fn fresh(passphrase: &SecretString) -> Self {
        let mut salt = [0u8; SALT_LEN];
        rand::rngs::OsRng.fill_bytes(&mut salt);
        Self::derive(passphrase, DEFAULT_KDF, salt).expect("DEFAULT_KDF is within Argon2's limits")
    }

    fn derive(
        passphrase: &SecretString,
        params: KdfParams,
        salt: [u8; SALT_LEN],
    ) -> Result<Self, SealError> {
        let argon_params = Params::new(params.memory_kib, params.passes, params.lanes, Some(64))
            .map_err(|e| SealError::Damaged(format!("KDF parameters refused: {e}")))?;
        let mut out = Zeroizing::new([0u8; 64]);
        Argon2::new(Algorithm::Argon2id, Version::V0x13, argon_params)
            .hash_password_into(passphrase.expose_secret().as_bytes(), &salt, &mut *out)
            .map_err(|e| SealError::Damaged(format!("key derivation failed: {e}")))?;
        let mut key = Zeroizing::new([0u8; 32]);
        key.copy_from_slice(&out[..32]);
        let mut check = [0u8; CHECK_LEN];
        check.copy_from_slice(&out[32..]);
        Ok(Self {
            params,
            salt,
            key,
            check,
        })
    }
}

struct Header<'a> {
    params: KdfParams,
    salt: [u8; SALT_LEN],
    check: [u8; CHECK_LEN],
    nonce: [u8; NONCE_LEN],
    aad: &'a [u8],
    ciphertext: &'a [u8],
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn parse(bytes: &[u8]) -> Result<Header<'_>, SealError> {
    if bytes.len() < MAGIC.len() + 1 {
        if MAGIC.starts_with(bytes) {
            return Err(SealError::Truncated {
                expected: HEADER_LEN + TAG_LEN,
                found: bytes.len(),
            });
        }
        return Err(SealError::NotAStore);
    }
    if &bytes[..MAGIC.len()] != MAGIC {
        return Err(SealError::NotAStore);
    }
    match bytes[MAGIC.len()] {
        0 => return Err(SealError::Damaged("format version 0".into())),
        v if v > FORMAT_VERSION => return Err(SealError::NewerFormat(v)),
        _ => {}
    }
    if bytes.len() < HEADER_LEN {
        return Err(SealError::Truncated {
            expected: HEADER_LEN + TAG_LEN,
            found: bytes.len(),
        });
    }
    let params = KdfParams {
        memory_kib: u32_at(bytes, 15),
        passes: u32_at(bytes, 19),
        lanes: u32_at(bytes, 23),
    };
    if !params.plausible() {
        return Err(SealError::Damaged(format!(
            "implausible KDF cost {params:?}"
        )));
    }
    let ct_len = u32_at(bytes, HEADER_LEN - 4) as usize;
    let expected = HEADER_LEN + ct_len;
    if bytes.len() < expected || ct_len < TAG_LEN {
        return Err(SealError::Truncated {
            expected: expected.max(HEADER_LEN + TAG_LEN),
            found: bytes.len(),
        });
    }
    if bytes.len() > expected {
        return Err(SealError::Damaged(format!(
            "{} bytes after the recorded end",
            bytes.len() - expected
        )));
    }
    let mut salt = [0u8; SALT_LEN];
    salt.copy_from_slice(&bytes[27..43]);
    let mut check = [0u8; CHECK_LEN];
    check.copy_from_slice(&bytes[43..75]);
    let mut nonce = [0u8; NONCE_LEN];
    nonce.copy_from_slice(&bytes[75..99]);
    Ok(Header {
        params,
        salt,
        check,
        nonce,
        aad: &bytes[..HEADER_LEN],
        ciphertext: &bytes[HEADER_LEN..],
    })
}

/// Open a sealed file. `cached` is reused when its salt and cost match the header (no
/// Argon2id run); otherwise the key is derived from `passphrase`.
///
/// Returns the plaintext (zeroed on drop) and the key to seal the next write with.
///
/// # Errors
/// Every [`SealError`]; the check runs before any costly step except Argon2id.
pub fn open(
    bytes: &[u8],
    passphrase: &SecretString,
    cached: Option<SealKey>,
) -> Result<(Zeroizing<Vec<u8>>, SealKey), SealError> {
    let header = parse(bytes)?;
    let key = match cached {
        Some(k) if k.params == header.params && k.salt == header.salt => k,
        _ => SealKey::derive(passphrase, header.params, header.salt)?,
    };
    if !bool::from(key.check.ct_eq(&header.check)) {
        return Err(SealError::WrongPassphrase);
    }
    let cipher = XChaCha20Poly1305::new((&*key.key).into());
    let plaintext = cipher
        .decrypt(
            XNonce::from_slice(&header.nonce),
            Payload {
                msg: header.ciphertext,
                aad: header.aad,
            },
        )
        .map_err(|_| SealError::Tampered)?;
    Ok((Zeroizing::new(plaintext), key))
}

/// Seal `plaintext` under `key` with a fresh random nonce; returns the whole file's bytes.
pub fn seal(plaintext: &[u8], key: &SealKey) -> Vec<u8> {
    let mut nonce = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let ct_len = u32::try_from(plaintext.len() + TAG_LEN).expect("store payload under 4 GiB");
    let mut out = Vec::with_capacity(HEADER_LEN + plaintext.len() + TAG_LEN);
    out.extend_from_slice(MAGIC);
    out.push(FORMAT_VERSION);
    for v in [key.params.memory_kib, key.params.passes, key.params.lanes] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&key.salt);
    out.extend_from_slice(&key.check);
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&ct_len.to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    let cipher = XChaCha20Poly1305::new((&*key.key).into());
    let ciphertext = cipher
        .encrypt(
            XNonce::from_slice(&nonce),
            Payload {
                msg: plaintext,
                aad: &out,
            },
        )
        .expect("XChaCha20-Poly1305 encrypts any length under 256 GiB");
    out.extend_from_slice(&ciphertext);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cheap cost so unit tests do not spend seconds in Argon2id.
    fn cheap_key(pass: &str) -> SealKey {
        let params = KdfParams {
            memory_kib: 64,
            passes: 1,
            lanes: 1,
        };
        SealKey::derive(
            &SecretString::from(pass.to_owned()),
            params,
            [7u8; SALT_LEN],
        )
        .unwrap()
    }

    fn pass(p: &str) -> SecretString {
        SecretString::from(p.to_owned())
    }

    #[test]
    fn round_trip_and_cached_key_reuse() {
        let bytes = seal(b"{\"providers\":{}}", &cheap_key("pw"));
        let (plain, key) = open(&bytes, &pass("pw"), None).unwrap();
        assert_eq!(&plain[..], b"{\"providers\":{}}");
        // A cached key opens without the passphrase being consulted.
        let again = seal(b"second", &key);
        let (plain, _) = open(&again, &pass("not used"), Some(key)).unwrap();
        assert_eq!(&plain[..], b"second");
        assert_ne!(bytes[75..99], again[75..99], "each write draws a new nonce");
    }

    #[test]
    fn each_failure_has_its_own_error() {
        let bytes = seal(b"payload", &cheap_key("pw"));
        assert!(matches!(
            open(&bytes, &pass("nope"), None),
            Err(SealError::WrongPassphrase)
        ));

        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(
            open(&flipped, &pass("pw"), None),
            Err(SealError::Tampered)
        ));

        // The salt feeds the KDF, so a changed salt reads as a wrong passphrase.
        let mut salt_flipped = bytes.clone();
        salt_flipped[30] ^= 1;
        assert!(matches!(
            open(&salt_flipped, &pass("pw"), None),
            Err(SealError::WrongPassphrase)
        ));

        let mut nonce_flipped = bytes.clone();
        nonce_flipped[80] ^= 1;
        assert!(matches!(
            open(&nonce_flipped, &pass("pw"), None),
            Err(SealError::Tampered)
        ));

        for cut in [5, 14, 50, HEADER_LEN, bytes.len() - 1] {
            assert!(
                matches!(
                    open(&bytes[..cut], &pass("pw"), None),
                    Err(SealError::Truncated { .. })
                ),
                "cut at {cut}"
            );
        }

        let mut newer = bytes.clone();
        newer[14] = FORMAT_VERSION + 1;
        assert_eq!(
            open(&newer, &pass("pw"), None).err(),
            Some(SealError::NewerFormat(FORMAT_VERSION + 1))
        );

        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            open(&longer, &pass("pw"), None),
            Err(SealError::Damaged(_))
        ));

        let mut costly = bytes.clone();
        costly[15..19].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            open(&costly, &pass("pw"), None),
            Err(SealError::Damaged(_))
        ));

        assert_eq!(
            open(b"{\"json\": 1}", &pass("pw"), None).err(),
            Some(SealError::NotAStore)
        );
    }
}
