//! The whole journey against a real registry: sign up, register a key,
//! publish tools and an agent that depends on them, lock, pull, verify,
//! inspect, yank and watch resolution move, and the ways it can go wrong.

use std::fs;

use agentlang_e2e::{
    User, copy_dir, publish_research_tools, publisher, simple_tool, start_registry, workspace_root,
    write_tool,
};

#[test]
fn publish_lock_pull_verify_inspect_and_yank() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    publish_research_tools(&alice);

    // The same bytes again are an idempotent retry; other bytes under the
    // same version are refused with the registry's reason.
    let again = alice.ok(&["publish", "web_fetch@1.0.3.tool"]);
    assert!(
        again
            .stdout
            .contains("already published, identical: tool web_fetch@1.0.3"),
        "{}",
        again.stdout
    );
    let again = alice
        .ok(&["--json", "publish", "web_fetch@1.0.3.tool"])
        .json();
    assert_eq!(again["already_published"], true);
    let rebuilt = alice.run_with(
        &["build", "web_fetch", "-o", "web_fetch_again.tool"],
        &[("SOURCE_DATE_EPOCH", "1600000000")],
        "",
    );
    assert_eq!(rebuilt.code, Some(0), "{}", rebuilt.stderr);
    let err = alice.fails(&["publish", "web_fetch_again.tool"]);
    assert!(err.contains("(409)"), "{err}");

    // The agent: lock, then build and publish (the lock is reused).
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &alice.path("ra"),
    );
    let lock = alice.ok(&["--json", "lock", "ra"]).json();
    assert_eq!(lock["written"], true);
    let tools = &lock["lock"]["tools"];
    assert_eq!(tools["web_search"]["version"], "1.2.0", "{lock}");
    assert_eq!(tools["web_fetch"]["version"], "1.0.3");
    assert!(
        lock["lock"]["files"]["agent.yaml"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
    assert_eq!(
        lock["lock"]["agents"].as_object().unwrap().len(),
        2,
        "{lock}"
    );
    assert!(
        fs::read_to_string(alice.path("ra/agent.lock"))
            .unwrap()
            .contains("web_search")
    );
    let again = alice.ok(&["--json", "lock", "ra"]).json();
    assert_eq!(again["written"], false, "an unchanged lock is left alone");

    let built = alice.ok(&["--json", "build", "ra"]).json();
    let prompt_key = built["prompt_key"].as_str().unwrap().to_owned();
    assert_eq!(built["prompt_key_created"], true);
    let published = alice
        .ok(&["--json", "publish", "research-assistant@1.0.0.agent"])
        .json();
    assert_eq!(
        published["url"],
        format!("{}/agents/research-assistant/1.0.0", registry.url)
    );
    assert_eq!(published["already_published"], false);

    // Someone else pulls, verifies against the registry's key, inspects.
    let bob = User::new(&registry.url);
    let pulled = bob.ok(&["--json", "pull", "research-assistant@^1"]).json();
    assert_eq!(pulled["version"], "1.0.0");
    assert_eq!(pulled["sha256"], built["sha256"]);
    let verified = bob
        .ok(&["--json", "verify", "research-assistant@1.0.0.agent"])
        .json();
    assert_eq!(verified["valid"], true);
    let shown = bob
        .ok(&["--json", "inspect", "research-assistant@1.0.0.agent"])
        .json();
    assert_eq!(shown["prompt"], serde_json::Value::Null);
    assert_eq!(shown["prompt_encrypted"], true);
    assert!(
        shown["permissions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["capability"] == "camera" && p["risk"] == "High")
    );
    assert_eq!(shown["lock"]["tools"]["web_search"]["version"], "1.2.0");
    let opened = bob
        .ok(&[
            "--json",
            "inspect",
            "research-assistant@1.0.0.agent",
            "--prompt-key",
            &prompt_key,
        ])
        .json();
    assert!(
        opened["prompt"].as_str().unwrap().contains("mindset"),
        "{opened}"
    );
    let tool = bob
        .ok(&[
            "--json",
            "pull",
            "web_search",
            "--kind",
            "tool",
            "-o",
            "tools/ws.tool",
        ])
        .json();
    assert_eq!(tool["version"], "1.2.0");
    assert!(bob.path("tools/ws.tool").exists());

    // A newer web_search is picked by --update; yanked, resolution moves back.
    write_tool(
        &alice.path("web_search_13"),
        &fs::read_to_string(alice.path("web_search/tool.yaml"))
            .unwrap()
            .replace("version: 1.2.0", "version: 1.3.0"),
    );
    alice.ok(&["publish", "web_search_13"]);
    let kept = alice.ok(&["--json", "lock", "ra"]).json();
    assert_eq!(
        kept["lock"]["tools"]["web_search"]["version"], "1.2.0",
        "pins are kept without --update"
    );
    let updated = alice.ok(&["--json", "lock", "ra", "--update"]).json();
    assert_eq!(updated["lock"]["tools"]["web_search"]["version"], "1.3.0");
    assert_eq!(updated["changes"][0]["change"], "upgraded", "{updated}");
    alice.ok(&[
        "yank",
        "web_search@1.3.0",
        "--kind",
        "tool",
        "--reason",
        "broken",
    ]);
    let moved = alice.ok(&["--json", "lock", "ra", "--update"]).json();
    assert_eq!(moved["lock"]["tools"]["web_search"]["version"], "1.2.0");
    assert_eq!(moved["changes"][0]["change"], "downgraded", "{moved}");
    let err = bob.fails(&["pull", "web_search@>=1.3", "--kind", "tool"]);
    assert!(err.contains("yanked"), "{err}");
    alice.ok(&["yank", "web_search@1.3.0", "--kind", "tool", "--undo"]);
    let back = bob
        .ok(&["--json", "pull", "web_search@>=1.3", "--kind", "tool"])
        .json();
    assert_eq!(back["version"], "1.3.0");

    // search finds the agent.
    let found = bob.ok(&["--json", "search", "research"]).json();
    assert!(found.to_string().contains("research-assistant"), "{found}");

    // Unsatisfiable requirements: the registry's explanation, in one line.
    let yaml = fs::read_to_string(alice.path("ra/agent.yaml"))
        .unwrap()
        .replace("version: ^1.2.0", "version: ^9.0.0");
    fs::write(alice.path("ra/agent.yaml"), yaml).unwrap();
    let err = alice.fails(&["lock", "ra"]);
    assert!(
        err.contains("no set of tool versions satisfies") && err.contains("web_search"),
        "{err}"
    );
    // A changed requirement is a pin: build never re-resolves on its own.
    let err = alice.fails(&["build", "ra"]);
    assert!(
        err.contains("agent.lock is out of date")
            && err.contains("tool web_search: the requirement is now ^9.0.0")
            && err.contains("agentlang lock ra"),
        "{err}"
    );

    // The registry goes away: one clear line.
    let mut registry = registry;
    registry.kill_9();
    let err = bob.fails(&["search", "research"]);
    assert!(err.contains("cannot reach the registry"), "{err}");
}

#[test]
fn uploads_signed_with_an_unregistered_key_or_without_login_are_refused() {
    let registry = start_registry();
    let carol = publisher(&registry, "carol");
    write_tool(&carol.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    carol.ok(&["keygen", "--output", "stray.pem"]);
    carol.ok(&["build", "echo", "--key", "stray.pem", "-o", "stray.tool"]);
    let err = carol.fails(&["publish", "stray.tool"]);
    assert!(err.contains("(4"), "refused with a 4xx: {err}");

    // Tampered after signing: refused locally, before any upload.
    carol.ok(&["build", "echo", "-o", "echo.tool"]);
    let mut bytes = fs::read(carol.path("echo.tool")).unwrap();
    let last = bytes.len() - 20;
    bytes[last] ^= 0xff;
    fs::write(carol.path("tampered.tool"), &bytes).unwrap();
    let err = carol.fails(&["publish", "tampered.tool"]);
    assert!(err.contains("not a valid container"), "{err}");

    // No token: caught before the upload; a bad token: the registry's 401
    // with a hint.
    let dave = User::new(&registry.url);
    fs::copy(carol.path("echo.tool"), dave.path("echo.tool")).unwrap();
    let err = dave.fails(&["publish", "echo.tool"]);
    assert!(err.contains("not logged in"), "{err}");
    let run = dave.run_with(
        &["publish", "echo.tool"],
        &[("AGENTLANG_TOKEN", "not-a-token")],
        "",
    );
    assert!(
        run.stderr.contains("(401)") && run.stderr.contains("agentlang login"),
        "{}",
        run.stderr
    );

    // Keys can be listed and revoked.
    let keys = carol.ok(&["--json", "keys", "list"]).json();
    let key_id = keys["keys"][0]["key_id"].as_str().unwrap().to_owned();
    carol.ok(&["keys", "revoke", &key_id]);
    let err = carol.fails(&["publish", "echo.tool"]);
    assert!(err.contains("(4"), "a revoked key is refused: {err}");
}

/// `agentlang new` starts packages that validate, build and publish as they
/// are, and refuses a bad name or a directory that is in use without
/// touching it.
#[test]
fn new_packages_validate_build_and_publish_as_they_are() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");

    let created = alice.ok(&["--json", "new", "agent", "trip-planner"]).json();
    assert_eq!(
        created["files"],
        serde_json::json!(["agent.yaml", "prompt.yaml", "README.md"])
    );
    alice.ok(&[
        "--json",
        "new",
        "tool",
        "fare_lookup",
        "--path",
        "tools/fares",
    ]);
    for dir in ["trip-planner", "tools/fares"] {
        let text = fs::read_to_string(alice.path(dir).join(if dir == "trip-planner" {
            "agent.yaml"
        } else {
            "tool.yaml"
        }))
        .unwrap();
        assert!(text.contains("docs/") && text.contains("/docs/"), "{text}");
        let valid = alice.ok(&["--json", "validate", dir]).json();
        assert_eq!(valid["valid"], true, "{valid}");
    }
    for (dir, kind, url) in [
        ("tools/fares", "tool", "/tools/fare_lookup/0.1.0"),
        ("trip-planner", "agent", "/agents/trip-planner/0.1.0"),
    ] {
        let published = alice.ok(&["--json", "publish", dir]).json();
        assert_eq!(
            published["url"],
            format!("{}{url}", registry.url),
            "{kind}: {published}"
        );
    }

    // Refusals leave what was there alone.
    let err = alice.fails(&["new", "agent", "Trip Planner"]);
    assert!(err.contains("cannot name a package"), "{err}");
    let before = fs::read_to_string(alice.path("trip-planner/agent.yaml")).unwrap();
    let err = alice.fails(&["new", "tool", "trip-planner"]);
    assert!(err.contains("already exists and is not empty"), "{err}");
    assert_eq!(
        fs::read_to_string(alice.path("trip-planner/agent.yaml")).unwrap(),
        before
    );
    assert!(!alice.path("trip-planner/tool.yaml").exists());
}
