//! The command line, as clap sees it. Each subcommand's `--help` carries an
//! example, because that is what people look for first.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "agentlang",
    version,
    about = "Build, sign, publish and pull AgentLang agents and tools",
    propagate_version = true,
    after_help = "Examples:\n  agentlang keygen\n  agentlang login --username alice\n  agentlang build ./my-agent\n  agentlang publish ./my-agent\n  agentlang pull research-assistant@^1"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// Registry URL [env: AGENTLANG_REGISTRY; else the config file; else http://127.0.0.1:8080]
    #[arg(long, global = true, value_name = "URL")]
    pub registry: Option<String>,
    /// API token [env: AGENTLANG_TOKEN; else the credentials file written by `login`]
    #[arg(long, global = true, value_name = "TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print machine-readable JSON on stdout
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    Agent,
    Tool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an Ed25519 signing key (PKCS#8 PEM, mode 0600) and its public half (SPKI PEM)
    #[command(after_help = "Example:\n  agentlang keygen --output ~/.config/agentlang/signing.pem")]
    Keygen {
        /// Where to write the private key; the public key goes to PATH.pub
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Overwrite an existing key
        #[arg(long)]
        force: bool,
    },
    /// Create an account on the registry and store a token for it
    #[command(after_help = "Example:\n  echo \"$PASSWORD\" | agentlang register --username alice --password-stdin")]
    Register(Credentials),
    /// Get an API token for an existing account and store it
    #[command(after_help = "Example:\n  agentlang login --username alice")]
    Login(Credentials),
    /// Manage the signing keys registered to your account
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Check a package directory; print every problem with its file and path
    #[command(after_help = "Example:\n  agentlang validate ./my-agent")]
    Validate {
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Search the registry
    #[command(after_help = "Example:\n  agentlang search research --kind agent")]
    Search {
        query: String,
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        #[arg(long, default_value_t = 1)]
        page: u32,
    },
    /// Hide a version from new resolutions (existing lockfiles keep it)
    #[command(after_help = "Examples:\n  agentlang yank web_search@1.2.0 --kind tool --reason \"leaks tokens\"\n  agentlang yank web_search@1.2.0 --kind tool --undo")]
    Yank {
        /// NAME@VERSION
        spec: String,
        #[arg(long, value_enum, default_value = "agent")]
        kind: KindArg,
        #[arg(long)]
        reason: Option<String>,
        /// Unyank instead
        #[arg(long)]
        undo: bool,
    },
    /// Print shell completions
    #[command(after_help = "Example:\n  agentlang completions bash > /etc/bash_completion.d/agentlang")]
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, Args)]
pub struct Credentials {
    #[arg(long, short)]
    pub username: String,
    /// Read the password from standard input instead of prompting
    #[arg(long)]
    pub password_stdin: bool,
    /// Scopes of the token to create
    #[arg(long, value_delimiter = ',', default_value = "publish,yank,keys,owners")]
    pub scopes: Vec<String>,
    /// Days until the token expires
    #[arg(long, default_value_t = 90)]
    pub expires_in_days: u32,
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Register a public key (SPKI PEM) with the registry
    #[command(after_help = "Example:\n  agentlang keys register ~/.config/agentlang/signing.pem.pub")]
    Register { pubkey: PathBuf },
    /// List your keys
    List,
    /// Revoke a key: later uploads signed with it are refused
    Revoke { key_id: String },
}
