//! Prompt recipients and prompt-key grants (docs/prompt-grants.md).
//!
//! - A recipient (an age X25519 public key) is registered only with proof
//!   that the account holds its identity: the registry encrypts a challenge
//!   to the recipient, and only the identity's holder can send back its
//!   plaintext. The plaintext names the registry's origin, the account, the
//!   recipient and an expiry, and carries the registry's HMAC over them, so
//!   nothing is stored between the two requests and a proof cannot be used
//!   for another account, recipient or registry, or after it expires.
//! - An owner of a sealed agent grants its prompt key, wrapped (by the
//!   owner, never by the registry) to the grantee's recipients. Each grant
//!   and revocation is a log entry naming the agent and the owner who
//!   acted, and a salted commitment in place of the grantee.
//! - The wrapped key is served to its grantee for the versions the grant
//!   covers, and to nobody else.
//!
//! Every rule here needs the `grants` scope; writes spend the account's
//! [`Bucket::GrantWrites`] budget.

use agentlang_core::{
    Kind, PackageName, Username, Version,
    crypt::PromptKeyId,
    digest::Sha256Digest,
    grants::{
        self as core_grants, MAX_GRANTS_PER_AGENT, MAX_RECIPIENTS_PER_ACCOUNT, MAX_VERSIONS_LEN,
        PromptMode, Recipient,
    },
    names::parse_requirement,
    tlog::LogOp,
};
use serde::Serialize;

use crate::{
    FieldError, Registry, ServiceError, audit,
    keys::origin_of,
    owners,
    packages::{self, LogRef},
    rate_limits::{Bucket, account_budget},
    secrets::constant_time_eq,
    tlog,
    tokens::{Authenticated, Scope},
};
use store::{
    grants::{GrantError, GrantRecord, NewGrant, RecipientAdded, RecipientRecord, Replaced},
    packages::{PackageRecord, VersionRecord},
    time::rfc3339,
};

pub use crate::secrets::ProofKey;

/// How long a recipient challenge can be answered.
pub const CHALLENGE_LIFETIME_SECS: i64 = 600;
/// Grants one listing of an account's holdings shows, newest first.
pub const MAX_GRANTS_LISTED: i64 = 1_000;

const PROOF_TAG: &str = "agentlang-recipient-proof";

/// What a proof's MAC covers: everything but the MAC.
fn proof_head(origin: &str, username: &Username, recipient: &Recipient, expires: i64) -> String {
    format!("{PROOF_TAG}:{origin}:{username}:{recipient}:{expires}")
}

/// The plaintext of a challenge: `agentlang-recipient-proof:<origin>:
/// <username>:<recipient>:<expires>:<mac>`.
pub fn proof_text(
    key: &ProofKey,
    origin: &str,
    username: &Username,
    recipient: &Recipient,
    expires: i64,
) -> String {
    let head = proof_head(origin, username, recipient, expires);
    let mac = key.mac(&head);
    format!("{head}:{mac}")
}

/// Checks a proof for this registry, account and recipient at `now`.
pub fn check_proof(
    key: &ProofKey,
    origin: &str,
    username: &Username,
    recipient: &Recipient,
    proof: &str,
    now: i64,
) -> Result<(), ServiceError> {
    let refused = |why: &str| {
        ServiceError::ProofInvalid(format!(
            "{why}: send the plaintext of the challenge `POST \
             /api/v1/account/prompt-recipients/challenge` answered for this recipient, within \
             {} minutes (`agentlang keys register --prompt` does both)",
            CHALLENGE_LIFETIME_SECS / 60
        ))
    };
    let proof = proof.trim();
    let prefix = format!("{PROOF_TAG}:{origin}:{username}:{recipient}:");
    let Some(rest) = proof.strip_prefix(&prefix) else {
        return Err(refused(
            "the proof is not for this registry, account and recipient",
        ));
    };
    let Some((expires, mac)) = rest.split_once(':') else {
        return Err(refused("the proof is malformed"));
    };
    let expires: i64 = match expires.parse() {
        Ok(at) if expires.bytes().all(|b| b.is_ascii_digit()) => at,
        _ => return Err(refused("the proof is malformed")),
    };
    let expected = key.mac(&proof_head(origin, username, recipient, expires));
    if !constant_time_eq(&expected, mac) {
        return Err(refused("the proof is not the registry's"));
    }
    if expires < now {
        return Err(refused("the proof has expired"));
    }
    Ok(())
}

fn parse_recipient(field: &str, text: &str) -> Result<Recipient, ServiceError> {
    Recipient::parse(text.trim())
        .map_err(|e| ServiceError::Validation(vec![FieldError::new(field, e.to_string())]))
}

fn spend_write(registry: &Registry, auth: &Authenticated) -> Result<(), ServiceError> {
    registry
        .rate_limits
        .check(Bucket::GrantWrites, &account_budget(auth.account_id))
}

/// A registered recipient, as listed.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecipientView {
    /// An age X25519 recipient (`age1…`).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"))]
    pub recipient: Recipient,
    /// RFC 3339.
    pub created_at: String,
}

impl From<RecipientRecord> for RecipientView {
    fn from(r: RecipientRecord) -> Self {
        Self {
            recipient: r.recipient,
            created_at: rfc3339(r.created_at),
        }
    }
}

/// `POST /api/v1/account/prompt-recipients/challenge`: an armored age file
/// to `recipient` whose plaintext is the proof to send back.
pub fn recipient_challenge(
    registry: &Registry,
    auth: &Authenticated,
    recipient: &str,
) -> Result<String, ServiceError> {
    auth.require(Scope::Grants)?;
    let recipient = parse_recipient("recipient", recipient)?;
    spend_write(registry, auth)?;
    let text = proof_text(
        &registry.recipient_proofs,
        &origin_of(registry.public_url()),
        &auth.username,
        &recipient,
        store::now() + CHALLENGE_LIFETIME_SECS,
    );
    core_grants::wrap(std::slice::from_ref(&recipient), text.as_bytes())
        .map_err(ServiceError::internal)
}

/// `POST /api/v1/account/prompt-recipients`: registers a recipient with its
/// proof. Answers the record and whether it is new (registering one again
/// is not an error).
pub async fn register_recipient(
    registry: &Registry,
    auth: &Authenticated,
    recipient: &str,
    proof: &str,
) -> Result<(RecipientView, bool), ServiceError> {
    auth.require(Scope::Grants)?;
    let recipient = parse_recipient("recipient", recipient)?;
    check_proof(
        &registry.recipient_proofs,
        &origin_of(registry.public_url()),
        &auth.username,
        &recipient,
        proof,
        store::now(),
    )?;
    spend_write(registry, auth)?;
    match registry
        .db
        .insert_recipient(auth.account_id, &recipient, MAX_RECIPIENTS_PER_ACCOUNT)
        .await?
    {
        RecipientAdded::Added(record) => {
            audit::record(
                registry,
                auth.account_id,
                "prompt_recipient_registered",
                &recipient.to_string(),
            )
            .await;
            tracing::info!(account = %auth.username, %recipient, "prompt recipient registered");
            Ok((record.into(), true))
        }
        RecipientAdded::Existing(record) => Ok((record.into(), false)),
        RecipientAdded::TooMany => Err(ServiceError::TooManyRecipients(format!(
            "an account has at most {MAX_RECIPIENTS_PER_ACCOUNT} prompt recipients; remove one \
             first (`DELETE /api/v1/account/prompt-recipients/{{recipient}}`)"
        ))),
    }
}

/// The caller's recipients, oldest first.
pub async fn own_recipients(
    registry: &Registry,
    auth: &Authenticated,
) -> Result<Vec<RecipientView>, ServiceError> {
    auth.require(Scope::Grants)?;
    Ok(registry
        .db
        .list_recipients(auth.account_id)
        .await?
        .into_iter()
        .map(RecipientView::from)
        .collect())
}

/// Removes one of the caller's recipients; 404 when it has no such one.
/// Grants already wrapped to it stay openable by its identity.
pub async fn remove_recipient(
    registry: &Registry,
    auth: &Authenticated,
    recipient: &str,
) -> Result<(), ServiceError> {
    auth.require(Scope::Grants)?;
    let not_found = || ServiceError::NotFound(format!("prompt recipient {recipient:?}"));
    let recipient = Recipient::parse(recipient).map_err(|_| not_found())?;
    spend_write(registry, auth)?;
    if !registry
        .db
        .delete_recipient(auth.account_id, &recipient)
        .await?
    {
        return Err(not_found());
    }
    audit::record(
        registry,
        auth.account_id,
        "prompt_recipient_removed",
        &recipient.to_string(),
    )
    .await;
    Ok(())
}

async fn find_account(
    registry: &Registry,
    username: &str,
) -> Result<store::accounts::AccountRecord, ServiceError> {
    let not_found = || ServiceError::NotFound(format!("account {username:?}"));
    let name = Username::parse(username).map_err(|_| not_found())?;
    registry.db.find_account(&name).await?.ok_or_else(not_found)
}

/// `GET /api/v1/accounts/{username}/prompt-recipients`: an account's
/// recipients (public keys), for a granter to wrap a key to.
pub async fn recipients_of(
    registry: &Registry,
    auth: &Authenticated,
    username: &str,
) -> Result<(Username, Vec<RecipientView>), ServiceError> {
    auth.require(Scope::Grants)?;
    let account = find_account(registry, username).await?;
    let recipients = registry
        .db
        .list_recipients(account.id)
        .await?
        .into_iter()
        .map(RecipientView::from)
        .collect();
    Ok((account.username, recipients))
}

/// A grant, as its owners and its grantee see it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GrantView {
    /// The agent's name.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub agent: PackageName,
    /// The account the key is granted to.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub grantee: Username,
    /// The id of the prompt key granted (16 hex digits).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "0123456789abcdef"))]
    pub key_id: PromptKeyId,
    /// The SemVer range of versions the grant is limited to; `null`: every
    /// version the key seals.
    pub versions: Option<String>,
    /// The 32-byte salt of the grant's log commitment, hex: the `grant`
    /// of its log entries is the hex SHA-256 of `agentlang-grant\n`, these
    /// bytes, and `<grantee>\n<key_id>\n<versions or "">`.
    pub salt: String,
    /// The `grant` its log entries carry.
    pub commitment: String,
    /// The owner who granted it (`null` if that account is gone).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub granted_by: Option<Username>,
    /// RFC 3339.
    pub created_at: String,
    /// The `grant_add` entry that logged it (in the answer to the grant).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<LogRef>,
}

fn salt_of(record: &GrantRecord) -> Result<[u8; 32], ServiceError> {
    let mut salt = [0u8; 32];
    hex::decode_to_slice(&record.salt, &mut salt).map_err(|e| {
        ServiceError::internal(anyhow::anyhow!("grant {} has a bad salt: {e}", record.id))
    })?;
    Ok(salt)
}

fn commitment_of(record: &GrantRecord) -> Result<Sha256Digest, ServiceError> {
    Ok(core_grants::commitment(
        &salt_of(record)?,
        &record.grantee,
        &record.key_id,
        record.versions.as_deref(),
    ))
}

impl GrantView {
    fn of(record: GrantRecord) -> Result<Self, ServiceError> {
        let commitment = commitment_of(&record)?.to_hex();
        Ok(Self {
            agent: record.agent,
            grantee: record.grantee,
            key_id: record.key_id,
            versions: record.versions,
            salt: record.salt,
            commitment,
            granted_by: record.granted_by,
            created_at: rfc3339(record.created_at),
            log: None,
        })
    }
}

fn views(records: Vec<GrantRecord>) -> Result<Vec<GrantView>, ServiceError> {
    records.into_iter().map(GrantView::of).collect()
}

/// The agent `name` a token may act on through its grants: 403 unless the
/// token carries `grants` and its patterns admit the name; 404 when there
/// is no such agent.
async fn agent_for_token(
    registry: &Registry,
    auth: &Authenticated,
    name: &PackageName,
) -> Result<PackageRecord, ServiceError> {
    auth.require(Scope::Grants)?;
    auth.require_package(name)?;
    packages::find_package(registry, Kind::Agent, name).await
}

/// What a grant request carries, as sent.
#[derive(Debug, Clone, Copy)]
pub struct GrantRequest<'a> {
    pub key_id: &'a str,
    pub versions: Option<&'a str>,
    pub wrapped: &'a str,
}

/// A grant request's fields, checked: every problem at once.
fn check_request(req: &GrantRequest<'_>) -> Result<(PromptKeyId, Option<String>), ServiceError> {
    let mut errors = Vec::new();
    let key_id = PromptKeyId::parse(req.key_id)
        .map_err(|e| errors.push(FieldError::new("key_id", e.to_string())))
        .ok();
    let versions = match req.versions.map(str::trim) {
        None => None,
        Some(text) if text.len() > MAX_VERSIONS_LEN => {
            errors.push(FieldError::new(
                "versions",
                format!("must be at most {MAX_VERSIONS_LEN} bytes"),
            ));
            None
        }
        Some(text) => match parse_requirement(text) {
            Ok(_) => Some(text.to_owned()),
            Err(e) => {
                errors.push(FieldError::new("versions", e.to_string()));
                None
            }
        },
    };
    if let Err(e) = core_grants::check_wrapped(req.wrapped.as_bytes()) {
        errors.push(FieldError::new("wrapped", e.to_string()));
    }
    match key_id {
        Some(key_id) if errors.is_empty() => Ok((key_id, versions)),
        _ => Err(ServiceError::Validation(errors)),
    }
}

/// `PUT /api/v1/agents/{name}/grants/{username}`: an owner grants the
/// agent's prompt key `key_id` to an account, wrapped to its recipients.
/// A live grant of that key to that account is replaced (its revocation
/// logged too). Answers the grant and whether it is new.
pub async fn put_grant(
    registry: &Registry,
    auth: &Authenticated,
    name: &PackageName,
    grantee: &str,
    req: GrantRequest<'_>,
) -> Result<(GrantView, bool), ServiceError> {
    let package = agent_for_token(registry, auth, name).await?;
    owners::require_owner(registry, auth.account_id, &package).await?;
    let (key_id, versions) = check_request(&req)?;
    if !registry.db.has_sealed_version(package.id).await? {
        return Err(ServiceError::AgentOpen(format!(
            "agent {} has no sealed version: its prompt is in plaintext, and anyone who \
             downloads it can read it; there is no key to grant",
            package.name
        )));
    }
    let account = find_account(registry, grantee).await?;
    if registry.db.list_recipients(account.id).await?.is_empty() {
        return Err(ServiceError::NoRecipients(format!(
            "{} has registered no prompt recipient to wrap a key to; they must run \
             `agentlang keygen --prompt` and `agentlang keys register --prompt` first",
            account.username
        )));
    }
    spend_write(registry, auth)?;
    let replaced = registry
        .db
        .live_grants_to(package.id, account.id)
        .await?
        .into_iter()
        .find(|g| g.key_id == key_id);
    let revoke_entry = replaced
        .as_ref()
        .map(|old| {
            commitment_of(old).map(|c| {
                tlog::grant_entry(
                    LogOp::GrantRevoke,
                    &package.name,
                    auth.username.as_str(),
                    &c,
                )
            })
        })
        .transpose()?;
    let mut salt = [0u8; 32];
    getrandom::fill(&mut salt).map_err(ServiceError::internal)?;
    let commitment =
        core_grants::commitment(&salt, &account.username, &key_id, versions.as_deref());
    let entry = tlog::grant_entry(
        LogOp::GrantAdd,
        &package.name,
        auth.username.as_str(),
        &commitment,
    );
    tlog::check_servable(&entry)?;
    let salt_hex = hex::encode(salt);
    let written = registry
        .db
        .put_grant(
            &NewGrant {
                package_id: package.id,
                grantee_id: account.id,
                key_id: &key_id,
                versions: versions.as_deref(),
                wrapped: req.wrapped,
                salt_hex: &salt_hex,
                granted_by: auth.account_id,
                log_entry: &entry,
            },
            replaced
                .as_ref()
                .zip(revoke_entry.as_ref())
                .map(|(old, log_entry)| Replaced {
                    id: old.id,
                    log_entry,
                })
                .as_ref(),
            MAX_GRANTS_PER_AGENT,
        )
        .await
        .map_err(|e| match e {
            GrantError::TooMany(n) => ServiceError::TooManyGrants(format!(
                "agent {} holds {n} live grants, the most an agent may; revoke some first",
                package.name
            )),
            GrantError::Raced => ServiceError::Conflict(format!(
                "the grant of {} to {} changed while this one was written; send it again",
                package.name, account.username
            )),
            GrantError::Db(e) => e.into(),
        })?;
    registry.tlog.appended();
    let what = format!("agent {} (key {key_id})", package.name);
    audit::record(
        registry,
        auth.account_id,
        "grant_added",
        &format!("{what} to {}", account.username),
    )
    .await;
    audit::record(
        registry,
        account.id,
        "granted",
        &format!("{what} by {}", auth.username),
    )
    .await;
    tracing::info!(agent = %package.name, by = %auth.username, log_index = written.log_index, "prompt key granted");
    let view = GrantView {
        agent: package.name,
        grantee: account.username,
        key_id,
        versions,
        salt: salt_hex,
        commitment: commitment.to_hex(),
        granted_by: Some(auth.username.clone()),
        created_at: rfc3339(store::now()),
        log: Some(LogRef {
            index: written.log_index,
        }),
    };
    Ok((view, !written.replaced))
}

/// `DELETE /api/v1/agents/{name}/grants/{username}`: an owner revokes every
/// live grant of the agent to the account, each logged; 404 when it holds
/// none.
pub async fn revoke_grants(
    registry: &Registry,
    auth: &Authenticated,
    name: &PackageName,
    grantee: &str,
) -> Result<u64, ServiceError> {
    let package = agent_for_token(registry, auth, name).await?;
    owners::require_owner(registry, auth.account_id, &package).await?;
    let account = find_account(registry, grantee).await?;
    let live = registry.db.live_grants_to(package.id, account.id).await?;
    let none = || {
        ServiceError::NotFound(format!(
            "a grant of agent {} to {}",
            package.name, account.username
        ))
    };
    if live.is_empty() {
        return Err(none());
    }
    spend_write(registry, auth)?;
    let revocations = live
        .iter()
        .map(|g| {
            commitment_of(g).map(|c| {
                (
                    g.id,
                    tlog::grant_entry(
                        LogOp::GrantRevoke,
                        &package.name,
                        auth.username.as_str(),
                        &c,
                    ),
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let revoked = registry.db.revoke_grants(&revocations).await?;
    if revoked == 0 {
        return Err(none());
    }
    registry.tlog.appended();
    let what = format!("agent {}", package.name);
    audit::record(
        registry,
        auth.account_id,
        "grant_revoked",
        &format!("{what} from {}", account.username),
    )
    .await;
    audit::record(
        registry,
        account.id,
        "grant_withdrawn",
        &format!("{what} by {}", auth.username),
    )
    .await;
    tracing::info!(agent = %package.name, by = %auth.username, revoked, "prompt-key grants revoked");
    Ok(revoked)
}

/// `GET /api/v1/agents/{name}/grants`: the agent's live grants, for its
/// owners only.
pub async fn agent_grants(
    registry: &Registry,
    auth: &Authenticated,
    name: &PackageName,
) -> Result<Vec<GrantView>, ServiceError> {
    let package = agent_for_token(registry, auth, name).await?;
    owners::require_owner(registry, auth.account_id, &package).await?;
    live_grants_for_owner(registry, &package).await
}

/// An agent's live grants, for a caller already known to own it (the
/// catalog's owner section).
pub async fn live_grants_for_owner(
    registry: &Registry,
    package: &PackageRecord,
) -> Result<Vec<GrantView>, ServiceError> {
    let limit = i64::try_from(MAX_GRANTS_PER_AGENT).unwrap_or(i64::MAX);
    views(
        registry
            .db
            .live_grants_of_package(package.id, limit)
            .await?,
    )
}

/// `GET /api/v1/account/grants`: the live grants the caller holds, newest
/// first.
pub async fn held_grants(
    registry: &Registry,
    auth: &Authenticated,
) -> Result<Vec<GrantView>, ServiceError> {
    auth.require(Scope::Grants)?;
    views(
        registry
            .db
            .live_grants_held(auth.account_id, MAX_GRANTS_LISTED)
            .await?,
    )
}

/// Whether a grant of `grant_key` (limited to `range`, when given) covers
/// a version sealed with `version_key`. A version whose manifest records
/// no key id is covered only by a grant whose explicit range holds it.
pub fn covers(
    grant_key: &PromptKeyId,
    range: Option<&semver::VersionReq>,
    version: &Version,
    version_key: Option<&PromptKeyId>,
) -> bool {
    let in_range = |r: &semver::VersionReq| r.matches(version.semver());
    match version_key {
        Some(key) => key == grant_key && range.is_none_or(in_range),
        None => range.is_some_and(in_range),
    }
}

fn grant_covers(grant: &GrantRecord, version: &VersionRecord) -> bool {
    let range = match grant.versions.as_deref().map(parse_requirement) {
        None => None,
        Some(Ok(range)) => Some(range),
        // Checked when granted; a range today's parser refuses covers
        // nothing.
        Some(Err(_)) => return false,
    };
    covers(
        &grant.key_id,
        range.as_ref(),
        &version.version,
        version.prompt_key_id.as_ref(),
    )
}

/// `GET /api/v1/agents/{name}/{version}/prompt-key`: the caller's wrapped
/// key for one version (the newest of its live grants that covers it);
/// 404 `no-grant`, naming the owners to ask, when none does.
pub async fn prompt_key(
    registry: &Registry,
    auth: &Authenticated,
    name: &PackageName,
    version: &Version,
) -> Result<String, ServiceError> {
    let package = agent_for_token(registry, auth, name).await?;
    let record = packages::find_version(registry, &package, version).await?;
    if record.prompt_mode == Some(PromptMode::Open) {
        return Err(ServiceError::AgentOpen(format!(
            "agent {} {version} is open: its prompt.yaml is in plaintext and needs no key",
            package.name
        )));
    }
    let grants = registry
        .db
        .live_grants_to(package.id, auth.account_id)
        .await?;
    if let Some(grant) = grants.into_iter().rev().find(|g| grant_covers(g, &record)) {
        return Ok(grant.wrapped);
    }
    let owners: Vec<String> = owners::current_owners(registry, package.id)
        .await?
        .into_iter()
        .map(|o| o.username.to_string())
        .collect();
    Err(ServiceError::NoGrant(format!(
        "you ({}) hold no grant of agent {}'s prompt key that covers {version}; ask an owner \
         ({}) to run `agentlang grant {} --to {}`",
        auth.username,
        package.name,
        owners.join(", "),
        package.name,
        auth.username
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: &str = "https://registry.example";

    fn user(name: &str) -> Username {
        Username::parse(name).unwrap()
    }

    #[test]
    fn a_proof_holds_only_for_its_registry_account_recipient_and_time() {
        let key = ProofKey::derive(b"a secret of the registry, long enough to sign with");
        let recipient = core_grants::Identity::generate().recipient();
        let other = core_grants::Identity::generate().recipient();
        let alice = user("alice");
        let proof = proof_text(&key, HERE, &alice, &recipient, 1_000);
        assert!(check_proof(&key, HERE, &alice, &recipient, &proof, 999).is_ok());
        assert!(check_proof(&key, HERE, &alice, &recipient, &format!("{proof}\n"), 1_000).is_ok());
        let refused = |proof: &str, now: i64, who: &Username, to: &Recipient, origin: &str| {
            matches!(
                check_proof(&key, origin, who, to, proof, now),
                Err(ServiceError::ProofInvalid(_))
            )
        };
        // Expired, another account, recipient, registry; tampered with.
        assert!(refused(&proof, 1_001, &alice, &recipient, HERE));
        assert!(refused(&proof, 999, &user("mallory"), &recipient, HERE));
        assert!(refused(&proof, 999, &alice, &other, HERE));
        assert!(refused(
            &proof,
            999,
            &alice,
            &recipient,
            "https://other.example"
        ));
        let later = proof.replace(":1000:", ":9000:");
        assert!(refused(&later, 999, &alice, &recipient, HERE));
        let other_key = ProofKey::derive(b"another registry's secret, long enough too");
        let forged = proof_text(&other_key, HERE, &alice, &recipient, 1_000);
        assert!(refused(&forged, 999, &alice, &recipient, HERE));
        assert!(refused("", 0, &alice, &recipient, HERE));
    }

    #[test]
    fn grants_cover_their_keys_versions_and_keyless_versions_only_by_range() {
        let k1 = PromptKeyId::parse("0123456789abcdef").unwrap();
        let k2 = PromptKeyId::parse("fedcba9876543210").unwrap();
        let v = |s: &str| Version::parse(s).unwrap();
        let caret1 = semver::VersionReq::parse("^1").unwrap();
        assert!(covers(&k1, None, &v("1.0.0"), Some(&k1)));
        assert!(covers(&k1, None, &v("7.0.0"), Some(&k1)));
        assert!(!covers(&k1, None, &v("1.0.0"), Some(&k2)));
        assert!(covers(&k1, Some(&caret1), &v("1.2.0"), Some(&k1)));
        assert!(!covers(&k1, Some(&caret1), &v("2.0.0"), Some(&k1)));
        // Built before key ids were recorded: only an explicit range.
        assert!(!covers(&k1, None, &v("1.0.0"), None));
        assert!(covers(&k1, Some(&caret1), &v("1.0.0"), None));
        assert!(!covers(&k1, Some(&caret1), &v("2.0.0"), None));
    }
}
