//! The command line, as clap sees it. Each subcommand's `--help` carries an
//! example, because that is what people look for first.

use std::path::PathBuf;

use agentlang_core::Kind;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::release_age::MinReleaseAge;

#[derive(Debug, Parser)]
#[command(
    name = "agentlang",
    version,
    about = "Build, sign, publish and pull AgentLang agents and tools",
    propagate_version = true,
    after_help = "Examples:\n  agentlang keygen\n  agentlang login --username alice\n  agentlang build ./my-agent\n  agentlang publish ./my-agent\n  agentlang pull research-assistant@^1\n\nEnvironment:\n  AGENTLANG_HTTP_TIMEOUT  seconds to wait for the registry to connect, to start answering\n                          or to send more of an answer (default 30); an answer must arrive\n                          whole within 4 times that, a download or upload within that\n                          plus its size at 16 KiB/s"
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
    /// Print only errors and warnings: no results (unless --json), notes or progress
    #[arg(long, short, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also say on stderr every HTTP request made and the status it got
    #[arg(long, short, global = true)]
    pub verbose: bool,
    /// The registry's transparency-log key (`<name>+<id>+<base64>`, as GET /log/key serves it) [env: AGENTLANG_LOG_KEY; else the key pinned on first use]
    #[arg(long, global = true, value_name = "VKEY", env = "AGENTLANG_LOG_KEY")]
    pub log_key: Option<String>,
    /// A witness's verifier key whose cosignatures count (repeatable)
    #[arg(long = "witness", global = true, value_name = "VKEY")]
    pub witnesses: Vec<String>,
    /// Require this many of the --witness keys to have cosigned the log's checkpoint
    #[arg(long, global = true, value_name = "N", default_value_t = 0)]
    pub require_witnesses: usize,
    /// Second factor: a TOTP code (or a recovery code) for an act that asks for one; else asked on a terminal
    #[arg(
        long,
        global = true,
        value_name = "CODE",
        env = "AGENTLANG_OTP",
        hide_env_values = true
    )]
    pub otp: Option<String>,
}

/// What `agentlang new` starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NewKind {
    /// agent.yaml, prompt.yaml and a README
    Agent,
    /// tool.yaml and a README
    Tool,
    /// An Agent Skills folder: SKILL.md (name, description, metadata.version)
    Skill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    Agent,
    Tool,
    Protocol,
    Skill,
}

impl KindArg {
    pub fn kind(self) -> Kind {
        match self {
            KindArg::Agent => Kind::Agent,
            KindArg::Tool => Kind::Tool,
            KindArg::Protocol => Kind::Protocol,
            KindArg::Skill => Kind::Skill,
        }
    }

    pub fn plural(self) -> &'static str {
        match self {
            KindArg::Agent => "agents",
            KindArg::Tool => "tools",
            KindArg::Protocol => "protocols",
            KindArg::Skill => "skills",
        }
    }
}

/// An advisory's level (docs/advisories.md), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SeverityArg {
    Low,
    Moderate,
    High,
    Critical,
}

impl SeverityArg {
    pub fn level(self) -> agentlang_core::advisories::Severity {
        use agentlang_core::advisories::Severity;
        match self {
            SeverityArg::Low => Severity::Low,
            SeverityArg::Moderate => Severity::Moderate,
            SeverityArg::High => Severity::High,
            SeverityArg::Critical => Severity::Critical,
        }
    }
}

/// A package's or a version's status (docs/statuses.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Active,
    Deprecated,
    /// A package only: no new versions
    Archived,
    /// Admins only: no downloads, no resolution
    Quarantined,
}

impl StatusArg {
    pub fn as_str(self) -> &'static str {
        match self {
            StatusArg::Active => "active",
            StatusArg::Deprecated => "deprecated",
            StatusArg::Archived => "archived",
            StatusArg::Quarantined => "quarantined",
        }
    }
}

/// What `--deny` turns into failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DenyLevel {
    /// Warnings fail the command, like errors.
    Warnings,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a package: a directory that validates, builds and publishes as it is
    #[command(
        after_help = "Examples:\n  agentlang new agent my-agent\n  agentlang new tool web_lookup --path tools/web_lookup\n  agentlang new skill pdf-tools\n\nThe files say where their format is described (docs/ in the registry's\nrepository, /docs/ on a registry)."
    )]
    New {
        #[arg(value_enum)]
        kind: NewKind,
        /// The package name: ASCII letters, digits, `-` and `_`
        name: String,
        /// The directory to create (it must not exist or be empty) [default: ./NAME]
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Create an Ed25519 signing key (PKCS#8 PEM, mode 0600) and its public half (SPKI PEM), or with --prompt an age identity for opening sealed agents granted to you
    #[command(
        after_help = "Examples:\n  agentlang keygen --output ~/.config/agentlang/signing.pem\n  agentlang keygen --prompt   # <config>/prompt.identity; then: agentlang keys register --prompt"
    )]
    Keygen {
        /// Where to write the private key; the public key goes to PATH.pub
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Overwrite an existing key
        #[arg(long)]
        force: bool,
        /// Make a prompt identity (age X25519, mode 0600) instead: what grants of sealed agents are wrapped to
        #[arg(long)]
        prompt: bool,
    },
    /// Create an account on the registry and store a token for it
    #[command(
        after_help = "Example:\n  echo \"$PASSWORD\" | agentlang register --username alice --password-stdin"
    )]
    Register(Credentials),
    /// Get an API token for an existing account and store it
    #[command(
        after_help = "Examples:\n  agentlang login --username alice\n  agentlang login --username alice --force --scopes publish   # a new token, other scopes\n\nA token already stored for this account and registry is kept while the registry\naccepts it and has a week left; --force mints a new one (and revokes the old)."
    )]
    Login(LoginArgs),
    /// Show whose token this is: the account the registry says it belongs to
    #[command(after_help = "Examples:\n  agentlang whoami\n  agentlang whoami --json")]
    Whoami,
    /// Revoke the stored token on the registry and remove it from credentials.toml
    #[command(
        after_help = "Examples:\n  agentlang logout\n  agentlang logout --registry https://registry.example"
    )]
    Logout,
    /// Show the settings in effect and where each came from (flag, environment, file, default)
    #[command(
        after_help = "Examples:\n  agentlang config\n  agentlang config --json\n  agentlang config path   # where config.toml is (or would be)"
    )]
    Config {
        #[command(subcommand)]
        command: Option<ConfigCommand>,
    },
    /// Manage the signing keys registered to your account
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Check a package directory; print every problem with its file and path
    #[command(after_help = "Example:\n  agentlang validate ./my-agent")]
    Validate {
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Resolve the agent's tools and models over HTTP into DIR/agent.lock
    #[command(
        after_help = "Examples:\n  agentlang lock ./my-agent\n  agentlang lock ./my-agent --update   # move every tool to its newest allowed version\n  agentlang lock ./my-agent --update --accept-risk   # even if a tool now asks for more\n\nWith --update, a lock whose tools would give the agent new powers is shown as a\ntrust diff and written only after you answer yes (on a terminal) or with --accept-risk."
    )]
    Lock {
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Re-resolve from scratch instead of keeping the versions already locked
        #[arg(long)]
        update: bool,
        /// Write the updated lock even when its tools can do more than before
        #[arg(long, requires = "update")]
        accept_risk: bool,
        /// Skip versions published less than DURATION ago (3d, 36h; 0 for none) [env: AGENTLANG_MIN_RELEASE_AGE; else the config file's min_release_age]
        #[arg(long, value_name = "DURATION")]
        min_release_age: Option<MinReleaseAge>,
    },
    /// Validate, lock, encrypt the prompt, sign and pack a directory into NAME@VERSION.agent (or .tool, .protocol)
    #[command(
        after_help = "Examples:\n  agentlang build ./my-agent\n  agentlang build ./my-agent --quality --deny warnings\n  agentlang build ./web_search --output dist/web_search.tool\n  SOURCE_DATE_EPOCH=1700000000 agentlang build ./my-agent   # reproducible bytes"
    )]
    Build(BuildArgs),
    /// Review an agent's prompt against its spec: rule findings, plus a model's when AGENTLANG_REVIEW_URL is set
    #[command(
        after_help = "Examples:\n  agentlang quality ./my-agent\n  agentlang quality ./my-agent --deny warnings --json\n  AGENTLANG_REVIEW_URL=https://api.example.com/v1 AGENTLANG_REVIEW_KEY=... agentlang quality ./my-agent"
    )]
    Quality {
        #[arg(default_value = ".")]
        dir: PathBuf,
        #[command(flatten)]
        review: ReviewArgs,
    },
    /// Check and replay AgentLang event logs (JSON lines, a JSON array, or YAML `events:`)
    #[command(subcommand)]
    Events(EventsCommand),
    /// Show a container: manifest, signer, members, lock, permissions (and the prompt, given its key)
    #[command(
        after_help = "Examples:\n  agentlang inspect research-assistant@1.0.0.agent\n  agentlang inspect research-assistant@1.0.0.agent --prompt-key ~/.config/agentlang/research_assistant.prompt.key\n  agentlang inspect ./research-assistant   # an install directory: its agent\n  agentlang inspect ./my-agent             # a package folder: validated, what it can do once built"
    )]
    Inspect {
        /// A container file, an install directory, or an agent's package folder
        file: PathBuf,
        /// The publisher's prompt key, to decrypt and show the compiled prompt
        #[arg(long, value_name = "FILE")]
        prompt_key: Option<PathBuf>,
    },
    /// Compare what two agent versions can do: capabilities, commands, endpoints, tools, sandbox, signer
    #[command(
        after_help = "Examples:\n  agentlang diff research-assistant@1.0.0.agent research-assistant@1.1.0.agent\n  agentlang diff research-assistant@1.0.0 research-assistant@1.1.0   # versions in the registry\n  agentlang diff research-assistant@1.0.0 ./research-assistant@1.1.0.agent --json\n  agentlang diff research-assistant@1.0.0 research-assistant@1.1.0 --exit-code   # in CI: exit 1 on more power\n\nThe first line says whether the risk rises; then one line per change, those\nthat give the newer side a power the older did not have first."
    )]
    Diff {
        /// The older side: a .agent file, or NAME@VERSION of an agent in the registry
        from: String,
        /// The newer side: a .agent file, or NAME@VERSION of an agent in the registry
        to: String,
        /// Exit 1 when a change gives the newer side more power (risk rises), else 0, as `git diff --exit-code` does for changes
        #[arg(long)]
        exit_code: bool,
    },
    /// List the security advisories affecting what DIR's agent.lock pins; exit 1 when any is at or above --severity
    #[command(
        after_help = "Examples:\n  agentlang audit\n  agentlang audit ./research-assistant --severity high\n  agentlang audit --json\n\nOne line per advisory per affected pin: level, advisory id, pin, summary.\nLevels, lowest first: low, moderate, high, critical. See /docs/advisories."
    )]
    Audit {
        /// The agent's directory (with its agent.lock)
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Exit 1 when an advisory at or above this level affects a pin
        #[arg(long, value_enum, default_value_t = SeverityArg::Low)]
        severity: SeverityArg,
    },
    /// Check a container (structure, hashes, signature) or an install directory (every check of install, offline); exit 0 only when all hold
    #[command(
        after_help = "Examples:\n  agentlang verify web_search@1.2.0.tool                  # signer's key from the registry\n  agentlang verify web_search@1.2.0.tool --pubkey pub.pem # offline\n  agentlang verify ./research-assistant                   # an install directory, offline"
    )]
    Verify {
        /// A .agent / .tool file, or a directory made by `agentlang install`
        path: PathBuf,
        /// Check a file against this public key (SPKI PEM) instead of asking the registry
        #[arg(long, value_name = "PEM")]
        pubkey: Option<PathBuf>,
    },
    /// Download an agent and every tool its lock pins, verify them all, and install them into a directory
    #[command(
        after_help = "Examples:\n  agentlang install research-assistant\n  agentlang install research-assistant@^1 --dir agents/research --host claude-desktop\n  agentlang install research-assistant@^1 --frozen   # refuse if the registry would now pick another version"
    )]
    Install {
        /// NAME or NAME@REQUIREMENT (Cargo rules: `1.2` means `^1.2`)
        spec: String,
        /// The install directory [default: ./NAME]
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Refuse to change what DIR holds: fail if the registry would now resolve differently
        #[arg(long)]
        frozen: bool,
        /// Replace the installed version even when the new one can do more (the changes are shown otherwise)
        #[arg(long)]
        accept_risk: bool,
        /// Also check the agent against this host (a built-in name, one of yours, or a host file)
        #[arg(long, value_name = "NAME|FILE")]
        host: Option<String>,
        /// A sealed agent's prompt key, instead of the one granted to you
        #[arg(long, value_name = "FILE")]
        prompt_key: Option<PathBuf>,
        /// Skip agent versions published less than DURATION ago (3d, 36h; 0 for none); warn about younger pinned tools [env: AGENTLANG_MIN_RELEASE_AGE; else the config file's min_release_age]
        #[arg(long, value_name = "DURATION")]
        min_release_age: Option<MinReleaseAge>,
    },
    /// Check whether a host grants what an agent asks for: granted, downgraded, degraded or refused, per capability
    #[command(
        after_help = "Examples:\n  agentlang check ./research-assistant --host claude-desktop\n  agentlang check research-assistant@1.0.0.agent --host mobile-app\n  agentlang check ./my-agent --host ~/kiosk.yaml\n\nBuilt-in hosts: claude-desktop, replit-agent, desktop-app, mobile-app, browser-extension, local.\nAdd your own as <config>/hosts/NAME.yaml."
    )]
    Check {
        /// An install directory, a package directory or a .agent file
        path: PathBuf,
        #[arg(long, value_name = "NAME|FILE", default_value = "local")]
        host: String,
    },
    /// Verify and install an agent (or use a directory), check the host, and hand it to a runtime
    #[command(
        after_help = "Examples:\n  agentlang run research-assistant@^1 --prompt \"Research X\" --runtime \"python3 runner.py\"\n  agentlang run ./my-agent --prompt \"Research X\" --host claude-desktop\n  AGENTLANG_RUNTIME=./runner agentlang run ./research-assistant --prompt \"Research X\" --prompt-key research_assistant.prompt.key\n\nThe runtime reads the hand-off (JSON, format agentlang.handoff/1) on standard input;\nits path is also in AGENTLANG_HANDOFF. Its exit code is run's. With no runtime\nconfigured, run prints the hand-off."
    )]
    Run(RunArgs),
    /// Share a sealed agent's prompt key with an account, revoke it, or list grants
    #[command(
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true,
        after_help = "Examples:\n  agentlang grant trip-planner --to bob\n  agentlang grant trip-planner --to bob --versions '^1'\n  agentlang grant trip-planner --to bob --revoke\n  agentlang grant list trip-planner   # who holds grants (owners)\n  agentlang grant list                # what was granted to you\n\nThe key is wrapped to bob's registered prompt recipients (age) on this machine;\nthe registry never sees it. Revoking stops future fetches; it cannot take back a\nkey already fetched (docs/prompt-grants.md)."
    )]
    Grant(GrantArgs),
    /// Upload a container (building it first when given a directory)
    #[command(
        after_help = "Examples:\n  agentlang publish research-assistant@1.0.0.agent\n  agentlang publish ./my-agent\n  agentlang publish ./my-agent --open   # prompt in plaintext: anyone may read and run it"
    )]
    Publish {
        /// A .agent / .tool file, or a package directory to build first
        path: PathBuf,
        #[command(flatten)]
        build: BuildKeys,
        /// Staged releases: stage the version for an owner to approve (`agentlang stage approve ID`) instead of publishing it
        #[arg(long)]
        stage: bool,
        /// A DSSE envelope (in-toto statement, subject = the container's SHA-256, signed by one of your registered keys) to publish with it; see /docs/provenance
        #[arg(long, value_name = "FILE")]
        provenance: Option<PathBuf>,
    },
    /// Show a version's provenance (where and how it was built), verified here
    #[command(after_help = "Examples:
  agentlang provenance web_search@1.2.0
  agentlang provenance research-assistant@1.0.0 --kind agent --json

The signature is checked with the key the envelope names (the publisher's registered key, or the registry's own for a trusted-publishing run) and the subject against the version's SHA-256. See /docs/provenance.")]
    Provenance {
        /// NAME@VERSION
        spec: String,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
    /// Download a package, check its hash and signature, and save it
    #[command(
        after_help = "Examples:\n  agentlang pull research-assistant\n  agentlang pull web_search@^1.2 --kind tool --output tools/web_search.tool"
    )]
    Pull {
        /// NAME or NAME@REQUIREMENT (Cargo rules: `1.2` means `^1.2`)
        spec: String,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Where to write the container [default: ./NAME@VERSION.KIND]
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// PromptLang tools
    #[command(subcommand)]
    Prompt(PromptCommand),
    /// The registry's transparency log: audit it whole, or list its entries
    #[command(subcommand)]
    Log(LogCommand),
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
    #[command(
        after_help = "Examples:\n  agentlang yank web_search@1.2.0 --kind tool --reason \"leaks tokens\"\n  agentlang yank web_search@1.2.0 --kind tool --undo"
    )]
    Yank {
        /// NAME@VERSION
        spec: String,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        #[arg(long)]
        reason: Option<String>,
        /// Unyank instead
        #[arg(long)]
        undo: bool,
    },
    /// Set a package's or a version's status: deprecated (with a reason and perhaps a successor), archived (no new versions), active again; quarantined by admins only
    #[command(
        after_help = "Examples:\n  agentlang status web_search deprecated --kind tool --reason \"unmaintained\" --successor http_search\n  agentlang status web_search@1.2.0 deprecated --reason \"leaks tokens in logs\"\n  agentlang status web_search archived\n  agentlang status web_search active\n\nArchived packages take no new versions; quarantined ones (an admin's token with the admin scope) are neither downloaded nor resolved. `lock` and `install` warn about pins that are not active. See /docs/statuses."
    )]
    Status {
        /// NAME (the package) or NAME@VERSION (one version)
        spec: String,
        #[arg(value_enum)]
        status: StatusArg,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Why (at most 500 characters)
        #[arg(long)]
        reason: Option<String>,
        /// With `deprecated`: the package (of the same kind) to use instead
        #[arg(long)]
        successor: Option<String>,
    },
    /// List, invite or remove a package's owners (like `cargo owner`), or answer an invitation
    #[command(
        after_help = "Examples:\n  agentlang owner web_search --list\n  agentlang owner web_search --add bob,carol   # invitations: each becomes an owner on accepting\n  agentlang owner web_search --accept          # as bob\n  agentlang owner web_search --remove carol --kind tool\n\nAn owner may remove owners who joined after them, and themselves."
    )]
    Owner(OwnerArgs),
    /// Show or change a package's publishing policy: trusted publishing only, a required second factor, mandatory staging
    #[command(
        after_help = "Examples:\n  agentlang publishing web_search                      # show it\n  agentlang publishing web_search --trusted-only on    # only CI runs it trusts may publish\n  agentlang publishing web_search --require-2fa on --require-stage on\n\nEach switch given is set; the others are kept. Owners only. See /docs/publishing-policy."
    )]
    Publishing {
        /// The package
        name: String,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// Only trusted-publishing tokens (OpenID Connect) may publish
        #[arg(long, value_name = "on|off", value_parser = on_off)]
        trusted_only: Option<bool>,
        /// Owners need a second factor; a publish needs a token minted with one
        #[arg(long = "require-2fa", value_name = "on|off", value_parser = on_off)]
        require_2fa: Option<bool>,
        /// Every new version is staged and published only when an owner approves it
        #[arg(long, value_name = "on|off", value_parser = on_off)]
        require_stage: Option<bool>,
    },
    /// Print shell completions
    #[command(
        after_help = "Example:\n  agentlang completions bash > /etc/bash_completion.d/agentlang"
    )]
    Completions { shell: clap_complete::Shell },
    /// Second factor (TOTP): enable, confirm, disable or show it for your account
    #[command(
        name = "2fa",
        subcommand,
        after_help = "Examples:\n  agentlang 2fa enable            # asks the password, shows the secret, asks a code\n  agentlang 2fa confirm 123456     # when enable ran without a terminal\n  agentlang 2fa status\n  agentlang 2fa disable --otp 123456\n\nOnce enabled, login, owner, status and publishing changes need a code: --otp CODE,\nAGENTLANG_OTP, or a prompt on a terminal. See /docs/two-factor."
    )]
    TwoFa(TwoFaCommand),
    /// Trusted publishing: the CI identities (OpenID Connect) a package trusts to publish it
    #[command(
        after_help = "Examples:\n  agentlang trust add my_tool --issuer https://token.actions.githubusercontent.com --repository acme/my-tool --workflow release.yml\n  agentlang trust list my_tool      # the trusted identities and the tokens they minted\n  agentlang trust remove my_tool 3  # and revoke its live tokens\n\nIn CI, exchange the run's ID token at POST /api/v1/trusted-publishing/tokens and set AGENTLANG_TOKEN to the token it answers; `agentlang publish` then works as usual. Owners only. See /docs/trusted-publishing."
    )]
    Trust(TrustArgs),
    /// Trusted publishing, in CI: exchange the run's OpenID Connect ID token for a 30-minute publish token, printed for AGENTLANG_TOKEN
    #[command(
        name = "trusted-token",
        after_help = "Examples:\n  export AGENTLANG_TOKEN=$(agentlang trusted-token)                    # GitHub Actions, with permissions: id-token: write\n  export AGENTLANG_TOKEN=$(agentlang trusted-token --jwt-env CI_JWT)   # GitLab: an id_tokens variable\n\nSee /docs/trusted-publishing."
    )]
    TrustedToken {
        /// Read the ID token from this environment variable [default: ask GitHub Actions for one (ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN)]
        #[arg(long, value_name = "VAR")]
        jwt_env: Option<String>,
        /// The audience to ask GitHub for [default: the registry's host[:port]]
        #[arg(long, value_name = "AUD")]
        audience: Option<String>,
    },
    /// Staged releases: list, approve or reject the staged versions of your packages
    #[command(
        subcommand,
        after_help = "Examples:\n  agentlang publish --stage my_tool.tool\n  agentlang stage list\n  agentlang stage approve 0193...\n  agentlang stage reject 0193... --reason \"wrong build\"\n\nOwners only. See /docs/staged-releases."
    )]
    Stage(StageCommand),
}

/// Staged releases: `agentlang stage list|approve|reject`.
#[derive(Debug, Subcommand)]
pub enum StageCommand {
    /// The staged versions of your packages (pending unless --state says otherwise)
    List {
        /// pending, approved or rejected
        #[arg(long)]
        state: Option<String>,
    },
    /// Publish a staged version (checked again as a publish)
    Approve {
        /// The staged version's id (`stage list`)
        id: String,
    },
    /// Reject a staged version: it is never published and its number stays taken
    Reject {
        /// The staged version's id (`stage list`)
        id: String,
        /// Why, for the log and the other owners
        #[arg(long)]
        reason: Option<String>,
    },
}

/// Trusted publishing: `agentlang trust add|list|remove`.
#[derive(Debug, Args)]
pub struct TrustArgs {
    #[command(subcommand)]
    pub command: TrustCommand,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Trust a CI identity to publish the package
    Add {
        /// The package
        name: String,
        /// The package's kind [default: the one kind the registry has a package of that name in]
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
        /// The OpenID Connect issuer, one the registry is configured with
        #[arg(long, value_name = "URL")]
        issuer: String,
        /// owner/repo (GitHub) or group/project (GitLab)
        #[arg(long)]
        repository: String,
        /// The workflow file name: release.yml, .gitlab-ci.yml
        #[arg(long, value_name = "FILE")]
        workflow: String,
        /// Only runs in this deployment environment match
        #[arg(long)]
        environment: Option<String>,
    },
    /// Show the identities the package trusts and the tokens minted through them
    List {
        /// The package
        name: String,
        /// The package's kind
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
    /// Stop trusting an identity (by the id `trust list` shows) and revoke its live tokens
    Remove {
        /// The package
        name: String,
        /// The trusted publisher's id
        id: i64,
        /// The package's kind
        #[arg(long, value_enum)]
        kind: Option<KindArg>,
    },
}

#[derive(Debug, Args)]
pub struct Credentials {
    #[arg(long, short)]
    pub username: String,
    /// Read the password from standard input instead of prompting
    #[arg(long)]
    pub password_stdin: bool,
    /// Scopes of the token to create
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "publish,yank,keys,owners,grants"
    )]
    pub scopes: Vec<String>,
    /// Days until the token expires
    #[arg(long, default_value_t = 90)]
    pub expires_in_days: u32,
}

/// Second factor: `agentlang 2fa ...`.
#[derive(Debug, Subcommand)]
pub enum TwoFaCommand {
    /// Start: the password again, then the secret for an authenticator app (confirmed with a code)
    Enable {
        /// Read the password from standard input instead of prompting
        #[arg(long)]
        password_stdin: bool,
    },
    /// Confirm a pending second factor with a code; prints the recovery codes, once
    Confirm {
        /// The code the authenticator app shows
        code: String,
    },
    /// Turn it off (needs a code: --otp, AGENTLANG_OTP or a prompt)
    Disable,
    /// Whether it is enabled, and how many recovery codes are left
    Status,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub credentials: Credentials,
    /// Mint a new token even when the stored one still works
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("action")
        .required(true)
        .args(["list", "add", "remove", "accept", "decline"])
))]
pub struct OwnerArgs {
    /// The package
    pub name: String,
    /// The package's kind [default: the one kind the registry has a package of that name in]
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Show the owners and the invitations not yet answered
    #[arg(long, short)]
    pub list: bool,
    /// Invite accounts to own the package (comma-separated or repeated)
    #[arg(long, short, value_name = "USERNAME", value_delimiter = ',')]
    pub add: Vec<String>,
    /// Remove owners (comma-separated or repeated); yourself to leave
    #[arg(long, short, value_name = "USERNAME", value_delimiter = ',')]
    pub remove: Vec<String>,
    /// Accept your invitation to own the package
    #[arg(long)]
    pub accept: bool,
    /// Decline your invitation to own the package
    #[arg(long)]
    pub decline: bool,
}

/// Keys a build signs and encrypts with.
#[derive(Debug, Clone, Args)]
pub struct BuildKeys {
    /// Signing key (PKCS#8 PEM) [default: signing.pem in the config folder]
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Prompt key file, created when missing (a new key: what comes next is not opened by earlier grants) [default: NAME.prompt.key beside the signing key]
    #[arg(long, value_name = "FILE", conflicts_with = "open")]
    pub prompt_key: Option<PathBuf>,
    /// Build an open agent: prompt.yaml in plaintext, readable and runnable by anyone (default: sealed, runnable only by you and those you grant it to)
    #[arg(long, alias = "no-encrypt")]
    pub open: bool,
}

#[derive(Debug, Args)]
pub struct GrantArgs {
    #[command(subcommand)]
    pub command: Option<GrantCommand>,
    /// The sealed agent
    #[arg(required = true)]
    pub name: Option<String>,
    /// The account to grant it to (or, with --revoke, to take it from)
    #[arg(long, value_name = "USERNAME", required = true)]
    pub to: Option<String>,
    /// Only the versions in this range (default: every version the key seals)
    #[arg(long, value_name = "REQ", conflicts_with = "revoke")]
    pub versions: Option<String>,
    /// The prompt key [default: NAME.prompt.key beside the signing key]
    #[arg(long, value_name = "FILE", conflicts_with = "revoke")]
    pub prompt_key: Option<PathBuf>,
    /// Revoke the account's grants of the agent
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Subcommand)]
pub enum GrantCommand {
    /// With NAME, the agent's grants (owners only); without, the grants you hold
    List { name: Option<String> },
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub keys: BuildKeys,
    /// Where to write the container [default: ./NAME@VERSION.KIND]
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Review the prompt first (see `agentlang quality`); errors stop the build
    #[arg(long)]
    pub quality: bool,
    #[command(flatten)]
    pub review: ReviewArgs,
}

/// How a quality review judges its findings.
#[derive(Debug, Clone, Copy, Args)]
pub struct ReviewArgs {
    /// Make warnings fail too (`--deny warnings`)
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub deny: Option<DenyLevel>,
}

impl ReviewArgs {
    pub fn deny_warnings(self) -> bool {
        self.deny == Some(DenyLevel::Warnings)
    }
}

#[derive(Debug, Subcommand)]
pub enum EventsCommand {
    /// Check every event against the schema and across events; exit 1 on any problem
    #[command(
        after_help = "Examples:\n  agentlang events validate session.jsonl\n  agentlang events validate session.yaml --agent ./my-agent   # tools declared, delegations known"
    )]
    Validate {
        file: PathBuf,
        /// Also check tool calls, delegations and tool outputs against this agent directory (or install directory, whose tools' output schemas are used too)
        #[arg(long, value_name = "DIR")]
        agent: Option<PathBuf>,
    },
    /// Print the log as a timeline: one lane per agent, calls with results and durations
    #[command(after_help = "Example:\n  agentlang events replay session.jsonl")]
    Replay { file: PathBuf },
    /// Print the event format's JSON Schema
    #[command(after_help = "Example:\n  agentlang events schema > events.schema.json")]
    Schema,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// An install directory, a package directory, or NAME[@REQUIREMENT] to install first
    pub target: String,
    /// What to ask the agent
    #[arg(long)]
    pub prompt: String,
    #[arg(long, value_name = "NAME|FILE", default_value = "local")]
    pub host: String,
    /// The publisher's prompt key, to decrypt an encrypted prompt [default: NAME.prompt.key beside your signing key, when there]
    #[arg(long, value_name = "FILE")]
    pub prompt_key: Option<PathBuf>,
    /// The runtime command line [env: AGENTLANG_RUNTIME; else [runtime] command in config.toml]
    #[arg(long, value_name = "CMD")]
    pub runtime: Option<String>,
    /// How to compile the prompt for the runtime [default: [runtime] prompt_format in config.toml, else markdown]
    #[arg(long, value_enum)]
    pub prompt_format: Option<PromptFormat>,
    /// Where NAME[@REQ] is installed [default: ./NAME]
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptFormat {
    Markdown,
    Xml,
}

#[derive(Debug, Subcommand)]
pub enum PromptCommand {
    /// Compile a prompt.yaml to the text a model sees
    #[command(
        after_help = "Example:\n  agentlang prompt compile ./my-agent/prompt.yaml --format xml"
    )]
    Compile {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "markdown")]
        format: PromptFormat,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Register a key with the registry, proving you hold its private half
    #[command(
        after_help = "The proof is a signature, by the private key, of\n`agentlang-key-registration:<origin>:<username>:<key id>`, the origin being\nthe registry's scheme://host[:port]; the private key is the file beside\nPUBKEY without `.pub`, or --key.\n\nExamples:\n  agentlang keys register\n  agentlang keys register ~/.config/agentlang/signing.pem.pub\n  agentlang keys register --key ci-signing.pem"
    )]
    Register {
        /// The public key (SPKI PEM) [default: the --key file + `.pub`]
        pubkey: Option<PathBuf>,
        /// The private key (PKCS#8 PEM) [default: PUBKEY without `.pub`, else signing.pem in the config folder]
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
        /// Register your prompt identity's recipient instead (see `keygen --prompt`), proving you hold the identity
        #[arg(long, conflicts_with_all = ["pubkey", "key"])]
        prompt: bool,
        /// The prompt identity [default: prompt.identity in the config folder]
        #[arg(long, value_name = "FILE", requires = "prompt")]
        identity: Option<PathBuf>,
    },
    /// Print the proof of possession a registration needs (for the web form)
    #[command(after_help = "Example:\n  agentlang keys proof --username alice")]
    Proof {
        /// The account the key is registered to [default: the logged-in account]
        #[arg(long)]
        username: Option<String>,
        /// The private key (PKCS#8 PEM) [default: signing.pem in the config folder]
        #[arg(long, value_name = "PEM")]
        key: Option<PathBuf>,
    },
    /// List your keys
    #[command(after_help = "Example:\n  agentlang keys list --json")]
    List,
    /// Revoke a key: later uploads signed with it are refused
    #[command(after_help = "Example:\n  agentlang keys revoke 09385a0393711259...")]
    Revoke { key_id: String },
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print the path of config.toml
    #[command(after_help = "Example:\n  $EDITOR \"$(agentlang config path)\"")]
    Path,
}

#[derive(Debug, Subcommand)]
pub enum LogCommand {
    /// Check every entry of the log against its checkpoint (signature, root, consistency with the checkpoint seen before)
    #[command(
        after_help = "Examples:\n  agentlang log verify\n  agentlang log verify --log-key 'registry.example/log+1a2b3c4d+AbC...'"
    )]
    Verify,
    /// List the log's entries, oldest first
    #[command(
        after_help = "Examples:\n  agentlang log show\n  agentlang log show --name web_search"
    )]
    Show {
        /// Only entries about this package
        #[arg(long)]
        name: Option<String>,
    },
    /// Forget the log key pinned for a registry and the checkpoint seen last (after the registry was reset)
    #[command(
        after_help = "Examples:\n  agentlang log forget\n  agentlang log forget http://127.0.0.1:8080\n\nThe next pull, install, verify or log command trusts whatever log key the\nregistry serves then, and checks consistency only from that checkpoint on:\nuse it when you know the registry was reset or restored, never to silence\na warning you cannot explain."
    )]
    Forget {
        /// The registry's URL [default: the configured registry]
        registry: Option<String>,
    },
}

/// `on` or `off` (also `true`/`false`, `yes`/`no`).
fn on_off(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" => Ok(true),
        "off" | "false" | "no" => Ok(false),
        _ => Err(format!("expected on or off, not {text:?}")),
    }
}
