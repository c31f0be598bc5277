//! Integration tests: the registry over real HTTP, on every backend.

mod harness;

mod accounts;
mod binary;
mod catalog;
mod errors;
mod index;
mod keys;
mod models;
mod operations;
mod owners;
mod packages;
mod publish;
mod rate_limits;
mod resolve;
mod search;
mod storage;
mod tokens;
