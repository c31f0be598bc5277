//! MoltSpeak handshake state, in this replica's memory only: the challenges
//! issued by `hello_ack` (60 s, consumed by the first `verify` naming them)
//! and the sessions `verify_response` opens (until their expiry). Both are
//! bounded per client address and in total; expired entries are purged on
//! every insert, so a session costs memory only while it lives.
//!
//! A session is per replica: behind a load balancer a client keeps talking
//! to the replica it verified with, or verifies again.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{Arc, Mutex, MutexGuard},
};

use agentlang_core::protocol::moltspeak::{
    EncryptionKey, PublicKey, SharedBox, handshake::CHALLENGE_BYTES, stream::StreamReceiver,
};

/// How long a challenge may be answered.
pub const CHALLENGE_TTL_MS: u64 = 60_000;
/// Pending challenges per client address.
pub const MAX_CHALLENGES_PER_CLIENT: usize = 16;
/// Pending challenges in total.
pub const MAX_CHALLENGES: usize = 4096;
/// Live sessions per client address.
pub const MAX_SESSIONS_PER_CLIENT: usize = 8;
/// Live sessions in total.
pub const MAX_SESSIONS: usize = 1024;
/// How far a session message's `ts` may be from the registry's clock.
pub const SESSION_TS_WINDOW_MS: u64 = 120_000;
/// How long an envelope nonce is remembered. A replay arriving later holds a
/// message whose `ts` is more than [`SESSION_TS_WINDOW_MS`] old, refused by
/// time; so nonces cost memory for four minutes, not for the session's life.
pub const NONCE_MEMORY_MS: u64 = 2 * SESSION_TS_WINDOW_MS;
/// Envelope nonces remembered per session at once: more than four minutes
/// of the default message budget (600 a minute per client). Past it:
/// `E_RATE_LIMIT` until older ones are forgotten.
pub const MAX_NONCES_PER_SESSION: usize = 4096;
/// WebSocket streams one client address may hold open.
pub const MAX_STREAM_CONNECTIONS_PER_CLIENT: usize = 4;
/// WebSocket streams open in total.
pub const MAX_STREAM_CONNECTIONS: usize = 256;

/// Why a challenge or a session could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionError {
    #[error("too many {what} pending for this client (at most {limit}); wait for some to expire")]
    ClientFull { what: &'static str, limit: usize },
    #[error("the registry holds too many {what} (at most {limit}); retry later")]
    Full { what: &'static str, limit: usize },
    #[error("unknown or expired challenge")]
    UnknownChallenge,
    #[error("unknown or expired session")]
    UnknownSession,
    #[error("the envelope nonce was already used in this session")]
    NonceReused,
    #[error("this session has sent {0} envelopes in four minutes; slow down")]
    NoncesExhausted(usize),
}

/// What a `hello` left for its `verify`.
#[derive(Debug, Clone)]
pub struct Challenge {
    pub client: String,
    pub key: PublicKey,
    pub enc_key: EncryptionKey,
    /// Capabilities the hello proved (attested or self-declared).
    pub capabilities: Vec<String>,
    pub expires: u64,
}

/// A verified session.
#[derive(Debug)]
pub struct Session {
    pub id: String,
    pub client: String,
    /// The Ed25519 key the client proved it holds.
    pub client_key: PublicKey,
    /// Where the registry's envelopes for this session are sealed to.
    pub client_enc_key: EncryptionKey,
    /// The registry's X25519 secret × `client_enc_key`.
    pub shared: SharedBox,
    /// Unix ms.
    pub expires: u64,
    /// The capabilities the hello proved.
    pub capabilities: Vec<String>,
    nonces: Mutex<RecentNonces>,
    /// The session's streams, over the WebSocket or HTTP.
    pub streams: Mutex<StreamReceiver>,
}

impl Session {
    /// Records an envelope nonce at `now` (Unix ms); refuses one seen in
    /// this session within [`NONCE_MEMORY_MS`].
    pub fn use_nonce(&self, nonce: [u8; 24], now: u64) -> Result<(), SessionError> {
        let mut recent = lock(&self.nonces);
        while let Some(&(forget_at, old)) = recent.order.front()
            && forget_at <= now
        {
            recent.order.pop_front();
            recent.seen.remove(&old);
        }
        if recent.seen.contains(&nonce) {
            return Err(SessionError::NonceReused);
        }
        if recent.seen.len() >= MAX_NONCES_PER_SESSION {
            return Err(SessionError::NoncesExhausted(MAX_NONCES_PER_SESSION));
        }
        recent.seen.insert(nonce);
        recent
            .order
            .push_back((now.saturating_add(NONCE_MEMORY_MS), nonce));
        Ok(())
    }

    pub fn streams(&self) -> MutexGuard<'_, StreamReceiver> {
        lock(&self.streams)
    }
}

/// The nonces of the last [`NONCE_MEMORY_MS`], oldest first.
#[derive(Debug, Default)]
struct RecentNonces {
    seen: HashSet<[u8; 24]>,
    order: VecDeque<(u64, [u8; 24])>,
}

/// The handshake state of one replica.
#[derive(Debug)]
pub struct Sessions {
    ttl_ms: u64,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    challenges: HashMap<[u8; CHALLENGE_BYTES], Challenge>,
    sessions: HashMap<String, Arc<Session>>,
    connections: HashMap<String, usize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The maps stay consistent at every await-free step; a panic elsewhere
    // must not take MoltSpeak down.
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn count<'a>(clients: impl Iterator<Item = &'a String>, client: &str) -> usize {
    clients.filter(|c| c.as_str() == client).count()
}

impl Sessions {
    /// Sessions last `ttl_ms` from their verify.
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            ttl_ms,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn ttl_ms(&self) -> u64 {
        self.ttl_ms
    }

    /// Keeps a challenge issued at `now_ms`; its expiry.
    pub fn issue_challenge(
        &self,
        challenge: [u8; CHALLENGE_BYTES],
        client: &str,
        key: PublicKey,
        enc_key: EncryptionKey,
        capabilities: Vec<String>,
        now_ms: u64,
    ) -> Result<u64, SessionError> {
        let mut inner = lock(&self.inner);
        inner.challenges.retain(|_, c| c.expires > now_ms);
        if count(inner.challenges.values().map(|c| &c.client), client) >= MAX_CHALLENGES_PER_CLIENT
        {
            return Err(SessionError::ClientFull {
                what: "challenges",
                limit: MAX_CHALLENGES_PER_CLIENT,
            });
        }
        if inner.challenges.len() >= MAX_CHALLENGES {
            return Err(SessionError::Full {
                what: "challenges",
                limit: MAX_CHALLENGES,
            });
        }
        let expires = now_ms + CHALLENGE_TTL_MS;
        inner.challenges.insert(
            challenge,
            Challenge {
                client: client.to_owned(),
                key,
                enc_key,
                capabilities,
                expires,
            },
        );
        Ok(expires)
    }

    /// Takes a challenge out (whatever the verify's outcome, it is used).
    pub fn take_challenge(
        &self,
        challenge: &[u8; CHALLENGE_BYTES],
        now_ms: u64,
    ) -> Result<Challenge, SessionError> {
        lock(&self.inner)
            .challenges
            .remove(challenge)
            .filter(|c| c.expires > now_ms)
            .ok_or(SessionError::UnknownChallenge)
    }

    /// Opens a session for a verified challenge.
    pub fn open(
        &self,
        id: String,
        challenge: Challenge,
        shared: SharedBox,
        now_ms: u64,
    ) -> Result<Arc<Session>, SessionError> {
        let mut inner = lock(&self.inner);
        inner.sessions.retain(|_, s| s.expires > now_ms);
        if count(
            inner.sessions.values().map(|s| &s.client),
            &challenge.client,
        ) >= MAX_SESSIONS_PER_CLIENT
        {
            return Err(SessionError::ClientFull {
                what: "sessions",
                limit: MAX_SESSIONS_PER_CLIENT,
            });
        }
        if inner.sessions.len() >= MAX_SESSIONS {
            return Err(SessionError::Full {
                what: "sessions",
                limit: MAX_SESSIONS,
            });
        }
        let session = Arc::new(Session {
            id: id.clone(),
            client: challenge.client,
            client_key: challenge.key,
            client_enc_key: challenge.enc_key,
            shared,
            expires: now_ms.saturating_add(self.ttl_ms),
            capabilities: challenge.capabilities,
            nonces: Mutex::default(),
            streams: Mutex::new(StreamReceiver::new()),
        });
        inner.sessions.insert(id, Arc::clone(&session));
        Ok(session)
    }

    /// A live session; an expired one is dropped on the way.
    pub fn get(&self, id: &str, now_ms: u64) -> Result<Arc<Session>, SessionError> {
        let mut inner = lock(&self.inner);
        match inner.sessions.get(id) {
            Some(s) if s.expires > now_ms => Ok(Arc::clone(s)),
            Some(_) => {
                inner.sessions.remove(id);
                Err(SessionError::UnknownSession)
            }
            None => Err(SessionError::UnknownSession),
        }
    }

    /// Live sessions (for tests and metrics).
    pub fn len(&self, now_ms: u64) -> usize {
        lock(&self.inner)
            .sessions
            .values()
            .filter(|s| s.expires > now_ms)
            .count()
    }

    pub fn is_empty(&self, now_ms: u64) -> bool {
        self.len(now_ms) == 0
    }

    /// A WebSocket slot for `client`, released when the guard drops.
    pub fn connect(self: &Arc<Self>, client: &str) -> Result<ConnectionSlot, SessionError> {
        let mut inner = lock(&self.inner);
        let total: usize = inner.connections.values().sum();
        let mine = inner.connections.get(client).copied().unwrap_or(0);
        if mine >= MAX_STREAM_CONNECTIONS_PER_CLIENT {
            return Err(SessionError::ClientFull {
                what: "stream connections",
                limit: MAX_STREAM_CONNECTIONS_PER_CLIENT,
            });
        }
        if total >= MAX_STREAM_CONNECTIONS {
            return Err(SessionError::Full {
                what: "stream connections",
                limit: MAX_STREAM_CONNECTIONS,
            });
        }
        inner.connections.insert(client.to_owned(), mine + 1);
        Ok(ConnectionSlot {
            sessions: Arc::clone(self),
            client: client.to_owned(),
        })
    }
}

/// One open WebSocket stream connection of a client.
#[derive(Debug)]
pub struct ConnectionSlot {
    sessions: Arc<Sessions>,
    client: String,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut inner = lock(&self.sessions.inner);
        if let Some(n) = inner.connections.get_mut(&self.client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                inner.connections.remove(&self.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agentlang_core::protocol::moltspeak::EncryptionSecret;
    use ed25519_dalek::SigningKey;

    use super::*;

    fn keys() -> (PublicKey, EncryptionKey) {
        (
            SigningKey::from_bytes(&[1; 32]).verifying_key().into(),
            EncryptionSecret::from_bytes([2; 32]).public_key(),
        )
    }

    fn challenge(n: usize) -> [u8; CHALLENGE_BYTES] {
        let mut c = [0; CHALLENGE_BYTES];
        c[..8].copy_from_slice(&(n as u64).to_le_bytes());
        c
    }

    fn issue(sessions: &Sessions, n: usize, client: &str, now: u64) -> Result<u64, SessionError> {
        let (key, enc) = keys();
        sessions.issue_challenge(challenge(n), client, key, enc, Vec::new(), now)
    }

    #[test]
    fn challenges_are_bounded_per_client_used_once_and_expire() {
        let sessions = Sessions::new(3_600_000);
        for n in 0..MAX_CHALLENGES_PER_CLIENT {
            issue(&sessions, n, "ip:a", 0).unwrap();
        }
        assert!(matches!(
            issue(&sessions, 99, "ip:a", 0),
            Err(SessionError::ClientFull { .. })
        ));
        issue(&sessions, 100, "ip:b", 0).unwrap();
        assert!(sessions.take_challenge(&challenge(0), 1).is_ok());
        assert_eq!(
            sessions.take_challenge(&challenge(0), 1).unwrap_err(),
            SessionError::UnknownChallenge
        );
        assert_eq!(
            sessions
                .take_challenge(&challenge(1), CHALLENGE_TTL_MS)
                .unwrap_err(),
            SessionError::UnknownChallenge
        );
        // Expired ones are purged: the client may ask again.
        issue(&sessions, 200, "ip:a", CHALLENGE_TTL_MS).unwrap();
    }

    #[test]
    fn sessions_are_bounded_refuse_reused_nonces_and_expire() {
        let sessions = Sessions::new(1_000);
        let open = |n: usize, now: u64| {
            issue(&sessions, n, "ip:a", now).unwrap();
            let pending = sessions.take_challenge(&challenge(n), now).unwrap();
            let shared = SharedBox::new(&EncryptionSecret::from_bytes([3; 32]), &pending.enc_key);
            sessions.open(format!("s-{n}"), pending, shared, now)
        };
        let first = open(0, 0).unwrap();
        for n in 1..MAX_SESSIONS_PER_CLIENT {
            open(n, 0).unwrap();
        }
        assert!(matches!(open(50, 0), Err(SessionError::ClientFull { .. })));
        first.use_nonce([7; 24], 0).unwrap();
        assert_eq!(
            first.use_nonce([7; 24], NONCE_MEMORY_MS - 1).unwrap_err(),
            SessionError::NonceReused
        );
        // Forgotten once a replay would be refused by its ts anyway.
        first.use_nonce([7; 24], NONCE_MEMORY_MS).unwrap();
        for n in 1..MAX_NONCES_PER_SESSION {
            first
                .use_nonce(
                    [
                        (n % 251) as u8,
                        (n / 251) as u8,
                        1,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                        0,
                    ],
                    NONCE_MEMORY_MS,
                )
                .unwrap();
        }
        assert_eq!(
            first.use_nonce([9; 24], NONCE_MEMORY_MS).unwrap_err(),
            SessionError::NoncesExhausted(MAX_NONCES_PER_SESSION)
        );
        first.use_nonce([9; 24], 2 * NONCE_MEMORY_MS).unwrap();
        assert!(sessions.get("s-0", 999).is_ok());
        assert_eq!(
            sessions.get("s-0", 1_000).unwrap_err(),
            SessionError::UnknownSession
        );
        // Expired sessions no longer count.
        open(60, 1_000).unwrap();
        assert_eq!(sessions.len(1_000), 1);
    }

    #[test]
    fn connection_slots_are_bounded_and_released() {
        let sessions = Arc::new(Sessions::new(1_000));
        let slots: Vec<_> = (0..MAX_STREAM_CONNECTIONS_PER_CLIENT)
            .map(|_| sessions.connect("ip:a").unwrap())
            .collect();
        assert!(sessions.connect("ip:a").is_err());
        assert!(sessions.connect("ip:b").is_ok());
        drop(slots);
        assert!(sessions.connect("ip:a").is_ok());
    }
}
