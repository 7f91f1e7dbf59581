//! Single-use tokens, as the kubelet's streaming server hands them out: each Exec, Attach or
//! PortForward answer names one, the first connection that presents it consumes it, and one
//! nobody presents expires after a minute.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::Pending;

/// How long an unused token stays valid (the kubelet's request cache TTL).
pub(crate) const TOKEN_TTL: Duration = Duration::from_secs(60);
/// Unused tokens held at most (the kubelet's limit of requests in flight).
pub(crate) const MAX_IN_FLIGHT: usize = 1000;

/// The requests waiting for their connection, by token.
#[derive(Debug)]
pub(crate) struct Tokens {
    waiting: HashMap<String, (Pending, Instant)>,
    /// Seeds the tokens: random per cache, so tokens cannot be guessed from one another.
    seed: u64,
    minted: u64,
    ttl: Duration,
}

impl Default for Tokens {
    fn default() -> Self {
        Self::with_ttl(TOKEN_TTL)
    }
}

impl Tokens {
    /// An empty cache whose tokens live `ttl`.
    pub(crate) fn with_ttl(ttl: Duration) -> Self {
        Self {
            waiting: HashMap::new(),
            seed: RandomState::new().build_hasher().finish(),
            minted: 0,
            ttl,
        }
    }

    /// Stores `pending` under a fresh token; `None` when the cache is full of live tokens.
    pub(crate) fn insert(&mut self, pending: Pending, now: Instant) -> Option<String> {
        self.waiting.retain(|_, (_, expires)| *expires > now);
        if self.waiting.len() >= MAX_IN_FLIGHT {
            return None;
        }
        self.minted += 1;
        let mut digest = Sha256::new();
        digest.update(self.seed.to_le_bytes());
        digest.update(self.minted.to_le_bytes());
        // URL-safe and short, like the kubelet's 8 random bytes in base64.
        let token = hex::encode(&digest.finalize()[..12]);
        self.waiting
            .insert(token.clone(), (pending, now + self.ttl));
        Some(token)
    }

    /// Takes the request `token` stands for, if it is live; it cannot be taken twice.
    pub(crate) fn consume(&mut self, token: &str, now: Instant) -> Option<Pending> {
        let (pending, expires) = self.waiting.remove(token)?;
        (expires > now).then_some(pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::streaming::{Forward, Pending};

    fn forward() -> Pending {
        Pending::PortForward(Forward {
            sandbox: "s".to_owned(),
            listening: vec![80],
        })
    }

    #[test]
    fn a_token_is_consumed_by_its_first_use() {
        let mut tokens = Tokens::default();
        let now = Instant::now();
        let token = tokens.insert(forward(), now).unwrap();
        assert!(tokens.consume(&token, now).is_some());
        assert!(tokens.consume(&token, now).is_none());
    }

    #[test]
    fn a_token_expires_after_its_ttl() {
        let mut tokens = Tokens::with_ttl(Duration::from_secs(1));
        let now = Instant::now();
        let token = tokens.insert(forward(), now).unwrap();
        assert!(tokens
            .consume(&token, now + Duration::from_secs(2))
            .is_none());
    }

    #[test]
    fn tokens_differ_and_a_full_cache_refuses_more() {
        let mut tokens = Tokens::default();
        let now = Instant::now();
        let minted: std::collections::HashSet<String> = (0..MAX_IN_FLIGHT)
            .map(|_| tokens.insert(forward(), now).unwrap())
            .collect();
        assert_eq!(minted.len(), MAX_IN_FLIGHT);
        assert!(tokens.insert(forward(), now).is_none());
        // Expired ones make room again.
        assert!(tokens.insert(forward(), now + TOKEN_TTL * 2).is_some());
    }
}
