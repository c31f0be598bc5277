//! "Same agent, every time", end to end with the real binaries: the
//! registry publishes only what `validate` accepts; a consumer installs an
//! agent with every tool its lock pins, verifies it offline, checks it
//! against hosts, and runs it through a runtime that checks what it got.

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use agentlang_core::{
    Kind, MemberPath, PackageName, SourceTree, Version,
    container::{self, BuildInput, Created},
    signing::SecretKey,
};
use agentlang_e2e::{
    User, copy_dir, publish_research_tools, publisher, simple_tool, start_registry, workspace_root,
    write_tool,
};
use serde_json::Value;

/// (file, path, message): a problem as validate, build and publish all name it.
type Problem = (String, String, String);

fn problems_of(list: &Value) -> BTreeSet<Problem> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list of problems: {list}"))
        .iter()
        .map(|p| {
            (
                p["file"].as_str().unwrap_or_default().to_owned(),
                p["path"].as_str().unwrap_or_default().to_owned(),
                p["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Writes `files` under `dir`.
fn write_package(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

/// Packs a directory as a container with core's builder, signed with the
/// user's key: what a publisher who skipped `validate` would upload.
fn pack_unchecked(user: &User, dir: &Path, kind: Kind, name: &str, version: &str) -> Vec<u8> {
    let mut tree = SourceTree::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_str().unwrap().to_owned();
                tree.insert(MemberPath::new(rel).unwrap(), fs::read(&path).unwrap());
            }
        }
    }
    let pem = fs::read_to_string(user.config.path().join("signing.pem")).unwrap();
    container::build(&BuildInput {
        tree: &tree,
        kind,
        name: &PackageName::new(name).unwrap(),
        version: &Version::parse(version).unwrap(),
        created: Created::from_unix_seconds(1_738_146_600).unwrap(),
        signing_key: &SecretKey::from_pkcs8_pem(&pem).unwrap(),
        prompt_key: None,
    })
    .unwrap()
}

/// POSTs container bytes; returns the status and the body.
fn publish_raw(user: &User, bytes: Vec<u8>) -> (u16, Value) {
    let res = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/publish", user.registry))
        .bearer_auth(user.token())
        .header("content-type", "application/octet-stream")
        .body(bytes)
        .send()
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().unwrap())
}

/// A package directory: its name, kind and (path, text) files.
type Case = (&'static str, Kind, Vec<(&'static str, String)>);

const PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: task\n    content: Help.\n";

fn agent_yaml(name: &str, extra: &str) -> String {
    format!("name: {name}\nversion: 1.0.0\ndescription: A test agent.\n{extra}")
}

#[test]
fn validate_build_and_publish_refuse_the_same_packages() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    // One broken package per family of rules; each keeps a valid name and
    // version, so the container builder (which checks only those) packs it.
    let cases: Vec<Case> = vec![
        (
            "agent-rules",
            Kind::Agent,
            vec![
                (
                    "agent.yaml",
                    agent_yaml(
                        "agent-rules",
                        "modle: x\npermissions:\n  required: [telepathy]\n",
                    ),
                ),
                ("prompt.yaml", PROMPT.into()),
            ],
        ),
        (
            // The package of the issue: a broken subagent and a skill
            // without frontmatter, and a subagent in a folder.
            "subagents-and-skills",
            Kind::Agent,
            vec![
                ("agent.yaml", agent_yaml("subagents-and-skills", "")),
                ("prompt.yaml", PROMPT.into()),
                (
                    "specialist.yaml",
                    "name: specialist\ndescription: Digs.\nversion: notsemver\nfavourite_colour: blue\n"
                        .into(),
                ),
                ("specialists/deep.yaml", "name: deep\n".into()),
                ("skills/helper/SKILL.md", "# Helper\n\nNo frontmatter.\n".into()),
            ],
        ),
        (
            "prompt-rules",
            Kind::Agent,
            vec![
                ("agent.yaml", agent_yaml("prompt-rules", "")),
                (
                    "prompt.yaml",
                    "version: 2\nrole: narrator\nsections:\n  - name: a\n    content: x\n  - name: a\n    content: y\n"
                        .into(),
                ),
            ],
        ),
        (
            "cross-file",
            Kind::Agent,
            vec![
                (
                    "agent.yaml",
                    agent_yaml(
                        "cross-file",
                        "skills:\n  - name: nowhere\n  - name: helper\ndelegate:\n  mode: static\n  process: sequential\n  agents:\n    - path: ./missing.yaml\n      task: Do it.\n",
                    ),
                ),
                ("prompt.yaml", PROMPT.into()),
                (
                    "skills/helper/SKILL.md",
                    "---\nname: helper\ndescription: Helps.\nallowed-tools: [ghost_tool]\n---\nBody.\n".into(),
                ),
                (
                    "ux.yaml",
                    "tools:\n  other_ghost:\n    labels:\n      running: Going\n".into(),
                ),
            ],
        ),
        (
            "bad-tool",
            Kind::Tool,
            vec![
                (
                    "tool.yaml",
                    "name: bad-tool\nversion: 1.0.0\ndescription: Broken.\nkind: builtin\nreadme: docs/USAGE.md\ninput_schema:\n  type: string\n"
                        .into(),
                ),
                ("README.md", "# Bad\n".into()),
            ],
        ),
    ];
    for (name, kind, files) in &cases {
        let dir = alice.path(name);
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        write_package(&dir, &files);

        let run = alice.run(&["--json", "validate", name]);
        assert_eq!(run.code, Some(1), "{name}: {}", run.stderr);
        let validated = problems_of(&run.json()["problems"]);
        assert!(!validated.is_empty(), "{name}");

        let run = alice.run(&["--json", "build", name]);
        assert_ne!(run.code, Some(0), "{name}: build accepted it");
        assert_eq!(
            problems_of(&run.json()["problems"]),
            validated,
            "{name}: build"
        );
        assert!(run.stderr.contains("problem(s) in"), "{}", run.stderr);

        let (status, body) =
            publish_raw(&alice, pack_unchecked(&alice, &dir, *kind, name, "1.0.0"));
        assert_eq!(status, 422, "{name}: {body}");
        assert!(
            body["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("/problems/validation-failed")),
            "{body}"
        );
        assert_eq!(problems_of(&body["errors"]), validated, "{name}: publish");
    }
    // The issue's package: the registry used to answer 201.
    let run = alice.run(&["--json", "validate", "subagents-and-skills"]);
    let files: BTreeSet<String> = problems_of(&run.json()["problems"])
        .into_iter()
        .map(|p| p.0)
        .collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "skills/helper/SKILL.md".to_owned(),
            "specialist.yaml".to_owned(),
            "specialists/deep.yaml".to_owned()
        ])
    );
    for (name, kind, _) in &cases {
        let plural = if *kind == Kind::Agent {
            "agents"
        } else {
            "tools"
        };
        let res =
            reqwest::blocking::get(format!("{}/api/v1/{plural}/{name}", registry.url)).unwrap();
        assert_eq!(res.status().as_u16(), 404, "{name} was stored");
    }
}

/// The runtime: a script that checks what it received, keeps a copy for
/// the test, and exits with a code of its own choosing.
const RUNTIME: &str = r###"
import json, os, sys
doc = json.load(sys.stdin)
with open(os.environ["AGENTLANG_HANDOFF"]) as f:
    assert json.load(f) == doc, "stdin and AGENTLANG_HANDOFF differ"
assert doc["format"] == "agentlang.handoff/1", doc["format"]
assert doc["prompt"]["user"] == "Research the agent registry market", doc["prompt"]
assert "## mindset" in doc["prompt"]["system"], doc["prompt"]["system"]
names = sorted(t["name"] for t in doc["tools"])
assert names == ["artifacts", "sqlite", "web_fetch", "web_search"], names
ws = next(t for t in doc["tools"] if t["name"] == "web_search")
assert ws["kind"] == "http" and ws["input_schema"]["required"] == ["query"], ws
assert ws["output_schema"]["properties"]["total_count"]["type"] == "integer", ws
assert ws["dependencies"] == ["web_fetch"], ws
assert os.path.isfile(ws["path"]), ws["path"]
assert ws["binding"] == {"http": {"endpoint": "https://search.example/api/search", "method": "GET", "auth": "bearer"}}, ws
assert "binding" not in next(t for t in doc["tools"] if t["name"] == "artifacts")
assert doc["mcp_servers"]["Stripe"]["env"]["STRIPE_SECRET_KEY"] == "sk_test_123", doc["mcp_servers"]
assert doc["constraints"]["limits"] == {"max_turns": 50, "max_delegation_depth": 3, "timeout": 300}
camera = next(c for c in doc["host"]["capabilities"] if c["capability"] == "camera")
assert camera["outcome"] == "granted" and camera["granted_mode"] == "scheduled", camera
assert set(doc["agent"]["subagents"]) == {"academic-researcher", "market-analyst"}
assert doc["agent"]["hash"].startswith("sha256:")
with open(sys.argv[1], "w") as out:
    json.dump(doc, out)
sys.exit(int(sys.argv[2]))
"###;

fn handoff_schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(
        &fs::read_to_string(workspace_root().join("core/schemas/handoff-v1.schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn assert_valid_handoff(doc: &Value) {
    let schema = handoff_schema();
    let errors: Vec<String> = schema.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "hand-off does not match its schema: {errors:#?}\n{doc}"
    );
}

/// Publishes the research tools and the research-assistant fixture (built
/// and locked by the CLI); returns the path of alice's prompt key.
fn publish_research_assistant(alice: &User) -> PathBuf {
    publish_research_tools(alice);
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &alice.path("ra"),
    );
    let built = alice.ok(&["--json", "build", "ra"]).json();
    alice.ok(&["publish", "research-assistant@1.0.0.agent"]);
    PathBuf::from(built["prompt_key"].as_str().unwrap())
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out
}

#[test]
fn install_verify_check_and_run_an_agent_exactly_as_locked() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let prompt_key = publish_research_assistant(&alice);
    let bob = User::new(&registry.url);
    let key = prompt_key.to_str().unwrap();

    // The agent is sealed: without a grant or the key, nothing installs.
    let err = bob.fails(&["install", "research-assistant@^1", "--dir", "ra"]);
    assert!(
        err.contains("is sealed") && err.contains("--prompt-key"),
        "{err}"
    );
    assert!(!bob.path("ra").exists());

    // Install: the agent and every tool its lock pins, each verified.
    let done = bob
        .ok(&[
            "--json",
            "install",
            "research-assistant@^1",
            "--dir",
            "ra",
            "--prompt-key",
            key,
        ])
        .json();
    assert_eq!(done["changed"], true, "{done}");
    let tools: BTreeSet<&str> = done["manifest"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        BTreeSet::from(["artifacts", "sqlite", "web_fetch", "web_search"])
    );
    assert_eq!(
        files_under(&bob.path("ra")),
        BTreeSet::from([
            "agent/research-assistant@1.0.0.agent".to_owned(),
            "agent/research-assistant@1.0.0.agent.tlog-proof".to_owned(),
            "agentlang-install.json".to_owned(),
            "tools/artifacts@0.4.0.tool".to_owned(),
            "tools/artifacts@0.4.0.tool.tlog-proof".to_owned(),
            "tools/sqlite@1.0.0.tool".to_owned(),
            "tools/sqlite@1.0.0.tool.tlog-proof".to_owned(),
            "tools/web_fetch@1.0.3.tool".to_owned(),
            "tools/web_fetch@1.0.3.tool.tlog-proof".to_owned(),
            "tools/web_search@1.2.0.tool".to_owned(),
            "tools/web_search@1.2.0.tool.tlog-proof".to_owned(),
        ])
    );
    // No staging folder is left beside it.
    let beside: Vec<String> = fs::read_dir(bob.work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(beside, ["ra"], "{beside:?}");

    // inspect takes the install directory: its agent's container.
    let run = bob.ok(&["inspect", "ra"]);
    assert!(
        run.stderr
            .contains("ra is an install directory: inspecting its agent, ra/agent/research-assistant@1.0.0.agent"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.starts_with("agent research-assistant@1.0.0"),
        "{}",
        run.stdout
    );

    // Twice is a no-op: nothing is rewritten.
    let manifest_before = fs::read(bob.path("ra/agentlang-install.json")).unwrap();
    let again = bob
        .ok(&[
            "--json",
            "install",
            "research-assistant@^1",
            "--dir",
            "ra",
            "--prompt-key",
            key,
        ])
        .json();
    assert_eq!(again["changed"], false, "{again}");
    assert_eq!(
        fs::read(bob.path("ra/agentlang-install.json")).unwrap(),
        manifest_before
    );

    // Offline verification, with no registry to ask.
    let verified = bob.ok(&["--json", "verify", "ra"]).json();
    assert_eq!(verified["valid"], true, "{verified}");
    assert!(
        verified["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["check"] == "lock" && c["ok"] == true)
    );

    // Hosts: the spec's matrix, and one of bob's own.
    let err = bob.fails(&["check", "ra", "--host", "claude-desktop"]);
    assert!(
        err.starts_with("host claude-desktop cannot run this agent")
            && err.contains("background (required by agent research-assistant)")
            && err.contains("camera"),
        "{err}"
    );
    let desktop = bob
        .ok(&["--json", "check", "ra", "--host", "desktop-app"])
        .json();
    assert_eq!(desktop["runnable"], true);
    assert_eq!(desktop["note"], Value::Null, "an install checks tools too");
    let mobile = bob
        .run(&["--json", "check", "ra", "--host", "mobile-app"])
        .json();
    let outcome = |report: &Value, cap: &str| {
        report["report"]["capabilities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["capability"] == cap)
            .map(|c| c["outcome"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(outcome(&mobile, "filesystem"), "degraded", "{mobile}");
    fs::create_dir_all(bob.config.path().join("hosts")).unwrap();
    fs::write(
        bob.config.path().join("hosts/kiosk.yaml"),
        // shell and oauth: the agent's bash tool, MCP servers and Twitter
        // token need them though its permissions do not say so.
        "name: kiosk\ndescription: A kiosk.\ngrants:\n  network: all\n  storage: all\n  camera: all\n  background: [scheduled]\n  notifications: [user_triggered]\n  shell: all\n  oauth: all\n",
    )
    .unwrap();
    let kiosk = bob.ok(&["--json", "check", "ra", "--host", "kiosk"]).json();
    assert_eq!(outcome(&kiosk, "notifications"), "downgraded", "{kiosk}");
    assert_eq!(outcome(&kiosk, "microphone"), "degraded", "{kiosk}");
    let shown = bob.ok(&["check", "ra", "--host", "kiosk"]).stdout;
    assert!(
        shown.contains("downgraded: on_demand → user_triggered"),
        "{shown}"
    );
    let err = bob.fails(&["check", "ra", "--host", "toaster"]);
    assert!(
        err.contains("unknown host \"toaster\"") && err.contains("kiosk"),
        "{err}"
    );

    // A host that refuses: nothing is installed.
    let err = bob.fails(&[
        "install",
        "research-assistant",
        "--dir",
        "ra-claude",
        "--prompt-key",
        key,
        "--host",
        "claude-desktop",
    ]);
    assert!(
        err.contains("host claude-desktop cannot run this agent"),
        "{err}"
    );
    assert!(!bob.path("ra-claude").exists());

    // Run: the encrypted prompt needs the publisher's key.
    fs::write(bob.path("runtime.py"), RUNTIME).unwrap();
    let runtime = format!("python3 {} got.json 7", bob.path("runtime.py").display());
    let stripe = [
        ("STRIPE_SECRET_KEY", "sk_test_123"),
        ("GMAIL_OAUTH_TOKEN", "gm_456"),
    ];
    let run = bob.run_with(
        &[
            "run",
            "ra",
            "--prompt",
            "Research the agent registry market",
            "--runtime",
            &runtime,
        ],
        &stripe,
        "",
    );
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("is sealed") && run.stderr.contains("--prompt-key"),
        "{}",
        run.stderr
    );
    let run = bob.run_with(
        &[
            "run",
            "ra",
            "--prompt",
            "Research the agent registry market",
            "--prompt-key",
            key,
            "--runtime",
            &runtime,
            "--host",
            "desktop-app",
        ],
        &stripe,
        "",
    );
    assert_eq!(
        run.code,
        Some(7),
        "the runtime's exit code passes through:\n{}",
        run.stderr
    );
    let got: Value =
        serde_json::from_str(&fs::read_to_string(bob.path("got.json")).unwrap()).unwrap();
    assert_valid_handoff(&got);
    assert_eq!(got["host"]["host"], "desktop-app");

    // A missing MCP secret is named; a host that lacks a capability stops it.
    let run = bob.run_with(
        &[
            "run",
            "ra",
            "--prompt",
            "x",
            "--prompt-key",
            key,
            "--runtime",
            &runtime,
        ],
        &[("GMAIL_OAUTH_TOKEN", "gm_456")],
        "",
    );
    assert!(run.stderr.contains("STRIPE_SECRET_KEY"), "{}", run.stderr);
    let run = bob.run_with(
        &[
            "run",
            "ra",
            "--prompt",
            "x",
            "--prompt-key",
            key,
            "--runtime",
            &runtime,
            "--host",
            "browser-extension",
        ],
        &stripe,
        "",
    );
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr
            .contains("host browser-extension cannot run this agent")
            && run.stderr.contains("camera"),
        "{}",
        run.stderr
    );

    // No runtime: the hand-off is printed, and says how to configure one.
    let run = bob.run_with(
        &["run", "ra", "--prompt", "hello", "--prompt-key", key],
        &stripe,
        "",
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_valid_handoff(&printed);
    assert_eq!(printed["prompt"]["user"], "hello");
    assert!(run.stderr.contains("--runtime CMD"), "{}", run.stderr);

    // A tampered tool on disk: verify names it, run refuses, install repairs.
    let tool = bob.path("ra/tools/web_fetch@1.0.3.tool");
    let mut bytes = fs::read(&tool).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    fs::write(&tool, &bytes).unwrap();
    let run = bob.run(&["--json", "verify", "ra"]);
    assert_ne!(run.code, Some(0));
    let failed: Vec<String> = run.json()["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| c["check"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(failed, ["tool web_fetch@1.0.3"], "{}", run.stdout);
    let err = bob.fails(&["run", "ra", "--prompt", "x", "--prompt-key", key]);
    assert!(
        err.contains("fails verification") && err.contains("web_fetch"),
        "{err}"
    );
    fs::write(bob.path("ra/tools/notes.txt"), "mine").unwrap();
    let err = bob.fails(&["verify", "ra"]);
    assert!(err.contains("no unlisted files"), "{err}");
    fs::remove_file(bob.path("ra/tools/notes.txt")).unwrap();
    let repaired = bob
        .ok(&[
            "--json",
            "install",
            "research-assistant@^1",
            "--dir",
            "ra",
            "--prompt-key",
            key,
        ])
        .json();
    assert_eq!(repaired["changed"], true);
    bob.ok(&["verify", "ra"]);

    // A new version that also wants a wallet: --frozen refuses to move, a
    // plain install shows what it gains and moves only when accepted.
    let yaml = fs::read_to_string(alice.path("ra/agent.yaml"))
        .unwrap()
        .replacen("version: 1.0.0", "version: 1.1.0", 1)
        .replacen("  optional:\n", "  optional:\n    - wallet\n", 1);
    fs::write(alice.path("ra/agent.yaml"), yaml).unwrap();
    alice.ok(&["lock", "ra"]);
    alice.ok(&["build", "ra"]);
    alice.ok(&["publish", "research-assistant@1.1.0.agent"]);
    let err = bob.fails(&[
        "install",
        "research-assistant@^1",
        "--dir",
        "ra",
        "--prompt-key",
        key,
        "--frozen",
    ]);
    assert!(
        err.contains("holds research-assistant@1.0.0") && err.contains("to 1.1.0"),
        "{err}"
    );
    let err = bob.fails(&[
        "install",
        "research-assistant",
        "--dir",
        "fresh",
        "--prompt-key",
        key,
        "--frozen",
    ]);
    assert!(err.contains("holds no install"), "{err}");
    let refused = bob.run(&[
        "install",
        "research-assistant@^1",
        "--dir",
        "ra",
        "--prompt-key",
        key,
    ]);
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.stderr.contains(
            "+ capability wallet (Critical): optional, by agent research-assistant  [raises risk]"
        ) && refused.stderr.contains("--accept-risk"),
        "{}",
        refused.stderr
    );
    let kept: serde_json::Value =
        serde_json::from_slice(&fs::read(bob.path("ra/agentlang-install.json")).unwrap()).unwrap();
    assert_eq!(kept["agent"]["version"], "1.0.0");
    let moved = bob
        .ok(&[
            "--json",
            "install",
            "research-assistant@^1",
            "--dir",
            "ra",
            "--prompt-key",
            key,
            "--accept-risk",
        ])
        .json();
    assert_eq!(moved["replaced"], "1.0.0", "{moved}");
    assert!(
        moved["trust_diff"]["changes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["subject"] == "wallet" && c["raises_risk"] == true),
        "{moved}"
    );
    assert_eq!(moved["manifest"]["agent"]["version"], "1.1.0");

    // A signer whose key the registry says was revoked before the version
    // was published (the registry's data tampered with): refused.
    let db = registry.data_dir().join("registry.db");
    let status = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('UPDATE signing_keys SET revoked_at = 1'); c.commit()",
        ])
        .arg(&db)
        .status()
        .unwrap();
    assert!(status.success());
    let err = bob.fails(&[
        "install",
        "research-assistant",
        "--dir",
        "after-revocation",
        "--prompt-key",
        key,
    ]);
    assert!(err.contains("after its signing key was revoked"), "{err}");
    assert!(!bob.path("after-revocation").exists());
}

#[test]
fn run_a_package_directory_with_its_locked_tools() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_tool(&alice.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    alice.ok(&["publish", "echo"]);
    write_package(
        &alice.path("helper"),
        &[
            (
                "agent.yaml",
                &agent_yaml("helper", "tools:\n  - name: echo\n    version: ^1\n"),
            ),
            ("prompt.yaml", PROMPT),
        ],
    );
    // No lock yet: run says how to make one.
    let err = alice.fails(&["run", "helper", "--prompt", "hi"]);
    assert!(err.contains("agentlang lock helper"), "{err}");
    alice.ok(&["lock", "helper"]);
    let run = alice.run(&["run", "helper", "--prompt", "hi"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_valid_handoff(&doc);
    // The spec's defaults for what the agent leaves out.
    assert_eq!(doc["constraints"]["limits"]["max_delegation_depth"], 3);
    assert_eq!(doc["constraints"]["limits"]["max_turns"], Value::Null);
    assert_eq!(doc["constraints"]["budget"]["max_cost_usd"], Value::Null);
    assert_eq!(doc["agent"]["hash"], Value::Null);
    assert_eq!(doc["tools"][0]["name"], "echo");
    assert_eq!(doc["prompt"]["system"], "## task\nHelp.\n");
    let xml = alice.ok(&["run", "helper", "--prompt", "hi", "--prompt-format", "xml"]);
    let doc: Value = serde_json::from_str(&xml.stdout).unwrap();
    assert_eq!(doc["prompt"]["system"], "<task>\nHelp.\n</task>\n");
    assert_eq!(doc["prompt"]["format"], "xml");

    // Edited since it was locked: run says so.
    let locked = fs::read_to_string(alice.path("helper/agent.lock")).unwrap();
    let first_yaml = fs::read_to_string(alice.path("helper/agent.yaml")).unwrap();
    fs::write(
        alice.path("helper/agent.yaml"),
        first_yaml.replace("version: ^1\n", "version: ^2\n"),
    )
    .unwrap();
    let err = alice.fails(&["run", "helper", "--prompt", "hi"]);
    assert!(
        err.contains("agent.lock does not match the package"),
        "{err}"
    );

    // A lock whose pin does not satisfy the requirement (hand-edited to the
    // old version, hashes and all) is refused before anything runs.
    write_tool(&alice.path("echo2"), &simple_tool("echo", "2.0.0", &[]));
    alice.ok(&["publish", "echo2"]);
    let relocked = alice.ok(&["--json", "lock", "helper"]).json();
    let old_hash = |text: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("hash: "))
            .unwrap()
            .to_owned()
    };
    let new_text = fs::read_to_string(alice.path("helper/agent.lock")).unwrap();
    assert_eq!(relocked["lock"]["tools"]["echo"]["version"], "2.0.0");
    let forged = new_text
        .replace("version: 2.0.0", "version: 1.0.0")
        .replace(&old_hash(&new_text), &old_hash(&locked));
    fs::write(alice.path("helper/agent.lock"), forged).unwrap();
    // (The pin is judged against the requirement before the registry is
    // asked: `lockcheck::check` without its facts, as validate judges it.)
    let err = alice.fails(&["run", "helper", "--prompt", "hi"]);
    assert!(
        err.contains("agent.lock does not match the package")
            && err.contains(
                "echo is pinned at 1.0.0, which does not satisfy the agent's requirement ^2"
            )
            && err.contains("[lock-unsatisfied]"),
        "{err}"
    );
}

/// A lock that does not lock a declared model: `validate` names it in
/// agent.lock at its field with the registry's problem type, `build`
/// refuses it the same way, and the registry refuses a container packed
/// by hand with it as `lock-models-missing` at the same field.
#[test]
fn validate_build_and_publish_judge_a_lock_alike() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    let models = "models:\n  claude-sonnet-4:\n    provider: anthropic\n";
    write_package(
        &alice.path("helper"),
        &[
            ("agent.yaml", &agent_yaml("helper", models)),
            ("prompt.yaml", PROMPT),
        ],
    );
    // No lock yet: valid, with a note that build makes one.
    let run = alice.run(&["validate", "helper"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stderr.contains("no agent.lock yet"), "{}", run.stderr);
    alice.ok(&["lock", "helper"]);
    let path = alice.path("helper/agent.lock");
    let mut lock =
        agentlang_core::lockfile::Lockfile::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert!(lock.models.keys().any(|m| m.as_str() == "claude-sonnet-4"));
    lock.models.clear();
    fs::write(&path, lock.to_yaml().unwrap()).unwrap();

    let run = alice.run(&["--json", "validate", "helper"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let validated = problems_of(&run.json()["problems"]);
    let expected = ("agent.lock".to_owned(), "models.claude-sonnet-4".to_owned());
    assert_eq!(
        validated
            .iter()
            .map(|(f, p, _)| (f.clone(), p.clone()))
            .collect::<Vec<_>>(),
        std::slice::from_ref(&expected)
    );
    assert!(
        validated
            .iter()
            .all(|(_, _, m)| m.ends_with("[lock-models-missing]")),
        "{validated:?}"
    );
    let run = alice.run(&["--json", "build", "helper"]);
    assert_ne!(run.code, Some(0), "build accepted it");
    assert_eq!(problems_of(&run.json()["problems"]), validated);

    let (status, body) = publish_raw(
        &alice,
        pack_unchecked(
            &alice,
            &alice.path("helper"),
            Kind::Agent,
            "helper",
            "1.0.0",
        ),
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        body["type"]
            .as_str()
            .is_some_and(|t| t.ends_with("/problems/lock-models-missing")),
        "{body}"
    );
    assert_eq!(body["errors"][0]["field"], expected.1.as_str(), "{body}");

    // An edit build rehashes itself is a warning, not a problem.
    alice.ok(&["lock", "helper"]);
    fs::write(
        alice.path("helper/prompt.yaml"),
        PROMPT.replace("Help.", "Help more."),
    )
    .unwrap();
    let run = alice.run(&["validate", "helper"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("files.prompt.yaml") && run.stderr.contains("updates this hash"),
        "{}",
        run.stderr
    );
}

/// `install` unpacks the agent's `context/` members beside its container,
/// and `verify` holds the folder to the container: a changed or an added
/// file fails it.
#[test]
fn install_unpacks_the_agents_context_files() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_package(
        &alice.path("helper"),
        &[
            ("agent.yaml", &agent_yaml("helper", "")),
            ("prompt.yaml", PROMPT),
            ("context/templates/brief.md", "# Brief\n\n{{topic}}\n"),
            ("context/glossary.txt", "agent: a program that acts\n"),
        ],
    );
    alice.ok(&["publish", "helper", "--open"]);
    let bob = User::new(&registry.url);
    bob.ok(&["install", "helper", "--dir", "h"]);
    let installed = bob.path("h");
    assert_eq!(
        fs::read_to_string(installed.join("context/templates/brief.md")).unwrap(),
        "# Brief\n\n{{topic}}\n"
    );
    assert_eq!(
        files_under(&installed.join("context")),
        BTreeSet::from(["glossary.txt".to_owned(), "templates/brief.md".to_owned()])
    );
    let verified = bob.ok(&["--json", "verify", "h"]).json();
    assert_eq!(verified["valid"], true, "{verified}");

    fs::write(installed.join("context/glossary.txt"), "changed\n").unwrap();
    let broken = bob.run(&["--json", "verify", "h"]).json();
    assert_eq!(broken["valid"], false, "{broken}");
    assert!(
        broken
            .to_string()
            .contains("differs from the agent package"),
        "{broken}"
    );
    fs::write(
        installed.join("context/glossary.txt"),
        "agent: a program that acts\n",
    )
    .unwrap();
    fs::write(installed.join("context/extra.md"), "added by hand\n").unwrap();
    let broken = bob.run(&["--json", "verify", "h"]).json();
    assert_eq!(broken["valid"], false, "{broken}");
    assert!(broken.to_string().contains("extra.md"), "{broken}");
}
