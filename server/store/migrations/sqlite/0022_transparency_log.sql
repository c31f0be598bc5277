-- The transparency log (c2sp.org/tlog-tiles, tlog-checkpoint). Keep it in
-- step with the other dialect's file.
--
-- An entry is appended in the transaction of the change it records (so
-- neither is ever visible without the other), under a lock that makes
-- indexes dense and ordered by commit (db::tlog::AppendLog). The sequencer
-- later integrates entries into the Merkle tree and signs a checkpoint, in
-- one transaction: a crash between the two leaves entries waiting, never
-- lost or reordered.
CREATE TABLE log_entries (
    idx        INTEGER PRIMARY KEY CHECK (idx >= 0),
    entry      BLOB NOT NULL, -- RFC 8785 canonical JSON (core::tlog::LogEntry)
    created_at INTEGER NOT NULL
);

-- The tree as Go sumdb's stored hashes: index i is
-- tlog_tiles::stored_hash_index's numbering; a tree of n entries has
-- 2n - popcount(n) of them. Written only by the sequencer, never updated.
CREATE TABLE log_hashes (
    idx  INTEGER PRIMARY KEY CHECK (idx >= 0),
    hash BLOB NOT NULL
);

-- Every checkpoint the sequencer signed: the served one is the largest.
CREATE TABLE log_checkpoints (
    size       INTEGER PRIMARY KEY CHECK (size >= 0),
    root       BLOB NOT NULL,
    note       TEXT NOT NULL, -- the signed note, with the log's signature only
    created_at INTEGER NOT NULL
);

-- Witnesses' cosignatures (c2sp.org/tlog-cosignature) of a checkpoint: the
-- note's signature line, served after the log's own.
CREATE TABLE log_cosignatures (
    size       INTEGER NOT NULL REFERENCES log_checkpoints (size),
    witness    TEXT NOT NULL, -- the witness key's name
    line       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (size, witness)
);

-- The entry of a version's publish, and of its latest yank or unyank.
ALTER TABLE versions ADD COLUMN log_index INTEGER;
ALTER TABLE versions ADD COLUMN yank_log_index INTEGER;
