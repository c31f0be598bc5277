//! Integration tests: the registry over real HTTP, on every backend.

mod harness;

mod accounts;
mod binary;
mod catalog;
mod errors;
mod models;
mod operations;
mod owners;
mod rate_limits;
mod storage;
mod tokens;
