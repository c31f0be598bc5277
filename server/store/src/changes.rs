//! The changes journal (migration 0031): what each registry generation
//! changed, written by the triggers that bump it in the same transaction.
//! A cache at generation g that reads g' asks what (g, g'] changed and
//! drops only that; a generation the journal does not hold (pruned, or
//! bumped without a row) reads as [`Change::Everything`], so a gap can
//! only cost a cache its entries, never keep a stale one.

use std::collections::HashSet;

use agentlang_core::Kind;

use super::{Db, with_pool};

/// What one generation changed, as one journal row says it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Change {
    /// Anything may have changed (models, protocols, an unreadable row, a
    /// generation the journal does not hold).
    Everything,
    /// A package's own facts: versions, yanks, owners, stored facts, its
    /// signers' revocations. Names are normalized.
    Package(Kind, String),
    /// Which versions depend on or pin this package (a tool's page lists
    /// them).
    Dependents(Kind, String),
    /// Nothing one package shows; only answers listing many packages.
    Listings,
}

/// Generations read at most per call: a cache further behind drops
/// everything rather than read thousands of rows.
pub const MAX_SPAN: i64 = 1_000;

/// Rows read at most per call, for the same reason.
const MAX_ROWS: i64 = 10_000;

/// One row as stored; read as text so a row written by a later version
/// (another kind or scope) is [`Change::Everything`], not an error.
#[derive(sqlx::FromRow)]
struct Row {
    generation: i64,
    scope: String,
    kind: Option<String>,
    normalized_name: Option<String>,
}

impl Row {
    fn change(self) -> Change {
        let package = self
            .kind
            .as_deref()
            .and_then(|kind| kind.parse::<Kind>().ok())
            .zip(self.normalized_name);
        match (self.scope.as_str(), package) {
            ("package", Some((kind, name))) => Change::Package(kind, name),
            ("dependents", Some((kind, name))) => Change::Dependents(kind, name),
            ("listings", _) => Change::Listings,
            _ => Change::Everything,
        }
    }
}

impl Db {
    /// What the generations after `after` up to `through` changed, in one
    /// query: each distinct change once, or `[Everything]` when the journal
    /// does not hold every one of those generations (or they are more than
    /// [`MAX_SPAN`]). Empty when `through <= after`.
    pub async fn changes_between(
        &self,
        after: i64,
        through: i64,
    ) -> Result<Vec<Change>, sqlx::Error> {
        if through <= after {
            return Ok(Vec::new());
        }
        if through - after > MAX_SPAN {
            return Ok(vec![Change::Everything]);
        }
        let rows: Vec<Row> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT generation, scope, kind, normalized_name FROM registry_changes
                 WHERE generation > $1 AND generation <= $2 LIMIT $3",
            )
            .bind(after)
            .bind(through)
            .bind(MAX_ROWS + 1)
            .fetch_all(pool)
            .await
        })?;
        Ok(summarize(after, through, rows))
    }
}

/// The distinct changes of `rows`, or `[Everything]` when they leave out
/// a generation of (after, through] or may have been cut at [`MAX_ROWS`].
fn summarize(after: i64, through: i64, rows: Vec<Row>) -> Vec<Change> {
    let held: HashSet<i64> = rows.iter().map(|r| r.generation).collect();
    let whole = i64::try_from(rows.len()).is_ok_and(|n| n <= MAX_ROWS)
        && i64::try_from(held.len()).is_ok_and(|n| n == through - after);
    let changes: HashSet<Change> = rows.into_iter().map(Row::change).collect();
    if !whole || changes.contains(&Change::Everything) {
        return vec![Change::Everything];
    }
    changes.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(generation: i64, scope: &str, kind: Option<&str>, name: Option<&str>) -> Row {
        Row {
            generation,
            scope: scope.to_owned(),
            kind: kind.map(str::to_owned),
            normalized_name: name.map(str::to_owned),
        }
    }

    #[test]
    fn every_generation_must_be_held() {
        let rows = || {
            vec![
                row(4, "package", Some("tool"), Some("a")),
                row(4, "dependents", Some("tool"), Some("b")),
                row(5, "package", Some("tool"), Some("a")),
            ]
        };
        let mut changes = summarize(3, 5, rows());
        changes.sort_by_key(|c| format!("{c:?}"));
        assert_eq!(
            changes,
            [
                Change::Dependents(Kind::Tool, "b".into()),
                Change::Package(Kind::Tool, "a".into()),
            ]
        );
        // Generation 3 has no row: pruned, or bumped without one.
        assert_eq!(summarize(2, 5, rows()), [Change::Everything]);
    }

    #[test]
    fn an_unknown_or_incomplete_row_is_everything() {
        for odd in [
            row(1, "package", Some("plugin"), Some("a")),
            row(1, "package", None, Some("a")),
            row(1, "dependents", Some("tool"), None),
            row(1, "a later scope", None, None),
        ] {
            let rows = vec![row(1, "listings", None, None), odd];
            assert_eq!(summarize(0, 1, rows), [Change::Everything]);
        }
        assert_eq!(
            summarize(0, 1, vec![row(1, "listings", None, None)]),
            [Change::Listings]
        );
    }
}
