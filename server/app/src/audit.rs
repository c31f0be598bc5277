//! The per-account audit list: sign-ins, password changes, tokens, keys and
//! ownership, as the account holder sees them in the catalog and the API.

use crate::{Registry, ServiceError};
use store::audit::AuditRecord;

/// Events an account page or API answer lists at most.
pub const MAX_LISTED: i64 = 100;

/// Records an event of the account. A change that happened stays done if
/// its record cannot be written: the failure is logged, not answered.
pub async fn record(registry: &Registry, account_id: i64, action: &str, detail: &str) {
    if let Err(e) = registry.db.record_audit(account_id, action, detail).await {
        tracing::warn!(error = %e, account_id, action, "cannot record an audit event");
    }
}

/// The account's latest events, newest first.
pub async fn list(registry: &Registry, account_id: i64) -> Result<Vec<AuditRecord>, ServiceError> {
    Ok(registry.db.list_audit(account_id, MAX_LISTED).await?)
}
