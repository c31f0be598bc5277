//! `config`: the settings in effect and where each came from, so that
//! "which registry am I talking to, and why" has one answer.

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::{
    client::TIMEOUT_VAR,
    config::{self, Source},
    env::Env,
    tlog,
};

/// One setting: its value (or none) and where it came from.
#[derive(Debug, Serialize)]
struct Setting {
    name: &'static str,
    value: Option<String>,
    source: Source,
    /// The flag, variable or file behind `source`, in words.
    from: String,
}

pub fn path() -> Result<ExitCode> {
    crate::output::print_line(
        &config::config_dir()?
            .join("config.toml")
            .display()
            .to_string(),
    );
    Ok(ExitCode::SUCCESS)
}

pub fn show(env: &Env, log_key_flag: bool) -> Result<ExitCode> {
    let dir = &env.ctx.dir;
    let config_file = dir.join("config.toml");
    let credentials = env.ctx.credentials_path();
    let var_set = |name: &str| config::env_nonempty(name).is_some();
    let mut settings = vec![
        Setting {
            name: "config folder",
            value: Some(dir.display().to_string()),
            source: if var_set("AGENTLANG_CONFIG_DIR") {
                Source::Env
            } else {
                Source::Default
            },
            from: if var_set("AGENTLANG_CONFIG_DIR") {
                "AGENTLANG_CONFIG_DIR".to_owned()
            } else {
                "the platform's config folder".to_owned()
            },
        },
        Setting {
            name: "registry",
            value: Some(env.ctx.registry.clone()),
            source: env.ctx.registry_source.clone(),
            from: env.ctx.registry_source.describe(
                "--registry",
                "AGENTLANG_REGISTRY",
                &config_file,
            ),
        },
    ];
    let token = env.ctx.token_and_source()?;
    let stored = env.ctx.stored()?;
    settings.push(match &token {
        Some((_, source)) => Setting {
            name: "token",
            // Never the token itself: whose it is, when the file says.
            value: Some(match (source, &stored) {
                (Source::File, Some(entry)) => format!("stored for {}", entry.username),
                _ => "given".to_owned(),
            }),
            source: source.clone(),
            from: source.describe("--token", "AGENTLANG_TOKEN", &credentials),
        },
        None => Setting {
            name: "token",
            value: None,
            source: Source::Default,
            from: "none: run `agentlang login`".to_owned(),
        },
    });
    settings.push(Setting {
        name: "credentials file",
        value: Some(credentials.display().to_string()),
        source: Source::Default,
        from: "in the config folder".to_owned(),
    });
    let log_key_source = match (log_key_flag, var_set("AGENTLANG_LOG_KEY")) {
        (true, true) => Some(Source::Env),
        (true, false) => Some(Source::Flag),
        (false, _) => None,
    };
    let pins = tlog::pins_dir(&env.ctx.registry)?;
    settings.push(match log_key_source {
        Some(source) => Setting {
            name: "log key",
            value: env.log.key.clone(),
            from: source.describe("--log-key", "AGENTLANG_LOG_KEY", &pins),
            source,
        },
        None => Setting {
            name: "log key",
            value: Some(format!("pinned in {}", pins.join("key").display())),
            source: Source::Default,
            from: "pinned on first use".to_owned(),
        },
    });
    let runtime = match (
        config::env_nonempty("AGENTLANG_RUNTIME"),
        &env.ctx.runtime.command,
    ) {
        (Some(cmd), _) => (Some(cmd), Source::Env),
        (None, Some(cmd)) => (Some(cmd.clone()), Source::File),
        (None, None) => (None, Source::Default),
    };
    settings.push(Setting {
        name: "runtime",
        from: match runtime.1 {
            Source::Default => "none: `run` prints the hand-off".to_owned(),
            ref source => source.describe("--runtime", "AGENTLANG_RUNTIME", &config_file),
        },
        value: runtime.0,
        source: runtime.1,
    });
    settings.push(Setting {
        name: "prompt format",
        value: Some(
            env.ctx
                .runtime
                .prompt_format
                .clone()
                .unwrap_or_else(|| "markdown".to_owned()),
        ),
        source: if env.ctx.runtime.prompt_format.is_some() {
            Source::File
        } else {
            Source::Default
        },
        from: if env.ctx.runtime.prompt_format.is_some() {
            config_file.display().to_string()
        } else {
            "default".to_owned()
        },
    });
    let timeout = config::env_nonempty(TIMEOUT_VAR);
    settings.push(Setting {
        name: "HTTP timeout",
        source: if timeout.is_some() {
            Source::Env
        } else {
            Source::Default
        },
        from: if timeout.is_some() {
            TIMEOUT_VAR.to_owned()
        } else {
            "default".to_owned()
        },
        value: Some(format!("{} s", timeout.unwrap_or_else(|| "30".to_owned()))),
    });
    env.out.emit(&settings, || {
        let width = settings.iter().map(|s| s.name.len()).max().unwrap_or(0);
        settings
            .iter()
            .map(|s| {
                format!(
                    "{:width$}  {}  ({})",
                    s.name,
                    s.value.as_deref().unwrap_or("-"),
                    s.from
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(ExitCode::SUCCESS)
}
