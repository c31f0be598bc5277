//! What requests in flight may hold together: how many one address may
//! have at once, and the bytes of their bodies buffered in memory. Rate
//! limits bound what a client may ask for over time; these bound what it
//! holds at one moment, so memory stays bounded by design whatever the
//! rate (a slow body costs nothing per second, and so passes any rate).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
};

use crate::{ServiceError, rate_limits::ClientAddr};

/// How much one address may hold, and all of them together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Requests one address may have in flight; more get 429.
    pub requests_per_address: usize,
    /// Bytes of request bodies buffered by every request in flight; a body
    /// that would pass it gets 503 (429 when its address's share would).
    pub body_bytes: usize,
    /// Of those, what one address may hold: one client can never take
    /// the whole budget from the others.
    pub body_bytes_per_address: usize,
}

impl AdmissionLimits {
    /// An address's share of the body budget: an eighth, so it takes
    /// eight busy addresses, not one, to exhaust it.
    pub fn new(requests_per_address: usize, body_bytes: usize) -> Self {
        Self {
            requests_per_address,
            body_bytes,
            body_bytes_per_address: (body_bytes / 8).max(1),
        }
    }
}

#[derive(Debug, Default)]
struct Held {
    requests: usize,
    bytes: usize,
}

#[derive(Debug, Default)]
struct State {
    bytes: usize,
    by_address: HashMap<String, Held>,
}

/// The process's admission counts.
#[derive(Debug)]
pub struct Admission {
    limits: AdmissionLimits,
    state: Arc<Mutex<State>>,
}

/// One admitted request: what it holds is given back when dropped.
#[derive(Debug)]
pub struct Admitted {
    address: String,
    limits: AdmissionLimits,
    state: Arc<Mutex<State>>,
    bytes: usize,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Self {
        Self {
            limits,
            state: Arc::default(),
        }
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    /// Admits a request from `client`: 429 when the address already has
    /// its share of requests in flight.
    pub fn admit(&self, client: &ClientAddr) -> Result<Admitted, ServiceError> {
        let mut state = lock(&self.state);
        let held = state
            .by_address
            .entry(client.as_str().to_owned())
            .or_default();
        if held.requests >= self.limits.requests_per_address {
            return Err(ServiceError::RateLimited {
                retry_after_secs: 1,
            });
        }
        held.requests += 1;
        Ok(Admitted {
            address: client.as_str().to_owned(),
            limits: self.limits,
            state: Arc::clone(&self.state),
            bytes: 0,
        })
    }

    /// Body bytes held by every request in flight.
    pub fn body_bytes(&self) -> usize {
        lock(&self.state).bytes
    }
}

/// Why a body's next bytes were refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyRefusal {
    /// The address would pass its share: its own doing (429).
    Share,
    /// The process's budget is spent by all addresses together (503).
    Budget,
}

impl From<BodyRefusal> for ServiceError {
    fn from(refusal: BodyRefusal) -> Self {
        match refusal {
            BodyRefusal::Share => ServiceError::RateLimited {
                retry_after_secs: 1,
            },
            BodyRefusal::Budget => ServiceError::Unavailable(
                "the registry is receiving as many request bodies as it can hold; retry shortly"
                    .to_owned(),
            ),
        }
    }
}

impl Admitted {
    /// Counts `bytes` more of this request's body as held until the request
    /// ends: refused when the address's share of the process's budget
    /// (its own doing) or the budget itself would be passed (nothing is
    /// counted then).
    pub fn hold(&mut self, bytes: usize) -> Result<(), BodyRefusal> {
        let mut state = lock(&self.state);
        let State {
            bytes: all,
            by_address,
        } = &mut *state;
        let mine = by_address.entry(self.address.clone()).or_default();
        if mine.bytes.saturating_add(bytes) > self.limits.body_bytes_per_address {
            return Err(BodyRefusal::Share);
        }
        if all.saturating_add(bytes) > self.limits.body_bytes {
            return Err(BodyRefusal::Budget);
        }
        *all += bytes;
        mine.bytes += bytes;
        self.bytes += bytes;
        Ok(())
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut state = lock(&self.state);
        state.bytes -= self.bytes;
        if let Some(held) = state.by_address.get_mut(&self.address) {
            held.requests -= 1;
            held.bytes -= self.bytes;
            if held.requests == 0 {
                state.by_address.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use super::*;

    fn client(last: u8) -> ClientAddr {
        ClientAddr::of(IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)))
    }

    #[test]
    fn an_address_has_its_share_of_requests_and_gets_it_back() {
        let admission = Admission::new(AdmissionLimits::new(2, 1 << 20));
        let a = admission.admit(&client(1)).unwrap();
        let _b = admission.admit(&client(1)).unwrap();
        assert!(matches!(
            admission.admit(&client(1)),
            Err(ServiceError::RateLimited { .. })
        ));
        // Another address is not affected.
        let _c = admission.admit(&client(2)).unwrap();
        drop(a);
        admission.admit(&client(1)).unwrap();
    }

    #[test]
    fn bodies_share_one_budget_and_an_address_only_its_part() {
        let admission = Admission::new(AdmissionLimits::new(100, 8_000));
        let mut one = admission.admit(&client(1)).unwrap();
        one.hold(1_000).unwrap();
        // An address holds at most an eighth.
        assert_eq!(one.hold(1), Err(BodyRefusal::Share));
        let mut held: Vec<Admitted> = (2..=8)
            .map(|i| {
                let mut a = admission.admit(&client(i)).unwrap();
                a.hold(1_000).unwrap();
                a
            })
            .collect();
        assert_eq!(admission.body_bytes(), 8_000);
        // The budget is spent: a ninth address gets nothing.
        let mut ninth = admission.admit(&client(9)).unwrap();
        assert_eq!(ninth.hold(1), Err(BodyRefusal::Budget));
        // What ends gives its bytes back.
        held.pop();
        drop(one);
        assert_eq!(admission.body_bytes(), 6_000);
        ninth.hold(1_000).unwrap();
    }
}
