//! Sealed prompts that the right people can open (docs/prompt-grants.md),
//! end to end with the real binaries: alice publishes a sealed agent, bob
//! cannot run it until alice grants it, then installs and runs it with
//! nothing extra; the wrapped key opens with the standard `age` tool and
//! the prompt with Python's AES-GCM, neither written here; a revocation
//! stops further fetches, and the public log never names bob.

use std::{fs, path::Path, process::Command};

use agentlang_e2e::{User, publisher, start_registry, workspace_root};
use serde_json::Value;

const PROMPT: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Plan the trip, cheaply.\n";

fn write_agent(dir: &Path, name: &str, version: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        format!("name: {name}\nversion: {version}\ndescription: Plans trips.\n"),
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();
}

fn get(user: &User, path: &str) -> reqwest::blocking::Response {
    reqwest::blocking::Client::new()
        .get(format!("{}{path}", user.registry))
        .bearer_auth(user.token())
        .send()
        .unwrap()
}

/// Whether a tool nobody here wrote is on the PATH; under CI it must be.
fn have(tool: &str) -> bool {
    let found = Command::new(tool).arg("--version").output().is_ok();
    assert!(
        found || std::env::var("CI").as_deref() != Ok("true"),
        "{tool} is not installed (.ci/run installs it)"
    );
    found
}

#[test]
fn a_sealed_agent_runs_for_the_accounts_its_owner_grants_it_to() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_agent(&alice.path("trip"), "trip-planner", "0.1.0");
    // Published once: a second build in another second would be other
    // bytes for the same version.
    let shown = alice.ok(&["publish", "trip"]);
    assert!(
        shown.stdout.contains("sealed: only its owners"),
        "{}",
        shown.stdout
    );
    assert!(
        shown
            .stdout
            .contains("agentlang grant trip-planner --to USERNAME"),
        "{}",
        shown.stdout
    );
    let record: Value = get(&alice, "/api/v1/agents/trip-planner/0.1.0")
        .json()
        .unwrap();
    assert_eq!(record["prompt"], "sealed", "{record}");
    let key_id = record["prompt_key_id"].as_str().unwrap().to_owned();
    assert_eq!(key_id.len(), 16);

    let bob = User::new(&registry.url);
    bob.sign_up("bob", "correct horse battery staple");
    // No grant: install stops, naming the owner and the owner's command.
    let err = bob.fails(&["install", "trip-planner"]);
    assert!(
        err.contains("alice") && err.contains("agentlang grant trip-planner --to bob"),
        "{err}"
    );
    assert!(!bob.path("trip-planner").exists());
    // A grant needs the grantee's recipient first.
    let err = alice.fails(&["grant", "trip-planner", "--to", "bob"]);
    assert!(err.contains("keygen --prompt"), "{err}");

    let made = bob.ok(&["--json", "keygen", "--prompt"]).json();
    let identity = bob.config.path().join("prompt.identity");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&identity).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert!(made["recipient"].as_str().unwrap().starts_with("age1"));
    bob.ok(&["keys", "register", "--prompt"]);
    alice.ok(&["grant", "trip-planner", "--to", "bob"]);

    // Bob needs nothing more: install fetches and opens the key, run runs.
    bob.ok(&["install", "trip-planner"]);
    let run = bob.ok(&["run", "trip-planner", "--prompt", "Lisbon in May"]);
    let handoff: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        handoff["prompt"]["system"],
        "## task\nPlan the trip, cheaply.\n"
    );
    // The fetched key is kept for offline runs, private, and never printed.
    let kept = fs::read_dir(bob.config.path().join("prompt-keys"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        kept.to_string_lossy().contains(&key_id),
        "{}",
        kept.display()
    );
    let key_text = fs::read_to_string(&kept).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&kept).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    for output in [&run.stdout, &run.stderr] {
        assert!(!output.contains(key_text.trim()) && !output.contains("AGE-SECRET-KEY"));
    }

    // Who holds what: the owner sees bob; bob sees his grant; carol, nothing.
    let listed = alice
        .ok(&["--json", "grant", "list", "trip-planner"])
        .json();
    assert_eq!(listed["grants"][0]["grantee"], "bob", "{listed}");
    let held = bob.ok(&["--json", "grant", "list"]).json();
    assert_eq!(held["grants"].as_array().map(Vec::len), Some(1), "{held}");
    let carol = User::new(&registry.url);
    carol.sign_up("carol", "correct horse battery staple");
    assert!(carol.run(&["grant", "list", "trip-planner"]).code != Some(0));
    let status = get(&carol, "/api/v1/agents/trip-planner/0.1.0/prompt-key").status();
    assert_eq!(status.as_u16(), 404);

    // The standard tools open it: `age` the wrapped key, Python's
    // `cryptography` the prompt, from the container bob pulls.
    if have("age") {
        let wrapped = get(&bob, "/api/v1/agents/trip-planner/0.1.0/prompt-key");
        assert_eq!(wrapped.status().as_u16(), 200);
        fs::write(bob.path("key.age"), wrapped.bytes().unwrap()).unwrap();
        let opened = Command::new("age")
            .args(["-d", "-i"])
            .arg(&identity)
            .arg(bob.path("key.age"))
            .output()
            .unwrap();
        assert!(
            opened.status.success(),
            "{}",
            String::from_utf8_lossy(&opened.stderr)
        );
        fs::write(bob.path("trip.prompt.key"), &opened.stdout).unwrap();
        bob.ok(&["pull", "trip-planner", "--output", "trip.agent"]);
        let extracted = Command::new("python3")
            .args([
                "-c",
                "import sys, tarfile; t = tarfile.open(sys.argv[1], 'r:gz'); \
                 open(sys.argv[2], 'wb').write(t.extractfile('prompt.yaml.enc').read())",
            ])
            .arg(bob.path("trip.agent"))
            .arg(bob.path("prompt.yaml.enc"))
            .status()
            .unwrap();
        assert!(extracted.success());
        let plain = Command::new("python3")
            .arg(workspace_root().join("core/tests/interop/aesgcm_envelope.py"))
            .arg("open")
            .arg(bob.path("trip.prompt.key"))
            .arg("agent/trip-planner@0.1.0/prompt.yaml")
            .arg(bob.path("prompt.yaml.enc"))
            .output()
            .unwrap();
        assert!(
            plain.status.success(),
            "{}",
            String::from_utf8_lossy(&plain.stderr)
        );
        assert_eq!(String::from_utf8(plain.stdout).unwrap(), PROMPT);
    }

    // Revoked: the registry serves bob's key no more. A machine that never
    // fetched it (bob's kept keys gone) cannot run the agent.
    alice.ok(&["grant", "trip-planner", "--to", "bob", "--revoke"]);
    assert_eq!(
        get(&bob, "/api/v1/agents/trip-planner/0.1.0/prompt-key")
            .status()
            .as_u16(),
        404
    );
    fs::remove_dir_all(bob.config.path().join("prompt-keys")).unwrap();
    fs::remove_dir_all(bob.path("trip-planner")).unwrap();
    let err = bob.fails(&["install", "trip-planner"]);
    assert!(err.contains("no grant"), "{err}");

    // The public log has both changes, and never bob's name.
    let shown = alice.ok(&["--json", "log", "show", "--name", "trip-planner"]);
    assert!(shown.stdout.contains("grant_add"), "{}", shown.stdout);
    assert!(shown.stdout.contains("grant_revoke"), "{}", shown.stdout);
    assert!(!shown.stdout.contains("bob"), "{}", shown.stdout);
    // ...and an audit of the whole log knows grant entries.
    let audited = alice.ok(&["--json", "log", "verify"]).json();
    assert_eq!(audited["verified"], true, "{audited}");
}

#[test]
fn an_open_agent_needs_no_key_and_shows_its_prompt() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_agent(&alice.path("open"), "open-planner", "0.1.0");
    let published = alice.ok(&["--json", "publish", "open", "--open"]).json();
    assert_eq!(published["prompt"], "open", "{published}");
    let bob = User::new(&registry.url);
    bob.ok(&["install", "open-planner"]);
    let run = bob.ok(&["run", "open-planner", "--prompt", "hi"]);
    let handoff: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        handoff["prompt"]["system"],
        "## task\nPlan the trip, cheaply.\n"
    );
    let inspected = bob.ok(&["inspect", "open-planner/agent/open-planner@0.1.0.agent"]);
    assert!(
        inspected.stdout.contains("Plan the trip, cheaply."),
        "{}",
        inspected.stdout
    );
}
