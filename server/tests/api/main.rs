//! Integration tests: the registry over real HTTP, on every backend.

mod harness;

mod accounts;
mod binary;
mod clowl;
mod errors;
mod models;
mod moltspeak;
mod operations;
mod owners;
mod rate_limits;
mod storage;
mod tokens;
