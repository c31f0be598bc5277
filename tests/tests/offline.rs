//! What works with no registry at all: keys, validation, builds (of tools,
//! and of agents that are already locked), inspection and verification with
//! a local key, and clear failures when the registry is needed but down.

use std::{fs, path::Path};

use agentlang_e2e::{User, simple_tool, workspace_root, write_tool};

/// A URL where nothing listens: a port the OS just handed out and took back.
fn dead_registry() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn keygen_writes_a_private_and_a_public_key_and_never_overwrites() {
    let user = User::new(&dead_registry());
    let run = user.ok(&["--json", "keygen"]).json();
    let private = user.config.path().join("signing.pem");
    assert_eq!(run["private_key"], private.to_str().unwrap());
    assert_eq!(mode(&private), 0o600);
    let pem = fs::read_to_string(&private).unwrap();
    assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
    let public = fs::read_to_string(user.config.path().join("signing.pem.pub")).unwrap();
    assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"), "{public}");
    assert_eq!(run["key_id"].as_str().unwrap().len(), 64);

    let err = user.fails(&["keygen"]);
    assert!(err.contains("already exists; pass --force"), "{err}");
    assert_eq!(
        fs::read_to_string(&private).unwrap(),
        pem,
        "the key was replaced"
    );
    user.ok(&["keygen", "--force"]);
    assert_ne!(fs::read_to_string(&private).unwrap(), pem);
}

#[test]
fn tool_build_is_reproducible_and_verifies_with_the_public_key() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen", "--output", "key.pem"]);
    write_tool(&user.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    fs::write(user.path("echo/scratch.txt"), "not for shipping").unwrap();
    let env = [("SOURCE_DATE_EPOCH", "1700000000")];
    let a = user.run_with(
        &[
            "--json", "build", "echo", "--key", "key.pem", "-o", "a.tool",
        ],
        &env,
        "",
    );
    assert_eq!(a.code, Some(0), "{}", a.stderr);
    assert_eq!(a.json()["left_out"], serde_json::json!(["scratch.txt"]));
    assert_eq!(a.json()["created"], "2023-11-14T22:13:20Z");
    let b = user.run_with(
        &["build", "echo", "--key", "key.pem", "-o", "b.tool"],
        &env,
        "",
    );
    assert_eq!(b.code, Some(0), "{}", b.stderr);
    assert_eq!(
        fs::read(user.path("a.tool")).unwrap(),
        fs::read(user.path("b.tool")).unwrap()
    );

    let v = user
        .ok(&["--json", "verify", "a.tool", "--pubkey", "key.pem.pub"])
        .json();
    assert_eq!(v["valid"], true);
    let i = user.ok(&["--json", "inspect", "a.tool"]).json();
    assert_eq!(
        (
            i["kind"].as_str(),
            i["name"].as_str(),
            i["version"].as_str()
        ),
        (Some("tool"), Some("echo"), Some("1.0.0"))
    );
    let members: Vec<&str> = i["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap())
        .collect();
    assert_eq!(members, ["README.md", "tool.yaml"]);
}

#[test]
fn an_openssl_key_signs_and_a_different_key_does_not_verify() {
    let user = User::new(&dead_registry());
    let status = std::process::Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(user.path("ossl.pem"))
        .status();
    let Ok(status) = status else {
        panic!("openssl is needed for this test");
    };
    assert!(status.success());
    user.ok(&["keygen", "--output", "other.pem"]);
    write_tool(&user.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    user.ok(&["build", "echo", "--key", "ossl.pem", "-o", "echo.tool"]);
    // OpenSSL's own public half verifies, and OpenSSL verifies our
    // signature over manifest.json as DESIGN.md promises.
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .args(args)
            .current_dir(user.work.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    openssl(&["pkey", "-in", "ossl.pem", "-pubout", "-out", "ossl.pub"]);
    let v = user
        .ok(&["--json", "verify", "echo.tool", "--pubkey", "ossl.pub"])
        .json();
    assert_eq!(v["valid"], true);
    fs::create_dir(user.path("unpacked")).unwrap();
    let tar = std::process::Command::new("tar")
        .args(["-xzf", "../echo.tool"])
        .current_dir(user.path("unpacked"))
        .status()
        .unwrap();
    assert!(tar.success());
    let said = openssl(&[
        "pkeyutl",
        "-verify",
        "-pubin",
        "-inkey",
        "ossl.pub",
        "-rawin",
        "-in",
        "unpacked/manifest.json",
        "-sigfile",
        "unpacked/signature.sig",
    ]);
    assert!(said.contains("Signature Verified Successfully"), "{said}");

    let err = user.fails(&["verify", "echo.tool", "--pubkey", "other.pem.pub"]);
    assert!(err.contains("failed verification: signature"), "{err}");
    let run = user.run(&["--json", "verify", "echo.tool", "--pubkey", "other.pem.pub"]);
    assert_eq!(run.code, Some(1));
    let checks = &run.json()["checks"];
    assert_eq!(checks[0]["ok"], true);
    assert_eq!(checks[1]["ok"], false);
    assert!(
        checks[1]["detail"]
            .as_str()
            .unwrap()
            .contains("not by the given key"),
        "{checks}"
    );
}

#[test]
fn a_tampered_container_fails_verification() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen", "--output", "key.pem"]);
    write_tool(&user.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    user.ok(&["build", "echo", "--key", "key.pem", "-o", "echo.tool"]);
    let mut bytes = fs::read(user.path("echo.tool")).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x55;
    fs::write(user.path("bad.tool"), &bytes).unwrap();
    let err = user.fails(&["verify", "bad.tool", "--pubkey", "key.pem.pub"]);
    assert!(
        err.contains("failed verification: structure and hashes"),
        "{err}"
    );
    let err = user.fails(&["inspect", "bad.tool"]);
    assert!(err.contains("bad.tool is not a valid container"), "{err}");
}

#[test]
fn validate_reports_every_problem_and_exits_1() {
    let user = User::new(&dead_registry());
    let fixture = workspace_root().join("core/tests/fixtures/agents/research-assistant");
    // Valid, with a warning for each capability its declarations need
    // that its permissions do not request.
    let run = user.ok(&["validate", fixture.to_str().unwrap()]);
    for warning in [
        "warning: shell is needed by bash tool convert_video, MCP server",
        "warning: oauth is needed by http tool twitter_post_tweet",
    ] {
        assert!(run.stderr.contains(warning), "{}", run.stderr);
    }
    let json = user
        .ok(&["--json", "validate", fixture.to_str().unwrap()])
        .json();
    let undeclared: Vec<&str> = json["undeclared_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["capability"].as_str().unwrap())
        .collect();
    assert_eq!(undeclared, ["shell", "oauth"], "{json}");
    write_tool(&user.path("bad"), "name: 9lives\nversion: one\n");
    let run = user.run(&["validate", "bad"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("tool.yaml: name:"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("tool.yaml: input_schema: missing required key"),
        "{}",
        run.stderr
    );
    // prompt.yaml is checked as part of the agent.
    write_mini_agent(&user);
    fs::write(
        user.path("mini/prompt.yaml"),
        "version: 2\nrole: wizard\nsections: []\n",
    )
    .unwrap();
    let run = user.run(&["validate", "mini"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("prompt.yaml: role: unknown role \"wizard\""),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("2 problem(s) in mini"),
        "{}",
        run.stderr
    );
    let err = user.fails(&["build", "mini"]);
    assert_eq!(
        err,
        "2 problem(s) in mini; `agentlang validate mini` lists them"
    );
    let run = user.run(&["build", "mini"]);
    assert!(
        run.stderr
            .contains("  ✗ prompt.yaml: sections: must list at least one section\n"),
        "{}",
        run.stderr
    );

    let json = user.run(&["--json", "validate", "bad"]).json();
    assert_eq!(json["valid"], false);
    assert!(json["problems"].as_array().unwrap().len() >= 4, "{json}");
}

#[test]
fn prompt_compile_renders_markdown_and_xml() {
    let user = User::new(&dead_registry());
    let prompt = workspace_root().join("core/tests/fixtures/agents/research-assistant/prompt.yaml");
    let md = user.ok(&["prompt", "compile", prompt.to_str().unwrap()]);
    assert!(
        md.stdout.contains("mindset") || md.stdout.contains("Mindset"),
        "{}",
        md.stdout
    );
    let xml = user.ok(&[
        "prompt",
        "compile",
        prompt.to_str().unwrap(),
        "--format",
        "xml",
    ]);
    assert!(xml.stdout.contains('<'), "{}", xml.stdout);
    assert_ne!(md.stdout, xml.stdout);
}

#[test]
fn commands_that_need_the_registry_say_it_is_down_in_one_line() {
    let registry = dead_registry();
    let user = User::new(&registry);
    let err = user.fails(&["search", "anything"]);
    assert_eq!(
        err,
        format!("cannot reach the registry at {registry}: is it running?")
    );
    let err = user.fails(&["pull", "research-assistant"]);
    assert!(err.contains("cannot reach the registry"), "{err}");
    // An agent with registry tools and no lock needs the registry to build.
    user.ok(&["keygen"]);
    let fixture = workspace_root().join("core/tests/fixtures/agents/research-assistant");
    agentlang_e2e::copy_dir(&fixture, &user.path("ra"));
    let err = user.fails(&["build", "ra"]);
    assert!(err.contains("cannot reach the registry"), "{err}");
    let err = user.fails(&["publish", "ra"]);
    assert!(err.contains("cannot reach the registry"), "{err}");
}

#[test]
fn bad_specs_and_missing_logins_fail_before_any_request() {
    let user = User::new(&dead_registry());
    let err = user.fails(&["pull", "web_search@banana", "--kind", "tool"]);
    assert!(err.contains("is not a version requirement"), "{err}");
    let err = user.fails(&["yank", "web_search"]);
    assert!(err.contains("must be NAME@VERSION"), "{err}");
    let err = user.fails(&["keys", "list"]);
    assert!(err.contains("not logged in"), "{err}");
    let private = user.path("k.pem");
    user.ok(&["keygen", "--output", private.to_str().unwrap()]);
    let run = user.run_with(
        &["keys", "register", "k.pem"],
        &[("AGENTLANG_TOKEN", "x")],
        "",
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("k.pem is not an Ed25519 public key"),
        "{}",
        run.stderr
    );
}

/// An agent with no registry tools and no models: its lock is only
/// hashes, so it builds with no registry at all.
fn write_mini_agent(user: &User) {
    let dir = user.path("mini");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: mini\nversion: 0.1.0\ndescription: A tiny agent.\n",
    )
    .unwrap();
    fs::write(
        dir.join("prompt.yaml"),
        "version: 2\nrole: user\nsections:\n  - name: task\n    content: |\n      Say hello to the secret garden.\n",
    )
    .unwrap();
    fs::write(dir.join("NOTES.md"), "private notes").unwrap();
}

#[test]
fn agent_build_warns_of_capabilities_needed_but_not_requested() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen"]);
    write_mini_agent(&user);
    fs::write(
        user.path("mini/agent.yaml"),
        "name: mini\nversion: 0.1.0\ndescription: A tiny agent.\nbash_tools:\n  convert:\n    command: ffmpeg\n",
    )
    .unwrap();
    let run = user.ok(&["build", "mini"]);
    assert!(
        run.stderr.contains(
            "warning: shell is needed by bash tool convert but not requested in permissions"
        ),
        "{}",
        run.stderr
    );
    assert!(user.path("mini@0.1.0.agent").exists());
}

#[test]
fn agent_build_locks_encrypts_and_inspects_with_and_without_the_prompt_key() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen"]);
    write_mini_agent(&user);
    let built = user.ok(&["--json", "build", "mini"]).json();
    assert_eq!(built["path"], "mini@0.1.0.agent");
    assert_eq!(built["left_out"], serde_json::json!(["NOTES.md"]));
    assert_eq!(built["prompt_key_created"], true);
    let key = user.config.path().join("mini.prompt.key");
    assert_eq!(built["prompt_key"], key.to_str().unwrap());
    assert_eq!(mode(&key), 0o600);
    let lock = fs::read_to_string(user.path("mini/agent.lock")).unwrap();
    assert!(lock.contains("prompt.yaml: sha256:"), "{lock}");

    // The prompt is sealed: not readable without the key, readable with it.
    let bytes = fs::read(user.path("mini@0.1.0.agent")).unwrap();
    let closed = user.ok(&["--json", "inspect", "mini@0.1.0.agent"]).json();
    assert_eq!(closed["prompt"], serde_json::Value::Null);
    assert_eq!(closed["prompt_encrypted"], true);
    let open = user.ok(&[
        "inspect",
        "mini@0.1.0.agent",
        "--prompt-key",
        key.to_str().unwrap(),
    ]);
    assert!(
        open.stdout.contains("Say hello to the secret garden."),
        "{}",
        open.stdout
    );
    let members: Vec<String> = closed["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(members, ["agent.lock", "agent.yaml", "prompt.yaml.enc"]);

    // A second build reuses the key, and a wrong key does not open it.
    let again = user
        .ok(&["--json", "build", "mini", "-o", "again.agent"])
        .json();
    assert_eq!(again["prompt_key_created"], false);
    let other = user.path("other.key");
    fs::write(&other, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n").unwrap();
    let err = user.fails(&[
        "inspect",
        "mini@0.1.0.agent",
        "--prompt-key",
        other.to_str().unwrap(),
    ]);
    assert!(err.contains("does not open"), "{err}");
    assert!(!bytes.is_empty());

    // --no-encrypt ships the prompt as written.
    let plain = user
        .ok(&[
            "--json",
            "build",
            "mini",
            "--no-encrypt",
            "-o",
            "plain.agent",
        ])
        .json();
    assert_eq!(plain["prompt_key"], serde_json::Value::Null);
    let shown = user.ok(&["--json", "inspect", "plain.agent"]).json();
    assert!(shown["prompt"].as_str().unwrap().contains("secret garden"));
}

#[test]
fn agent_builds_are_byte_identical_with_source_date_epoch() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen"]);
    write_mini_agent(&user);
    let env = [("SOURCE_DATE_EPOCH", "1700000000")];
    for out in ["a.agent", "b.agent"] {
        let run = user.run_with(&["build", "mini", "-o", out], &env, "");
        assert_eq!(run.code, Some(0), "{}", run.stderr);
    }
    assert_eq!(
        fs::read(user.path("a.agent")).unwrap(),
        fs::read(user.path("b.agent")).unwrap()
    );
    assert!(
        fs::read_to_string(user.path("mini/agent.lock"))
            .unwrap()
            .contains("resolved_at: 2023-11-14T22:13:20Z")
    );
}

#[test]
fn build_rehashes_a_lock_whose_pins_an_edit_cannot_change() {
    let user = User::new(&dead_registry());
    user.ok(&["keygen"]);
    write_mini_agent(&user);
    user.ok(&["build", "mini"]);
    let before = fs::read_to_string(user.path("mini/agent.lock")).unwrap();
    // An edit and a version bump: nothing the lock pins can change, so
    // build recomputes the hashes itself (offline: no registry is asked).
    fs::write(
        user.path("mini/prompt.yaml"),
        "version: 2\nrole: user\nsections:\n  - name: task\n    content: Changed.\n",
    )
    .unwrap();
    let yaml = fs::read_to_string(user.path("mini/agent.yaml")).unwrap();
    assert!(yaml.contains("version: 0.1.0"), "{yaml}");
    fs::write(
        user.path("mini/agent.yaml"),
        yaml.replace("version: 0.1.0", "version: 0.2.0"),
    )
    .unwrap();
    let run = user.run(&["build", "mini"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "updated the hashes in mini/agent.lock (agent.yaml changed; prompt.yaml changed)"
        ),
        "{}",
        run.stderr
    );
    let after = fs::read_to_string(user.path("mini/agent.lock")).unwrap();
    assert_ne!(before, after);
    // The resolution itself is untouched, its time included.
    let resolved = |lock: &str| {
        lock.lines()
            .find(|l| l.starts_with("resolved_at:"))
            .unwrap()
            .to_owned()
    };
    assert_eq!(resolved(&before), resolved(&after));
    assert!(user.path("mini@0.2.0.agent").exists());
    // The lock now matches: `lock` has nothing to write.
    let relock = user.ok(&["--json", "lock", "mini"]).json();
    assert_eq!(relock["written"], false);
}

#[test]
fn a_missing_signing_key_is_reported_before_anything_else() {
    let user = User::new(&dead_registry());
    write_mini_agent(&user);
    let err = user.fails(&["build", "mini"]);
    assert!(
        err.contains("signing.pem (create one with `agentlang keygen`)"),
        "{err}"
    );
    assert!(!user.path("mini/agent.lock").exists(), "nothing was locked");
}

#[test]
fn every_command_has_help_with_an_example_and_completions_know_them() {
    let user = User::new(&dead_registry());
    let commands = [
        "keygen",
        "register",
        "login",
        "whoami",
        "logout",
        "config",
        "owner",
        "validate",
        "lock",
        "build",
        "inspect",
        "diff",
        "verify",
        "publish",
        "pull",
        "search",
        "yank",
        "completions",
    ];
    for cmd in commands {
        let help = user.ok(&[cmd, "--help"]).stdout;
        assert!(
            help.contains("Example"),
            "`agentlang {cmd} --help` has no example:\n{help}"
        );
    }
    for sub in [
        ["keys", "register"],
        ["keys", "list"],
        ["keys", "revoke"],
        ["prompt", "compile"],
        ["config", "path"],
    ] {
        let help = user.ok(&[sub[0], sub[1], "--help"]).stdout;
        assert!(
            help.contains("Example"),
            "`agentlang {sub:?} --help` has no example:\n{help}"
        );
    }
    let bash = user.ok(&["completions", "bash"]).stdout;
    for cmd in commands {
        assert!(bash.contains(cmd), "bash completions lack {cmd}");
    }
    let err = user.run(&["frobnicate"]);
    assert_eq!(err.code, Some(2));
    assert!(
        err.stderr.contains("unrecognized subcommand"),
        "{}",
        err.stderr
    );
}

/// One example package of `docs/`: its page, its name and its files.
struct DocExample {
    page: String,
    name: String,
    files: Vec<(String, String)>,
}

/// Every whole-package example of `docs/*.md`: fenced blocks whose info
/// string names `example=NAME file=PATH` (docs/README.md says how), grouped
/// by page and name.
fn doc_examples() -> Vec<DocExample> {
    let docs = workspace_root().join("docs");
    let mut pages: Vec<_> = fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    let mut examples: Vec<DocExample> = Vec::new();
    for path in pages {
        let page = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        while let Some(line) = lines.next() {
            let Some(info) = line.strip_prefix("```") else {
                continue;
            };
            let attr = |key: &str| {
                info.split_whitespace()
                    .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            let (Some(name), Some(file)) = (attr("example"), attr("file")) else {
                continue;
            };
            let content = body.join("\n") + "\n";
            match examples
                .iter_mut()
                .find(|e| e.page == page && e.name == name)
            {
                Some(example) => example.files.push((file, content)),
                None => examples.push(DocExample {
                    page: page.clone(),
                    name,
                    files: vec![(file, content)],
                }),
            }
        }
    }
    examples
}

/// The examples in `docs/` are real: each validates as the package it shows
/// (an agent example that shows only some files gets a minimal agent.yaml
/// or prompt.yaml for the rest, as docs/README.md says).
#[test]
fn every_example_in_the_docs_validates() {
    let user = User::new(&dead_registry());
    let examples = doc_examples();
    // The pages hold this many; finding fewer means the extraction broke.
    assert!(examples.len() >= 15, "{} examples found", examples.len());
    for example in &examples {
        let mut files = example.files.clone();
        let has = |files: &[(String, String)], name: &str| files.iter().any(|(f, _)| f == name);
        // A skill's folder carries its name (the Agent Skills rule), so a
        // skill example is named after its skill.
        let dir = if has(&files, "SKILL.md") {
            format!("docs-skills/{}", example.name)
        } else {
            format!(
                "docs-{}-{}",
                example.page.trim_end_matches(".md"),
                example.name
            )
        };
        if !has(&files, "tool.yaml") && !has(&files, "SKILL.md") {
            if !has(&files, "agent.yaml") {
                files.push((
                    "agent.yaml".into(),
                    "name: example\nversion: 1.0.0\ndescription: An example.\n".into(),
                ));
            }
            if !has(&files, "prompt.yaml") {
                files.push((
                    "prompt.yaml".into(),
                    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Do the task.\n"
                        .into(),
                ));
            }
        }
        for (file, content) in &files {
            let path = user.path(&dir).join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, content).unwrap();
        }
        let run = user.run(&["validate", &dir]);
        assert_eq!(
            run.code,
            Some(0),
            "docs/{} example {:?} does not validate:\n{}{}",
            example.page,
            example.name,
            run.stdout,
            run.stderr
        );
    }
}
