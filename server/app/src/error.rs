//! [`ServiceError`]: what a rule refuses, and why, with no status code. The
//! HTTP layer maps each variant to one problem type (and so one status);
//! the catalog maps it to a page.

use serde::Serialize;
use store::names::Scope;

pub use agentlang_core::lockcheck::ProblemKind as LockProblemKind;
pub use agentlang_core::rules::Rule;

/// One invalid input, named by its JSON field path (`scopes[1]`). A
/// problem inside an uploaded package also names the package file and the
/// path in it, exactly as `agentlang validate` prints them; `field` is then
/// `file:path`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    pub field: String,
    pub message: String,
    /// The package member the problem is in (`specialists/x.yaml`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The path inside that file (`tools[0].version`); empty for the
    /// document as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The named rule the problem breaks (`permission-mode`), when it is
    /// one: the slug of its own problem type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            file: None,
            path: None,
            rule: None,
        }
    }

    /// A problem at `path` inside the package member `file`.
    pub fn in_file(file: &str, path: &str, message: impl Into<String>) -> Self {
        Self {
            field: if path.is_empty() {
                file.to_owned()
            } else {
                format!("{file}:{path}")
            },
            message: message.into(),
            file: Some(file.to_owned()),
            path: Some(path.to_owned()),
            rule: None,
        }
    }

    /// The same problem, marked as breaking `rule`.
    pub fn breaking(mut self, rule: Option<Rule>) -> Self {
        self.rule = rule.map(|r| r.slug().to_owned());
        self
    }
}

/// Why a rule refused. One variant per fact a client can act on.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("the request failed validation")]
    Validation(Vec<FieldError>),
    /// An uploaded package breaks a named rule of its format: the first
    /// one broken, in [`Rule::ALL`]'s order; `errors` lists every problem
    /// of the package, each with its own rule where it has one.
    #[error("{}", .0.title())]
    RuleBroken(Rule, Vec<FieldError>),
    /// What was sent cannot be read at all (not the JSON, YAML or form the
    /// rule takes).
    #[error("malformed request: {0}")]
    Malformed(String),
    #[error("the request body is larger than {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("authentication required: {0}")]
    Unauthenticated(String),
    #[error("wrong username or password")]
    InvalidCredentials,
    /// The token does not carry the scope the route needs.
    #[error("the token lacks the {:?} scope", .0.as_str())]
    MissingScope(Scope),
    /// The token is restricted to packages this one is not among.
    #[error("the token is not valid for the package {0}")]
    TokenNotForPackage(String),
    #[error("only an admin may do this")]
    AdminRequired,
    /// An owner tried to remove one who has been an owner longer.
    #[error("{0}")]
    SeniorOwner(String),
    #[error("registration of new accounts is closed on this registry")]
    RegistrationClosed,
    #[error("{0} not found")]
    NotFound(String),
    /// The agent version exists but declares no A2A interface the
    /// registry can make a card of; the message says why.
    #[error("{0}")]
    NoA2aInterface(String),
    /// A `Range` none of whose bytes the resource has; `size` is its
    /// length.
    #[error("the range asked for is outside the {size} bytes there are")]
    RangeNotSatisfiable { size: u64 },
    #[error("{0}")]
    Conflict(String),
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    #[error("not ready: {0}")]
    Unavailable(String),
    /// The upload is not a valid container; the core error's text.
    #[error("{0}")]
    ContainerInvalid(String),
    #[error("{0}")]
    SignatureInvalid(String),
    #[error("{0}")]
    KeyRevoked(String),
    #[error("{0}")]
    UnknownKey(String),
    /// A witness's cosignature does not verify.
    #[error("{0}")]
    CosignatureInvalid(String),
    /// No signature by a configured witness.
    #[error("{0}")]
    UnknownWitness(String),
    #[error("{0}")]
    NotOwner(String),
    /// The caller holds no live grant of the agent's prompt key that
    /// covers the version; the message names the owners to ask.
    #[error("{0}")]
    NoGrant(String),
    /// A prompt recipient's registration proof is not the registry's
    /// answer for this account, origin and recipient, or has expired.
    #[error("{0}")]
    ProofInvalid(String),
    /// The account holds the most prompt recipients it may.
    #[error("{0}")]
    TooManyRecipients(String),
    /// The agent holds the most live grants it may.
    #[error("{0}")]
    TooManyGrants(String),
    /// The agent (or version) is open: its prompt needs no key.
    #[error("{0}")]
    AgentOpen(String),
    /// A grant to an account that registered no prompt recipient.
    #[error("{0}")]
    NoRecipients(String),
    /// A look-alike of an existing name; the message names its spelling.
    #[error("{0}")]
    NameTaken(String),
    #[error("{0}")]
    VersionExists(String),
    /// The package or version is quarantined (docs/statuses.md): no
    /// download, resolution or upload; the message names it.
    #[error("{0}")]
    Quarantined(String),
    /// The package is archived: it takes no new versions.
    #[error("{0}")]
    Archived(String),
    /// Second factor: the account has one and the request gave no code.
    #[error("{0}")]
    TwoFactorCodeRequired(String),
    /// Second factor: the code is wrong, expired or used already.
    #[error("{0}")]
    TwoFactorCodeInvalid(String),
    /// Second factor: the package's policy requires the acting owner to
    /// have one, and they have none.
    #[error("{0}")]
    TwoFactorEnrolmentRequired(String),
    /// Second factor: the package's policy takes publishes only from tokens
    /// minted with a code (or trusted-publishing tokens).
    #[error("{0}")]
    TwoFactorRequired(String),
    /// agent.lock does not tell the truth about the package or the
    /// registry: one kind per failure, one field error per tool or file
    /// (`tools.<name>`, `files.<path>`, `agents.<name>`, `models.<id>`).
    #[error("{}", lock_detail(*.0))]
    Lock(LockProblemKind, Vec<FieldError>),
    /// No versions meet the requirements: the explanation, and the facts
    /// behind it (the `conflicts` of the problem).
    #[error("{explanation}")]
    Unsatisfiable {
        explanation: String,
        conflicts: serde_json::Value,
    },
    #[error("resolution did not finish within {0} ms")]
    ResolveTimeout(u64),
    /// The solver's work bound ended the resolution (the reason in words).
    #[error("{0}")]
    ResolveTooComplex(String),
    /// Anything the client cannot fix. Its cause is logged, never sent.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
    /// Trusted publishing: an ID token refused, one kind per reason (the
    /// message says what was seen).
    #[error("{1}")]
    Oidc(OidcRefusal, String),
    /// Trusted publishing: the package's policy takes only trusted tokens.
    #[error("{0}")]
    TrustedPublishingRequired(String),
    /// Staged releases: the version's number is held by a staged version
    /// (pending or rejected).
    #[error("{0}")]
    VersionStaged(String),
    /// Staged releases: the package's policy takes new versions only
    /// staged.
    #[error("{0}")]
    StagingRequired(String),
    /// Staged releases: the staged version was approved or rejected
    /// already.
    #[error("{0}")]
    StagedDecided(String),
    /// Provenance: the envelope sent with a publish does not verify, or
    /// does not name the container (docs/provenance.md).
    #[error("{0}")]
    ProvenanceInvalid(String),
}

impl ServiceError {
    pub fn internal(err: impl Into<anyhow::Error>) -> Self {
        Self::Internal(err.into())
    }
}

/// What each kind of lock failure means, in one sentence.
fn lock_detail(kind: LockProblemKind) -> &'static str {
    match kind {
        LockProblemKind::Missing => "every agent must carry an agent.lock",
        LockProblemKind::Files => {
            "agent.lock's files section does not hash exactly the package's members"
        }
        LockProblemKind::Agents => {
            "agent.lock's agents section does not pin the co-located subagents by hash"
        }
        LockProblemKind::Models => {
            "agent.lock's models section names models the agent does not declare"
        }
        LockProblemKind::ModelsUnlocked => {
            "agent.lock's models section does not lock every model the agent declares"
        }
        LockProblemKind::NotInRegistry => {
            "agent.lock pins tool versions this registry does not hold"
        }
        LockProblemKind::Unpinned => {
            "a tool requirement of the agent or of a pinned tool has no pin in agent.lock"
        }
        LockProblemKind::Unsatisfied => {
            "a pin in agent.lock does not satisfy the requirement it answers"
        }
        LockProblemKind::InterfaceUnprovided => {
            "agent.lock records a provider for an interface that its pinned version does not provide"
        }
        LockProblemKind::Unrelated => "agent.lock pins tools no requirement leads to",
        LockProblemKind::Yanked => {
            "agent.lock pins yanked versions the previous version did not pin"
        }
    }
}

impl From<store::Error> for ServiceError {
    /// A database that cannot be reached (no connection within the
    /// configured timeout, a refused or broken connection) is unavailable:
    /// the client may retry, and nothing was written. Anything else is a
    /// bug.
    fn from(err: store::Error) -> Self {
        if store::is_unreachable(&err) {
            tracing::warn!(error = %err, "the database is unreachable");
            Self::Unavailable("the database is unavailable; retry shortly".to_owned())
        } else {
            Self::Internal(err.into())
        }
    }
}

impl From<store::blobs::BlobError> for ServiceError {
    /// Object storage failing (unreachable, timing out, answering 5xx) is
    /// unavailable: nothing was written that a retry would not write again.
    /// A blob whose bytes no longer match its key is a bug.
    fn from(err: store::blobs::BlobError) -> Self {
        match err {
            store::blobs::BlobError::Corrupt(_) => Self::internal(err),
            other => {
                tracing::warn!(error = %other, "object storage failed");
                Self::Unavailable("blob storage is unavailable; retry shortly".to_owned())
            }
        }
    }
}

/// Why an ID token was refused (trusted publishing): each its own problem
/// type. Here rather than in `trusted_publishing`, which every module would
/// otherwise reach through this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OidcRefusal {
    UnknownIssuer,
    BadSignature,
    WrongAudience,
    Expired,
    Replayed,
    NoTrustedPublisher,
    Malformed,
}
