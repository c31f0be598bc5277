//! What an agent can do, from the command line: `inspect` says it (with
//! what each locked tool asks for, read from the registry), `diff` compares
//! two versions (files, or the registry's records), and `lock --update`
//! does not give an agent new powers unasked.

use std::fs;

use agentlang_e2e::{
    User, copy_dir,
    mock::{MockRegistry, Reply},
    publish_research_tools, publisher, simple_tool, start_registry, workspace_root, write_agent,
    write_tool,
};
use serde_json::{Value, json};

/// `inspect`'s text with what differs from run to run blanked: the
/// signer's key id, the container's hash and sizes (the lock holds the
/// registry's address and the tools' hashes).
fn redacted(text: &str, signer: &str, sha256: &str) -> String {
    let mut in_members = false;
    text.replace(signer, "[signer]")
        .replace(sha256, "[sha256]")
        .lines()
        .map(|line| {
            if line.ends_with(':') {
                in_members = line == "members:";
            }
            if line.starts_with("  size ") {
                "  size     [size]".to_owned()
            } else if in_members && line.starts_with("  ") {
                let path = line.trim_start().split_once("  ").map_or("", |(_, p)| p);
                format!("  [size]  {path}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn inspect_says_what_an_agent_can_do_with_its_tools_capabilities() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    publish_research_tools(&alice);
    let fixtures = workspace_root().join("core/tests/fixtures/agents");
    for fixture in ["research-assistant", "stripe-ops"] {
        copy_dir(&fixtures.join(fixture), &alice.path(fixture));
        let built = alice.run_with(
            &["--json", "build", fixture],
            &[("SOURCE_DATE_EPOCH", "1700000000")],
            "",
        );
        assert_eq!(built.code, Some(0), "{}", built.stderr);
        let file = built.json()["path"].as_str().unwrap().to_owned();

        let shown = alice.ok(&["--json", "inspect", &file]).json();
        let trust = &shown["trust"];
        assert_eq!(trust["signer"], shown["signer"]);
        let fetch = trust["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == "web_fetch@1.0.3")
            .unwrap_or_else(|| panic!("web_fetch is not among the tools: {trust}"));
        assert_eq!(
            fetch["capabilities"],
            json!(["network"]),
            "read from the registry"
        );
        assert!(!trust["render_tools"].as_array().unwrap().is_empty());
        assert!(shown["permissions"].is_array(), "the old fields stay");

        let run = alice.ok(&["inspect", &file]);
        assert_eq!(run.stderr, "", "every pinned tool was read");
        insta::assert_snapshot!(
            format!("inspect_{fixture}"),
            redacted(
                // The prompt key is new on every run, and so is its id.
                &match shown["prompt_key_id"].as_str() {
                    Some(id) => run.stdout.replace(id, "[prompt key]"),
                    None => run.stdout.clone(),
                },
                shown["signer"].as_str().unwrap(),
                shown["sha256"].as_str().unwrap()
            )
        );
    }

    // The registry's picture of the published version is the one inspect
    // computed from the file.
    alice.ok(&["publish", "stripe-ops@1.0.0.agent"]);
    let same = alice.ok(&["diff", "stripe-ops@1.0.0", "stripe-ops@1.0.0.agent"]);
    assert_eq!(same.stdout, "No trust changes\n");

    // A pinned tool the registry cannot supply: one line, and the rest of
    // the picture.
    let mut registry = registry;
    registry.kill_9();
    let run = alice.ok(&["inspect", "stripe-ops@1.0.0.agent"]);
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].starts_with("warning: tool web_fetch@1.0.3 could not be read")
            && warnings[0].ends_with("counted as asking for no capabilities"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("Runs `npx -y @stripe/mcp --tools=all`"));
}

/// An agent package: v1 calls one endpoint; v2 adds an MCP server and
/// posts with the user's Twitter OAuth token.
fn write_notes(user: &User, dir: &str, version: &str, more: &str) {
    let dir = user.path(dir);
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        format!(
            "name: notes\nversion: {version}\ndescription: Keeps notes.\npermissions:\n  required: [network]\nhttp_tools:\n  post:\n    description: Post a note\n    endpoint: https://notes.example.com/api\n    method: POST\n{more}"
        ),
    )
    .unwrap();
    fs::write(
        dir.join("prompt.yaml"),
        "version: 2\nrole: system\nsections:\n  - name: task\n    content: Keep notes.\n",
    )
    .unwrap();
}

#[test]
fn diff_compares_files_and_registry_versions() {
    let mock = MockRegistry::start();
    let user = User::new(&mock.url);
    user.ok(&["keygen"]);
    write_notes(&user, "v1", "1.0.0", "");
    write_notes(
        &user,
        "v2",
        "1.1.0",
        "    twitter_token: true\nmcp_servers:\n  Files:\n    command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"./notes\"]\n",
    );
    // No registry tools and no models: these build without the registry.
    user.ok(&["build", "v1"]);
    user.ok(&["build", "v2"]);
    let (a, b) = ("notes@1.0.0.agent", "notes@1.1.0.agent");

    let run = user.ok(&["diff", a, b]);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0], "Risk rises from Low to Critical; 4 changes raise risk",
        "{}",
        run.stdout
    );
    for line in [
        "  + capability shell (High): required, by MCP server Files  [raises risk]",
        "  + capability oauth (Critical): required, by http tool post  [raises risk]",
        "  + MCP server Files (High): npx -y @modelcontextprotocol/server-filesystem ./notes  [raises risk]",
        "  ~ HTTP tool post (Critical): POST https://notes.example.com/api -> POST https://notes.example.com/api with OAuth (twitter)  [raises risk]",
    ] {
        assert!(
            lines.contains(&line),
            "{line:?} missing from:\n{}",
            run.stdout
        );
    }
    let json = user.ok(&["--json", "diff", a, b]).json();
    assert_eq!(
        (json["from"].as_str(), json["to"].as_str()),
        (Some(a), Some(b))
    );
    assert_eq!(json["risk_rose"], true);
    assert_eq!(json["raises_risk"], true);
    let changes = json["changes"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c["class"] == "mcp_server" && c["raises_risk"] == true)
    );
    assert!(
        changes
            .iter()
            .any(|c| c["subject"] == "oauth" && c["raises_risk"] == true)
    );
    let back = user.ok(&["diff", b, a]);
    assert!(
        back.stdout.starts_with("Risk falls from Critical to Low\n"),
        "{}",
        back.stdout
    );
    assert_eq!(user.ok(&["diff", a, a]).stdout, "No trust changes\n");

    // A package folder: the picture it will have once built, unsigned.
    let folder = user.ok(&["--json", "inspect", "v2"]).json();
    let mut built = user.ok(&["--json", "inspect", b]).json()["trust"].clone();
    built["signer"] = Value::Null;
    assert_eq!(folder["trust"], built, "{folder}");
    assert_eq!(folder["built"], false);
    let text = user.ok(&["inspect", "v2"]).stdout;
    assert!(
        text.starts_with("agent notes@1.1.0 (package folder v2: valid, not built;"),
        "{text}"
    );
    agentlang_e2e::write_tool(
        &user.path("echo"),
        &agentlang_e2e::simple_tool("echo", "1.0.0", &[]),
    );
    let err = user.fails(&["inspect", "echo"]);
    assert!(err.contains("`agentlang build echo`"), "{err}");
    fs::create_dir_all(user.path("empty")).unwrap();
    let err = user.fails(&["inspect", "empty"]);
    assert!(
        err.contains("neither an install directory") && err.contains("package folder"),
        "{err}"
    );

    // --exit-code: 1 when the newer side can do more, with the same report
    // and no error line; 0 when it cannot.
    let gate = user.run(&["diff", a, b, "--exit-code"]);
    assert_eq!(gate.code, Some(1), "{}", gate.stderr);
    assert_eq!(gate.stdout, run.stdout);
    assert!(!gate.stderr.contains("error:"), "{}", gate.stderr);
    user.ok(&["diff", b, a, "--exit-code"]);
    user.ok(&["diff", a, a, "--exit-code"]);

    // The registry's records: the same diff from their `trust` members.
    let trust_of = |file: &str| user.ok(&["--json", "inspect", file]).json()["trust"].clone();
    for (version, trust) in [("1.0.0", trust_of(a)), ("1.1.0", trust_of(b))] {
        mock.route(
            "GET",
            &format!("/api/v1/agents/notes/{version}"),
            Reply::json(
                200,
                &json!({ "name": "notes", "version": version, "trust": trust }),
            ),
        );
    }
    let mut remote = user
        .ok(&["--json", "diff", "notes@1.0.0", "notes@1.1.0"])
        .json();
    remote["from"] = json["from"].clone();
    remote["to"] = json["to"].clone();
    assert_eq!(remote, json);
    let mixed = user.ok(&["diff", "notes@1.0.0", b]);
    assert_eq!(mixed.stdout, run.stdout);

    // Bad input: one line each.
    mock.route(
        "GET",
        "/api/v1/agents/notes/0.9.0",
        Reply::json(
            200,
            &json!({ "name": "notes", "version": "0.9.0", "trust": Value::Null }),
        ),
    );
    let err = user.fails(&["diff", "notes@0.9.0", "notes@1.0.0"]);
    assert!(err.contains("carries no trust picture"), "{err}");
    let err = user.fails(&["diff", "notes@2.0.0", a]);
    assert!(err.contains("looking up agent notes@2.0.0"), "{err}");
    let err = user.fails(&["diff", a, "missing.agent"]);
    assert!(err.contains("missing.agent"), "{err}");
    let err = user.fails(&["diff", a, "notes"]);
    assert!(
        err.contains("neither a .agent file nor NAME@VERSION"),
        "{err}"
    );
}

#[test]
fn lock_update_to_a_tool_that_asks_for_more_needs_accept_risk() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let fetcher = |version: &str, permissions: &str| {
        format!(
            "{}permissions: [{permissions}]\n",
            simple_tool("fetcher", version, &[])
        )
    };
    write_tool(&alice.path("fetcher"), &fetcher("1.0.0", "network"));
    alice.ok(&["publish", "fetcher"]);
    let dir = alice.path("reader");
    write_agent(
        &dir,
        "name: reader\nversion: 1.0.0\ndescription: Reads pages.\ntools:\n  - name: fetcher\n    version: ^1.0.0\npermissions:\n  required: [network]\n",
    );
    alice.ok(&["lock", "reader"]);
    let locked = fs::read(dir.join("agent.lock")).unwrap();

    // The same capabilities at a newer version: updated without a word.
    write_tool(&alice.path("fetcher"), &fetcher("1.0.1", "network"));
    alice.ok(&["publish", "fetcher"]);
    let quiet = alice.ok(&["--json", "lock", "reader", "--update"]).json();
    assert_eq!(quiet["written"], true);
    let changes = quiet["trust_diff"]["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c["class"] == "tool")
            && changes.iter().all(|c| c["raises_risk"] == false),
        "{quiet}"
    );
    let locked_101 = fs::read(dir.join("agent.lock")).unwrap();
    assert_ne!(locked, locked_101);

    // A newer version wants a shell: shown, refused, the lock untouched.
    write_tool(&alice.path("fetcher"), &fetcher("1.1.0", "network, shell"));
    alice.ok(&["publish", "fetcher"]);
    let refused = alice.run(&["lock", "reader", "--update"]);
    assert_ne!(refused.code, Some(0));
    for line in [
        "Risk rises from Low to High; 2 changes raise risk",
        "  + capability shell (High): required, by tool fetcher@1.1.0  [raises risk]",
        "  ~ tool fetcher (High): 1.0.1 -> 1.1.0  [raises risk]",
    ] {
        assert!(
            refused.stderr.lines().any(|l| l == line),
            "{line:?} missing from:\n{}",
            refused.stderr
        );
    }
    let err = alice.fails(&["lock", "reader", "--update"]);
    assert!(err.contains("--accept-risk"), "{err}");
    let json = alice.run(&["--json", "lock", "reader", "--update"]);
    assert_ne!(json.code, Some(0));
    let json = json.json();
    assert_eq!(json["written"], false);
    assert_eq!(json["trust_diff"]["risk_rose"], true);
    assert_eq!(fs::read(dir.join("agent.lock")).unwrap(), locked_101);

    // Accepted: written, with the diff in the report.
    let accepted = alice
        .ok(&["--json", "lock", "reader", "--update", "--accept-risk"])
        .json();
    assert_eq!(accepted["written"], true);
    assert_eq!(accepted["lock"]["tools"]["fetcher"]["version"], "1.1.0");
    assert!(
        accepted["trust_diff"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["subject"] == "shell" && c["raises_risk"] == true)
    );

    // A new pin whose tool cannot be read may ask for anything: refused.
    write_tool(&alice.path("fetcher"), &fetcher("1.2.0", "network, shell"));
    // One creation time for both builds: `publish` builds again, and a
    // second ticking over between the two would give it other bytes.
    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    let built = alice.run_with(&["--json", "build", "fetcher"], &epoch, "");
    assert_eq!(built.code, Some(0), "{}", built.stderr);
    let hex = built.json()["sha256"].as_str().unwrap().to_owned();
    let published = alice.run_with(&["publish", "fetcher"], &epoch, "");
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    let blob = registry
        .data_dir()
        .join(format!("blobs/sha256/{}/{}/{hex}", &hex[..2], &hex[2..4]));
    fs::remove_file(&blob).unwrap_or_else(|e| panic!("{}: {e}", blob.display()));
    let err = alice.fails(&["lock", "reader", "--update"]);
    assert!(
        err.contains("cannot check what fetcher@1.2.0 ask(s) for") && err.contains("--accept-risk"),
        "{err}"
    );
    assert!(
        fs::read_to_string(dir.join("agent.lock"))
            .unwrap()
            .contains("version: 1.1.0"),
        "the 1.1.0 lock is kept"
    );
}
