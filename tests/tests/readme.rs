//! The README's journey, run as written: every `agentlang` line of its
//! "Publish an agent" and "Install and run an agent" blocks, in order,
//! through `sh` on a clean home folder (no `AGENTLANG_CONFIG_DIR`: the
//! config lands where `~/.config/agentlang` says), so the README cannot
//! drift from what the commands do.
//!
//! What the README takes for granted is set up first, by others: bob,
//! whom the reader grants their agent to; carol, who published
//! `research-assistant` 1.0.0 and 1.1.0 (open, so anyone may run it);
//! a `session.jsonl` (docs/events.md's example), a `runner.py`, and the
//! secrets research-assistant's MCP servers read from the environment. One
//! line is changed: `register` reads its password from a terminal, which
//! a test has not, so it gets `--password-stdin` and the password on
//! standard input. `cargo install` is skipped: the binary under test
//! stands in for it.

use std::{
    fs,
    io::Write,
    path::Path,
    process::{Command, Stdio},
};

use agentlang_e2e::{
    bins, copy_dir, publish_research_tools, publisher, start_registry, workspace_root,
};

/// The `agentlang` lines of the README's `##` section `name`, comments
/// dropped.
fn commands(readme: &str, name: &str) -> Vec<String> {
    let start = readme
        .find(&format!("## {name}\n"))
        .unwrap_or_else(|| panic!("README has no section {name:?}"));
    let section = &readme[start + 3..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in section.lines() {
        match line {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            _ if in_sh && line.starts_with("agentlang ") => {
                // A comment starts at `  #` (a `#` inside an argument has
                // no two spaces before it).
                let command = line.split("  #").next().unwrap_or(line).trim_end();
                out.push(command.to_owned());
            }
            _ if in_sh => assert!(
                line.starts_with("cargo install") || line.trim().is_empty(),
                "a README line the journey would skip: {line}"
            ),
            _ => {}
        }
    }
    out
}

/// docs/events.md's example log.
fn events_example() -> String {
    let page = fs::read_to_string(workspace_root().join("docs/events.md")).unwrap();
    let start = page.find("```jsonl\n").unwrap() + "```jsonl\n".len();
    page[start..start + page[start..].find("```").unwrap()].to_owned()
}

#[test]
fn the_readme_journey_runs_as_written() {
    let readme = fs::read_to_string(workspace_root().join("README.md")).unwrap();
    let registry = start_registry();

    // carol published research-assistant 1.0.0 and 1.1.0, open.
    let carol = publisher(&registry, "carol");
    publish_research_tools(&carol);
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &carol.path("ra"),
    );
    carol.ok(&["publish", "ra", "--open"]);
    let yaml = fs::read_to_string(carol.path("ra/agent.yaml"))
        .unwrap()
        .replacen("version: 1.0.0", "version: 1.1.0", 1);
    fs::write(carol.path("ra/agent.yaml"), yaml).unwrap();
    carol.ok(&["publish", "ra", "--open"]);
    // bob can be granted sealed agents.
    let bob = publisher(&registry, "bob");
    bob.ok(&["keygen", "--prompt"]);
    bob.ok(&["keys", "register", "--prompt"]);

    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    fs::write(work.path().join("session.jsonl"), events_example()).unwrap();
    fs::write(
        work.path().join("runner.py"),
        "import json, sys\nhandoff = json.load(sys.stdin)\nprint('ran', handoff['agent']['name'])\n",
    )
    .unwrap();
    let cli_dir = bins().cli.parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        cli_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut ran = Vec::new();
    for section in ["Publish an agent", "Install and run an agent"] {
        for line in commands(&readme, section) {
            let (line, stdin) = if line.starts_with("agentlang register ") {
                (
                    line.replacen(" register ", " register --password-stdin ", 1),
                    "correct horse battery staple\n",
                )
            } else {
                (line, "")
            };
            let output = run(&line, home.path(), work.path(), &path, &registry.url, stdin);
            assert!(
                output.status.success(),
                "README: `{line}` failed ({:?})\nstdout:\n{}\nstderr:\n{}",
                output.status.code(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            ran.push((line, String::from_utf8_lossy(&output.stdout).into_owned()));
        }
    }
    // Enough of the journey ran to mean something, and it ended where the
    // README says.
    assert!(ran.len() >= 15, "{ran:#?}");
    let (last, stdout) = ran.last().unwrap();
    assert!(last.starts_with("agentlang run ra"), "{last}");
    assert!(stdout.contains("ran research-assistant"), "{stdout}");
    assert!(
        home.path()
            .join(".config/agentlang/signing.pem.pub")
            .is_file(),
        "the key is where the README's `keys register` line looks"
    );
    assert!(work.path().join("ra.agent").is_file());
    assert!(work.path().join("ra/agent").is_dir());
}

/// One README line through `sh`, as a reader's shell would run it.
fn run(
    line: &str,
    home: &Path,
    work: &Path,
    path: &str,
    registry: &str,
    stdin: &str,
) -> std::process::Output {
    let mut child = Command::new("sh")
        .args(["-c", line])
        .current_dir(work)
        .env_clear()
        .env("HOME", home)
        .env("PATH", path)
        .env("AGENTLANG_REGISTRY", registry)
        .env("NO_COLOR", "1")
        // What research-assistant's MCP servers ask of the reader's
        // environment (`{{.env.NAME}}`).
        .env("STRIPE_SECRET_KEY", "sk_test_readme")
        .env("GMAIL_OAUTH_TOKEN", "token-readme")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}
