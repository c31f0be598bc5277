//! The client's side of the HTTP contract, against a scripted registry:
//! what is sent, and what the CLI does with good and bad answers. These hold
//! whatever stage the real server is at.

use std::fs;

use agentlang_core::{
    signing::SecretKey,
    tlog::{LogEntry, LogKey, LogOp},
};
use agentlang_e2e::{
    User, copy_dir,
    mock::{MockRegistry, Reply},
    simple_tool, workspace_root, write_tool,
};
use serde_json::json;

/// A user with a key, and a built `echo@1.0.0.tool`; returns (key id,
/// public key PEM, container sha256).
fn built_tool(user: &User) -> (String, String, String) {
    let key = user.ok(&["--json", "keygen"]).json();
    write_tool(&user.path("echo"), &simple_tool("echo", "1.0.0", &[]));
    let built = user.ok(&["--json", "build", "echo"]).json();
    let pem = fs::read_to_string(user.config.path().join("signing.pem.pub")).unwrap();
    (
        key["key_id"].as_str().unwrap().to_owned(),
        pem,
        built["sha256"].as_str().unwrap().to_owned(),
    )
}

/// The log a registry keeps of `echo@1.0.0` published with `sha256`:
/// genesis, the key, the publish.
fn echo_log(url: &str, key_id: &str, sha256: &str) -> Vec<Vec<u8>> {
    let mut genesis = LogEntry::new(LogOp::Genesis, "2026-01-01T00:00:00Z");
    genesis.origin = Some(agentlang_e2e::mock::origin(url));
    let mut key = LogEntry::new(LogOp::KeyAdd, "2026-01-01T00:00:01Z");
    key.signer = Some(key_id.to_owned());
    key.account = Some("alice".to_owned());
    let mut publish = LogEntry::new(LogOp::Publish, "2026-01-01T00:00:02Z");
    publish.kind = Some("tool".to_owned());
    publish.name = Some("echo".to_owned());
    publish.version = Some("1.0.0".to_owned());
    publish.sha256 = Some(sha256.to_owned());
    publish.signer = Some(key_id.to_owned());
    publish.account = Some("alice".to_owned());
    [genesis, key, publish]
        .iter()
        .map(|e| e.to_bytes().expect("a short entry"))
        .collect()
}

fn serve_tool(mock: &MockRegistry, user: &User, key_id: &str, pem: &str, index_hash: &str) {
    let container = fs::read(user.path("echo@1.0.0.tool")).unwrap();
    mock.route(
        "GET",
        "/api/v1/index/tools/echo",
        Reply::json(200, &json!({ "name": "echo", "versions": [
            { "version": "0.9.0", "hash": format!("sha256:{}", "0".repeat(64)), "yanked": false },
            { "version": "1.0.0", "hash": format!("sha256:{index_hash}"), "yanked": false },
            { "version": "2.0.0-rc.1", "hash": format!("sha256:{}", "0".repeat(64)), "yanked": false },
        ]})),
    );
    mock.route(
        "GET",
        "/api/v1/tools/echo/1.0.0/download",
        Reply::bytes(container.clone()),
    );
    mock.route(
        "GET",
        &format!("/api/v1/keys/{key_id}"),
        Reply::json(200, &json!({ "key_id": key_id, "public_key_pem": pem })),
    );
    mock.route(
        "GET",
        "/api/v1/tools/echo/1.0.0",
        Reply::json(
            200,
            &json!({ "kind": "tool", "name": "echo", "version": "1.0.0", "size": container.len(), "log": {"index": 2} }),
        ),
    );
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".part"))
        .collect()
}

#[test]
fn pull_picks_the_newest_match_checks_hash_and_signature_and_writes_atomically() {
    let mock = MockRegistry::start();
    let publisher = User::new(&mock.url);
    let (key_id, pem, sha) = built_tool(&publisher);
    serve_tool(&mock, &publisher, &key_id, &pem, &sha);
    let log_key = LogKey::new(
        agentlang_e2e::mock::origin(&mock.url),
        SecretKey::generate().unwrap(),
    )
    .unwrap();
    mock.serve_log(&log_key, &echo_log(&mock.url, &key_id, &sha));

    let user = User::new(&mock.url);
    let pulled = user
        .ok(&["--json", "pull", "echo", "--kind", "tool"])
        .json();
    assert_eq!(pulled["version"], "1.0.0", "the prerelease is skipped");
    assert_eq!(pulled["signer"], key_id.as_str());
    assert_eq!(pulled["log_index"], 2, "proved in the log");
    assert_eq!(
        fs::read(user.path("echo@1.0.0.tool")).unwrap(),
        fs::read(publisher.path("echo@1.0.0.tool")).unwrap()
    );
    let verified = user.ok(&["--json", "verify", "echo@1.0.0.tool"]).json();
    assert_eq!(
        verified["valid"], true,
        "verify fetched the key from the registry"
    );

    // The index disagrees with the bytes: nothing is written.
    serve_tool(&mock, &publisher, &key_id, &pem, &"ab".repeat(32));
    let err = user.fails(&["pull", "echo@1", "--kind", "tool", "-o", "out/echo.tool"]);
    assert!(
        err.contains("nothing was written") && err.contains(&sha),
        "{err}"
    );
    assert!(
        err.ends_with("try again, and if it persists tell the registry's operator"),
        "{err}"
    );
    assert!(!user.path("out/echo.tool").exists());
    assert_eq!(leftovers(&user.path("out")), Vec::<String>::new());

    // The registry hands out a different key under the signer's id.
    let other = User::new(&mock.url);
    other.ok(&["keygen"]);
    let other_pem = fs::read_to_string(other.config.path().join("signing.pem.pub")).unwrap();
    serve_tool(&mock, &publisher, &key_id, &other_pem, &sha);
    let err = user.fails(&["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"]);
    assert!(
        err.contains("when asked for") && err.contains(&key_id),
        "{err}"
    );
    assert!(!user.path("out/echo.tool").exists());
    assert_eq!(leftovers(&user.path("out")), Vec::<String>::new());

    let err = user.fails(&["pull", "echo@^3", "--kind", "tool"]);
    assert_eq!(
        err,
        "no version of echo matches ^3 (published: 0.9.0, 1.0.0, 2.0.0-rc.1)"
    );
}

#[test]
fn publish_sends_the_container_with_the_token_and_reports_refusals_in_one_line() {
    let mock = MockRegistry::start();
    let user = User::new(&mock.url);
    let (_, _, sha) = built_tool(&user);
    mock.route(
        "POST",
        "/api/v1/publish",
        Reply::json(
            201,
            &json!({ "kind": "tool", "name": "echo", "version": "1.0.0", "sha256": sha }),
        ),
    );
    let env = [("AGENTLANG_TOKEN", "tok-123")];
    let run = user.run_with(&["--json", "publish", "echo@1.0.0.tool"], &env, "");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.json()["url"], format!("{}/tools/echo/1.0.0", mock.url));
    let sent = mock
        .seen()
        .into_iter()
        .find(|s| s.path == "/api/v1/publish")
        .unwrap();
    assert_eq!(sent.body, fs::read(user.path("echo@1.0.0.tool")).unwrap());
    assert_eq!(sent.headers["content-type"], "application/octet-stream");
    assert_eq!(sent.headers["authorization"], "Bearer tok-123");

    // Publishing a directory builds it first; --json is still one document.
    let run = user.run_with(&["--json", "publish", "echo"], &env, "");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let both = run.json();
    assert_eq!(both["build"]["path"], "echo@1.0.0.tool");
    assert_eq!(both["build"]["sha256"], both["sha256"]);

    // --token wins over AGENTLANG_TOKEN.
    user.run_with(
        &["publish", "echo@1.0.0.tool", "--token", "flag-tok"],
        &env,
        "",
    );
    let last = mock
        .seen()
        .into_iter()
        .rev()
        .find(|s| s.path == "/api/v1/publish")
        .unwrap();
    assert_eq!(last.headers["authorization"], "Bearer flag-tok");

    for (status, title, detail, want) in [
        (
            409,
            "Conflict",
            "tool echo 1.0.0 is already published",
            "Conflict: tool echo 1.0.0 is already published (409)",
        ),
        (
            403,
            "Forbidden",
            "you are not an owner of echo",
            "Forbidden: you are not an owner of echo (403)",
        ),
        (
            422,
            "Invalid container",
            "signature does not verify",
            "Invalid container: signature does not verify (422)",
        ),
        (
            413,
            "Payload too large",
            "at most 1 MiB",
            "Payload too large: at most 1 MiB (413) — the registry's upload limit is lower than this container",
        ),
        (
            401,
            "Unauthorized",
            "the token has expired",
            "Unauthorized: the token has expired (401) — run `agentlang login` or set AGENTLANG_TOKEN",
        ),
    ] {
        mock.route(
            "POST",
            "/api/v1/publish",
            Reply::problem(status, title, detail),
        );
        let run = user.run_with(&["publish", "echo@1.0.0.tool"], &env, "");
        assert_eq!(run.code, Some(1));
        assert_eq!(
            run.stderr.trim(),
            format!("error: publishing echo@1.0.0: {want}")
        );
    }
}

fn resolved(web_search: &str) -> serde_json::Value {
    json!({
        "version": "1",
        "resolved_at": "2025-01-29T10:30:00Z",
        "tools": {
            "web_search": { "version": web_search, "hash": format!("sha256:{}", "1".repeat(64)), "requirement": "^1.2.0", "dependencies": ["web_fetch"] },
            "web_fetch": { "version": "1.0.3", "hash": format!("sha256:{}", "2".repeat(64)), "requirement": "~1.0.0" },
            "artifacts": { "version": "0.4.0", "hash": format!("sha256:{}", "3".repeat(64)), "requirement": "*" },
            "sqlite": { "version": "1.0.0", "hash": format!("sha256:{}", "4".repeat(64)), "requirement": "*" },
        },
        "models": { "claude-sonnet-4": { "context_window": 200000, "supports_tools": true } },
    })
}

#[test]
fn lock_sends_requirements_models_and_pins_and_reports_changes() {
    let mock = MockRegistry::start();
    let user = User::new(&mock.url);
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &user.path("ra"),
    );
    mock.route(
        "POST",
        "/api/v1/resolve",
        Reply::json(200, &resolved("1.2.0")),
    );
    // The protocol catalog: a2a 1 deprecated in favour of 2; mcp by date.
    mock.route(
        "GET",
        "/api/v1/protocols/a2a",
        Reply::json(
            200,
            &json!({"name": "a2a", "source": "catalog", "description": "", "updated_at": "2025-01-01T00:00:00Z", "versions": [
                {"version": "1.0.0", "status": "deprecated", "successor": "2.0.0", "message": "migrate to v2"},
                {"version": "2.0.0", "status": "stable"}
            ]}),
        ),
    );
    mock.route(
        "GET",
        "/api/v1/protocols/mcp",
        Reply::json(
            200,
            &json!({"name": "mcp", "source": "catalog", "description": "", "updated_at": "2025-01-01T00:00:00Z", "versions": [
                {"version": "2024.11.5", "status": "stable"},
                {"version": "2025.6.18", "status": "stable"}
            ]}),
        ),
    );
    let resolves = || -> Vec<serde_json::Value> {
        mock.seen()
            .iter()
            .filter(|s| s.path == "/api/v1/resolve")
            .map(|s| serde_json::from_slice(&s.body).unwrap())
            .collect()
    };

    let run = user.run(&["--json", "lock", "ra"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let first = run.json();
    assert_eq!(first["written"], true);
    let added: Vec<&str> = first["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["change"].as_str().unwrap())
        .collect();
    assert!(
        added.iter().all(|c| *c == "added") && added.len() == 10,
        "{first}"
    );
    // Protocols: the catalog's choice, the deprecated one included; the
    // inline custom protocol as defined.
    assert_eq!(
        first["lock"]["protocols"],
        json!({
            "a2a": {"version": "1.0.0", "requirement": "^1.0.0", "source": "catalog"},
            "custom/acme-sync": {"version": "1.0.0", "requirement": "^1.0.0", "source": "inline"},
            "mcp": {"version": "2024.11.5", "requirement": "^2024.11", "source": "catalog"},
        })
    );
    let warned = user.run(&["lock", "ra", "--update"]);
    assert!(
        warned
            .stderr
            .contains("a2a 1.0.0 is deprecated, migrate to 2.0.0: migrate to v2"),
        "{}",
        warned.stderr
    );
    let request = resolves()[0].clone();
    assert_eq!(
        request["tools"],
        json!({ "artifacts": "*", "sqlite": "*", "web_fetch": "~1.0.0", "web_search": "^1.2.0" })
    );
    assert_eq!(request["models"], json!(["claude-sonnet-4"]));
    assert!(request.get("lock").is_none(), "a first lock has no pins");

    let lock = fs::read_to_string(user.path("ra/agent.lock")).unwrap();
    assert!(lock.contains(&format!("registry: {}", mock.url)), "{lock}");
    assert!(
        lock.contains("academic-researcher:") && lock.contains("market-analyst:"),
        "subagents hashed locally:\n{lock}"
    );
    assert!(
        lock.contains("skills/test-helper/SKILL.md: sha256:"),
        "{lock}"
    );

    // Re-locking sends the pins; the registry moves web_search up.
    mock.route(
        "POST",
        "/api/v1/resolve",
        Reply::json(200, &resolved("1.4.0")),
    );
    let run = user.ok(&["lock", "ra"]);
    assert!(
        run.stdout.contains("↑ tool web_search 1.2.0 -> 1.4.0"),
        "{}",
        run.stdout
    );
    let request = resolves()[2].clone();
    assert_eq!(request["lock"]["tools"]["web_search"]["version"], "1.2.0");
    user.ok(&["lock", "ra", "--update"]);
    let request = resolves()[3].clone();
    assert!(
        request.get("lock").is_none(),
        "--update resolves from scratch"
    );

    // The lock now matches: build uses it without asking the registry.
    user.ok(&["keygen"]);
    let before = mock.seen().len();
    user.ok(&["build", "ra"]);
    assert_eq!(mock.seen().len(), before);
}

#[test]
fn an_unsatisfiable_lock_prints_the_registrys_explanation() {
    let mock = MockRegistry::start();
    let user = User::new(&mock.url);
    copy_dir(
        &workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &user.path("ra"),
    );
    let explanation = "web_search ^1.2.0 depends on web_fetch ^2.0.0\nand the agent requires web_fetch ~1.0.0,\nso no version of web_search satisfies ^1.2.0";
    let mut conflict = Reply::problem(422, "Unsatisfiable requirements", explanation);
    let mut body: serde_json::Value = serde_json::from_slice(&conflict.body).unwrap();
    body["conflicts"] = json!([{ "package": "web_fetch" }]);
    conflict.body = body.to_string().into_bytes();
    mock.route("POST", "/api/v1/resolve", conflict);
    let run = user.run(&["lock", "ra"]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr
            .contains("\n  and the agent requires web_fetch ~1.0.0,\n"),
        "the explanation is shown as written:\n{}",
        run.stderr
    );
    let last = run.stderr.lines().last().unwrap();
    assert_eq!(
        last,
        "error: no set of tool versions satisfies the requirements: web_search ^1.2.0 depends on web_fetch ^2.0.0; and the agent requires web_fetch ~1.0.0,; so no version of web_search satisfies ^1.2.0"
    );
    assert!(!user.path("ra/agent.lock").exists());

    // Any other 422 (an unknown model, say) is reported as itself.
    mock.route(
        "POST",
        "/api/v1/resolve",
        Reply::json(
            422,
            &json!({ "title": "The request failed validation", "detail": "1 invalid field",
                     "errors": [{ "field": "models.claude-sonnet-4", "message": "not in the models catalog" }] }),
        ),
    );
    let err = user.fails(&["lock", "ra"]);
    assert_eq!(
        err,
        "The request failed validation: 1 invalid field (models.claude-sonnet-4: not in the models catalog) (422)"
    );
    let accept = mock.seen().last().unwrap().headers["accept"].clone();
    assert_eq!(accept, "application/json");
}

#[test]
fn keys_yank_and_search_send_what_the_contract_says() {
    let mock = MockRegistry::start();
    let user = User::new(&mock.url);
    let key = user.ok(&["--json", "keygen"]).json();
    let key_id = key["key_id"].as_str().unwrap();
    let env = [("AGENTLANG_TOKEN", "tok")];

    mock.route(
        "GET",
        "/api/v1/account",
        Reply::json(200, &json!({ "username": "mock-user" })),
    );
    mock.route(
        "POST",
        "/api/v1/keys",
        Reply::json(201, &json!({ "key_id": key_id })),
    );
    let pubkey = user.config.path().join("signing.pem.pub");
    let run = user.run_with(&["keys", "register", pubkey.to_str().unwrap()], &env, "");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), format!("✓ registered key {key_id}"));
    // The account is asked first: the proof names it.
    let sent: serde_json::Value = serde_json::from_slice(&mock.seen()[1].body).unwrap();
    let public = fs::read_to_string(&pubkey).unwrap();
    assert_eq!(sent["public_key_pem"], public);
    let signature = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(sent["proof"].as_str().unwrap())
            .unwrap()
    };
    agentlang_core::signing::PublicKey::from_spki_pem(&public)
        .unwrap()
        .verify(
            format!("agentlang-key-registration:{}:mock-user:{key_id}", mock.url).as_bytes(),
            &signature,
        )
        .expect("the proof verifies for this registry, account and key");

    mock.route(
        "GET",
        "/api/v1/keys",
        Reply::json(
            200,
            &json!({ "keys": [
                { "key_id": key_id, "revoked_at": null },
                { "key_id": "f".repeat(64), "revoked_at": "2025-01-01T00:00:00Z" },
            ]}),
        ),
    );
    let run = user.run_with(&["keys", "list"], &env, "");
    assert_eq!(
        run.stdout.trim(),
        format!("{key_id}\n{} (revoked)", "f".repeat(64))
    );
    mock.route(
        "DELETE",
        &format!("/api/v1/keys/{key_id}"),
        Reply::json(200, &json!({})),
    );
    let run = user.run_with(&["keys", "revoke", key_id], &env, "");
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_eq!(mock.seen().last().unwrap().method, "DELETE");

    mock.route(
        "POST",
        "/api/v1/tools/web_search/1.2.0/yank",
        Reply::json(200, &json!({ "yanked": true })),
    );
    let run = user.run_with(
        &[
            "yank",
            "web_search@1.2.0",
            "--kind",
            "tool",
            "--reason",
            "leaks tokens",
        ],
        &env,
        "",
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let last = mock.seen().last().unwrap().clone();
    assert_eq!(last.headers["authorization"], "Bearer tok");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&last.body).unwrap()["reason"],
        "leaks tokens"
    );
    mock.route(
        "POST",
        "/api/v1/tools/web_search/1.2.0/unyank",
        Reply::json(200, &json!({ "yanked": false })),
    );
    let run = user.run_with(
        &["yank", "web_search@1.2.0", "--kind", "tool", "--undo"],
        &env,
        "",
    );
    assert_eq!(run.stdout.trim(), "✓ unyanked tool web_search@1.2.0");
    // Without --kind: the one kind the registry has that name in...
    mock.route(
        "GET",
        "/api/v1/index/tools/web_search",
        Reply::json(
            200,
            &json!({ "name": "web_search", "kind": "tool", "versions": [] }),
        ),
    );
    let run = user.run_with(&["yank", "web_search@1.2.0", "--undo"], &env, "");
    assert_eq!(
        run.stdout.trim(),
        "✓ unyanked tool web_search@1.2.0",
        "{}",
        run.stderr
    );
    // ...and when two kinds hold it, the user says which.
    mock.route(
        "GET",
        "/api/v1/index/agents/web_search",
        Reply::json(
            200,
            &json!({ "name": "web_search", "kind": "agent", "versions": [] }),
        ),
    );
    let run = user.run_with(&["yank", "web_search@1.2.0", "--undo"], &env, "");
    assert_eq!(
        run.failure(),
        "web_search names packages of more than one kind (agent, tool); say which with --kind agent or --kind tool"
    );
    let run = user.run_with(&["yank", "nothing@1.2.0"], &env, "");
    assert!(
        run.failure()
            .starts_with("the registry has no package named nothing"),
        "{}",
        run.stderr
    );

    mock.route(
        "GET",
        "/api/v1/search",
        Reply::json(200, &json!({ "total": 1, "results": [
            { "kind": "agent", "name": "research-assistant", "version": "1.0.0", "title": "Research Assistant", "description": "Deep research" },
        ]})),
    );
    let run = user.ok(&["search", "deep research", "--kind", "agent"]);
    assert!(
        run.stdout
            .contains("research-assistant@1.0.0  Research Assistant"),
        "{}",
        run.stdout
    );
    let q = mock.seen().last().unwrap().query.clone();
    assert!(
        q.contains("q=deep+research") || q.contains("q=deep%20research"),
        "{q}"
    );
    assert!(q.contains("kind=agent"), "{q}");
}

/// The log is checked as an outsider would, and every way a registry can
/// lie about it is an error: an entry that records other bytes, a
/// checkpoint under another key, a log that forked or rolled back.
#[test]
fn pull_proves_the_publish_in_the_log_and_refuses_forks_and_rollbacks() {
    let mock = MockRegistry::start();
    let publisher = User::new(&mock.url);
    let (key_id, pem, sha) = built_tool(&publisher);
    serve_tool(&mock, &publisher, &key_id, &pem, &sha);
    let log_key = LogKey::new(
        agentlang_e2e::mock::origin(&mock.url),
        SecretKey::generate().unwrap(),
    )
    .unwrap();
    let honest = echo_log(&mock.url, &key_id, &sha);

    // The log records other bytes for echo@1.0.0.
    let user = User::new(&mock.url);
    mock.serve_log(&log_key, &echo_log(&mock.url, &key_id, &"cd".repeat(32)));
    let err = user.fails(&["pull", "echo", "--kind", "tool"]);
    assert!(
        err.contains("does not record tool echo@1.0.0") && err.contains(&sha),
        "{err}"
    );
    assert!(!user.path("echo@1.0.0.tool").exists(), "nothing written");

    // The honest log: the key is pinned on first use, the checkpoint kept.
    let user = User::new(&mock.url);
    mock.serve_log(&log_key, &honest);
    let run = user.run(&["pull", "echo", "--kind", "tool"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("trusting the log key"),
        "{}",
        run.stderr
    );
    let shown = user.ok(&["--json", "log", "show", "--name", "echo"]).json();
    assert_eq!(shown.as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown[0]["index"], 2);
    assert_eq!(shown[0]["entry"]["sha256"], sha.as_str());
    let audited = user.ok(&["--json", "log", "verify"]).json();
    assert_eq!(audited["size"], 3);

    // A checkpoint under another key is not this log's.
    let impostor = LogKey::new(
        agentlang_e2e::mock::origin(&mock.url),
        SecretKey::generate().unwrap(),
    )
    .unwrap();
    mock.serve_log(&impostor, &honest);
    // It serves the new key too: a reset registry, or an impostor. The
    // error names both keys, the pinned file and the way out.
    let err = user.fails(&["pull", "echo", "--kind", "tool", "-o", "again.tool"]);
    let key_file = user.config_path("logs");
    assert!(
        err.contains("now signs its log with another key")
            && err.contains(&impostor.verifier_key())
            && err.contains(&log_key.verifier_key())
            && err.contains(&key_file.display().to_string())
            && err.contains(&format!("agentlang log forget {}", mock.url)),
        "{err}"
    );
    // ...unless the user says that key is the one (--log-key).
    let run = user.run(&["log", "verify", "--log-key", &impostor.verifier_key()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    // Served with a key it does not verify under: forged, not reset.
    mock.serve_log_signed_by(&log_key, &impostor, &honest);
    let err = user.fails(&["log", "verify"]);
    assert!(
        err.contains("does not verify with the log key pinned in") && !err.contains("log forget"),
        "{err}"
    );
    // The user knows it was reset: forget, and the next command pins the
    // key served then.
    mock.serve_log(&impostor, &honest);
    let forgot = user.ok(&["log", "forget", &mock.url]);
    assert!(
        forgot.stdout.contains(&log_key.verifier_key()) && forgot.stdout.contains("3 entries"),
        "{}",
        forgot.stdout
    );
    let run = user.run(&["pull", "echo", "--kind", "tool", "-o", "again.tool"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stderr.contains("trusting the log key"),
        "{}",
        run.stderr
    );

    // Rolled back: fewer entries than seen before, under the pinned key.
    let user = User::new(&mock.url);
    mock.serve_log(&log_key, &honest);
    user.ok(&["log", "verify"]);
    mock.serve_log(&log_key, &honest[..2]);
    let err = user.fails(&["log", "verify"]);
    assert!(
        err.contains("rolled back") && err.contains("agentlang log forget"),
        "{err}"
    );

    // Forked: a bigger log whose history differs from the one seen.
    let mut forked = echo_log(&mock.url, &key_id, &sha);
    forked[1] = LogEntry::new(LogOp::KeyAdd, "2026-01-01T00:00:09Z")
        .to_bytes()
        .unwrap();
    forked.push(
        LogEntry::new(LogOp::Yank, "2026-01-02T00:00:00Z")
            .to_bytes()
            .unwrap(),
    );
    mock.serve_log(&log_key, &forked);
    let err = user.fails(&["pull", "echo", "--kind", "tool"]);
    assert!(err.contains("forked"), "{err}");

    // Witnesses: required cosignatures that are missing fail the pull.
    let witness =
        agentlang_core::tlog::Witness::new("witness.test/w1", SecretKey::generate().unwrap())
            .unwrap();
    let user = User::new(&mock.url);
    mock.serve_log(&log_key, &honest);
    let err = user.fails(&[
        "pull",
        "echo",
        "--kind",
        "tool",
        "--witness",
        &witness.key().vkey(),
        "--require-witnesses",
        "1",
    ]);
    assert!(err.contains("0 of the 1 witness cosignatures"), "{err}");
}

// A hostile registry: every answer the CLI reads is bounded in bytes and
// time, so what it sends ends each command with one line, and the CLI's
// memory stays where the bounds put it.

/// The peak resident memory a bounded read stays under: the largest bound
/// is an entry bundle's 16 MiB; the review saw 9.75 GiB.
const MEMORY_CEILING_KIB: u64 = 128 * 1024;

/// Runs, insists on one error line, and on the process having stayed
/// under [`MEMORY_CEILING_KIB`]; returns the line.
fn fails_small(user: &User, args: &[&str], env: &[(&str, &str)]) -> String {
    let (run, peak_kib) = user.run_watched(args, env);
    let err = run.failure();
    assert!(peak_kib > 0, "the process's memory was read");
    assert!(
        peak_kib < MEMORY_CEILING_KIB,
        "agentlang {args:?} peaked at {peak_kib} KiB before: {err}"
    );
    eprintln!("agentlang {args:?}: peak {peak_kib} KiB");
    err
}

fn new_log_key(mock: &MockRegistry) -> LogKey {
    LogKey::new(
        agentlang_e2e::mock::origin(&mock.url),
        SecretKey::generate().unwrap(),
    )
    .unwrap()
}

/// A registry serving echo@1.0.0 and its honest log; returns the
/// publisher and the container's bytes.
fn echo_registry(mock: &MockRegistry) -> (User, Vec<u8>) {
    let publisher = User::new(&mock.url);
    let (key_id, pem, sha) = built_tool(&publisher);
    serve_tool(mock, &publisher, &key_id, &pem, &sha);
    mock.serve_log(&new_log_key(mock), &echo_log(&mock.url, &key_id, &sha));
    let container = fs::read(publisher.path("echo@1.0.0.tool")).unwrap();
    (publisher, container)
}

#[test]
fn endless_log_keys_and_error_bodies_stop_at_their_bounds() {
    let mock = MockRegistry::start();
    mock.route(
        "GET",
        "/log/key",
        Reply::bytes(vec![b'k'; 64 * 1024]).endless(),
    );
    let user = User::new(&mock.url);
    let err = fails_small(&user, &["log", "verify"], &[]);
    assert_eq!(
        err,
        format!(
            "fetching the registry's log key: the registry at {} sent more than 4096 bytes of its log key",
            mock.url
        )
    );
    assert!(
        !user.config.path().join("logs").exists(),
        "no key was pinned"
    );

    let mut problem = Reply::problem(500, "Internal Server Error", "and then some");
    problem.body = vec![b' '; 64 * 1024];
    mock.route("GET", "/api/v1/search", problem.endless());
    let err = fails_small(&user, &["search", "anything"], &[]);
    assert_eq!(
        err,
        format!(
            "the registry at {} sent more than 65536 bytes of an error answer (500)",
            mock.url
        )
    );
    // A length announced past the bound is refused before reading.
    mock.route(
        "GET",
        "/api/v1/search",
        Reply::json(
            200,
            &json!({ "results": [], "pad": "x".repeat(2 * 1024 * 1024) }),
        ),
    );
    let err = fails_small(&user, &["search", "anything"], &[]);
    assert_eq!(
        err,
        format!(
            "the registry at {} sent more than 1048576 bytes of search results",
            mock.url
        )
    );
}

#[test]
fn a_checkpoint_of_two_to_the_forty_entries_is_refused_not_read() {
    let mock = MockRegistry::start();
    let key = new_log_key(&mock);
    mock.serve_log(
        &key,
        &[LogEntry::new(LogOp::Genesis, "2026-01-01T00:00:00Z")
            .to_bytes()
            .unwrap()],
    );
    let huge = key
        .sign_checkpoint(&agentlang_e2e::mock::origin(&mock.url), 1 << 40, [7; 32])
        .unwrap();
    mock.route("GET", "/log/checkpoint", Reply::bytes(huge));
    let user = User::new(&mock.url);
    for command in ["verify", "show"] {
        let err = fails_small(&user, &["log", command], &[]);
        assert_eq!(
            err,
            "the registry's log checkpoint claims 1099511627776 entries; reading every entry stops at 16777216"
        );
    }
}

#[test]
fn downloads_stop_at_the_size_the_record_announces_and_leave_nothing() {
    let mock = MockRegistry::start();
    let (_, container) = echo_registry(&mock);
    let n = container.len();
    let download = "/api/v1/tools/echo/1.0.0/download";
    let user = User::new(&mock.url);

    mock.route("GET", download, Reply::bytes(container.clone()).endless());
    let err = fails_small(
        &user,
        &["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"],
        &[],
    );
    assert_eq!(
        err,
        format!(
            "downloading tool echo@1.0.0, which its record says is {n} bytes: the registry at {} sent more than {n} bytes of tool echo@1.0.0",
            mock.url
        )
    );
    assert!(!user.path("out/echo.tool").exists());
    assert_eq!(leftovers(&user.path("out")), Vec::<String>::new());

    // Fewer bytes than announced.
    let record = |size: u64| {
        Reply::json(
            200,
            &json!({ "kind": "tool", "name": "echo", "version": "1.0.0", "size": size, "log": {"index": 2} }),
        )
    };
    mock.route("GET", download, Reply::bytes(container));
    mock.route("GET", "/api/v1/tools/echo/1.0.0", record(n as u64 + 10));
    let err = user.fails(&["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"]);
    assert_eq!(
        err,
        format!(
            "the download of tool echo@1.0.0 was cut after {n} of the {} bytes its record announces (the connection closed); run the command again to resume (the {n} bytes are kept in out/.agentlang-tool-echo@1.0.0.partial)",
            n + 10
        )
    );
    assert_eq!(leftovers(&user.path("out")), Vec::<String>::new());
    assert!(user.path("out/.agentlang-tool-echo@1.0.0.partial").exists());

    // More than any container may have is refused before asking.
    mock.route("GET", "/api/v1/tools/echo/1.0.0", record(1 << 40));
    let err = user.fails(&["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"]);
    assert_eq!(
        err,
        "the registry's record of tool echo@1.0.0 announces 1099511627776 bytes, more than the 67108864 a container may have"
    );
    assert!(!user.path("out/echo.tool").exists());

    // install downloads the same way, and leaves no staging folder.
    let agent_hash = "ab".repeat(32);
    mock.route(
        "GET",
        "/api/v1/index/agents/ra",
        Reply::json(
            200,
            &json!({ "name": "ra", "versions": [
                { "version": "1.0.0", "hash": format!("sha256:{agent_hash}"), "yanked": false },
            ]}),
        ),
    );
    mock.route(
        "GET",
        "/api/v1/agents/ra/1.0.0",
        Reply::json(200, &json!({
            "kind": "agent", "name": "ra", "version": "1.0.0", "sha256": agent_hash, "size": 4096,
            "signer": null, "published_at": "2026-01-01T00:00:00Z", "yanked": false,
        })),
    );
    mock.route(
        "GET",
        "/api/v1/agents/ra/1.0.0/download",
        Reply::bytes(vec![0; 64 * 1024]).endless(),
    );
    let err = fails_small(&user, &["install", "ra", "--dir", "ra"], &[]);
    assert_eq!(
        err,
        format!(
            "downloading agent ra@1.0.0, which its record says is 4096 bytes: the registry at {} sent more than 4096 bytes of agent ra@1.0.0",
            mock.url
        )
    );
    assert!(!user.path("ra").exists());
    let staged: Vec<_> = fs::read_dir(user.work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".agentlang"))
        .collect();
    assert_eq!(staged, Vec::<String>::new());
}

#[test]
fn a_stalled_or_silent_registry_fails_after_agentlang_http_timeout() {
    let mock = MockRegistry::start();
    let (_, container) = echo_registry(&mock);
    let user = User::new(&mock.url);
    let quick = [("AGENTLANG_HTTP_TIMEOUT", "1")];

    mock.route(
        "GET",
        "/api/v1/search",
        Reply::json(200, &json!({ "total": 0, "results": [] })).stalled(),
    );
    let err = fails_small(&user, &["search", "anything"], &quick);
    assert_eq!(
        err,
        format!(
            "the registry at {} stopped sending search results for 1 s (AGENTLANG_HTTP_TIMEOUT)",
            mock.url
        )
    );

    mock.route(
        "GET",
        "/api/v1/search",
        Reply::json(200, &json!({})).silent(),
    );
    let err = fails_small(&user, &["search", "anything"], &quick);
    assert_eq!(
        err,
        format!(
            "the registry at {} did not answer within 1 s (AGENTLANG_HTTP_TIMEOUT)",
            mock.url
        )
    );

    mock.route(
        "GET",
        "/api/v1/tools/echo/1.0.0/download",
        Reply::bytes(container.clone()).stalled(),
    );
    let err = fails_small(
        &user,
        &["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"],
        &quick,
    );
    let n = container.len();
    let half = n / 2;
    let partial = "out/.agentlang-tool-echo@1.0.0.partial";
    assert_eq!(
        err,
        format!(
            "the download of tool echo@1.0.0 was cut after {half} of the {n} bytes its record announces (the registry at {} stopped sending tool echo@1.0.0 for 1 s (AGENTLANG_HTTP_TIMEOUT)); run the command again to resume (the {half} bytes are kept in {partial})",
            mock.url
        )
    );
    assert!(!user.path("out/echo.tool").exists());
    assert_eq!(leftovers(&user.path("out")), Vec::<String>::new());
    assert_eq!(fs::read(user.path(partial)).unwrap(), &container[..half]);

    // Run again: only the rest is asked for, and the whole checks out.
    mock.route(
        "GET",
        "/api/v1/tools/echo/1.0.0/download",
        Reply::bytes(container.clone()),
    );
    user.ok(&["pull", "echo", "--kind", "tool", "-o", "out/echo.tool"]);
    assert_eq!(fs::read(user.path("out/echo.tool")).unwrap(), container);
    assert!(!user.path(partial).exists());
    let asked = mock
        .seen()
        .into_iter()
        .rfind(|s| s.path == "/api/v1/tools/echo/1.0.0/download")
        .unwrap();
    assert_eq!(
        asked.headers.get("range").map(String::as_str),
        Some(format!("bytes={half}-").as_str())
    );

    let (run, _) = user.run_watched(
        &["search", "anything"],
        &[("AGENTLANG_HTTP_TIMEOUT", "soon")],
    );
    assert_eq!(
        run.failure(),
        "AGENTLANG_HTTP_TIMEOUT is \"soon\"; give a whole number of seconds from 1 to 3600"
    );
}

/// An entry of 64 KiB or more cannot be framed in a bundle, so the registry
/// serves an empty placeholder in its place; its leaf hash is still in the
/// level-0 tile.
#[test]
fn a_placeholder_entry_is_counted_by_log_verify_and_refused_by_pull() {
    let mock = MockRegistry::start();
    let publisher = User::new(&mock.url);
    let (key_id, pem, sha) = built_tool(&publisher);
    write_tool(
        &publisher.path("echo09"),
        &simple_tool("echo", "0.9.0", &[]),
    );
    let old_sha = publisher.ok(&["--json", "build", "echo09"]).json()["sha256"]
        .as_str()
        .unwrap()
        .to_owned();
    serve_tool(&mock, &publisher, &key_id, &pem, &sha);
    mock.route(
        "GET",
        "/api/v1/index/tools/echo",
        Reply::json(
            200,
            &json!({ "name": "echo", "versions": [
                { "version": "0.9.0", "hash": format!("sha256:{old_sha}"), "yanked": false },
                { "version": "1.0.0", "hash": format!("sha256:{sha}"), "yanked": false },
            ]}),
        ),
    );
    let old = fs::read(publisher.path("echo@0.9.0.tool")).unwrap();
    mock.route(
        "GET",
        "/api/v1/tools/echo/0.9.0",
        Reply::json(
            200,
            &json!({ "kind": "tool", "name": "echo", "version": "0.9.0", "size": old.len(), "log": {"index": 3} }),
        ),
    );
    mock.route(
        "GET",
        "/api/v1/tools/echo/0.9.0/download",
        Reply::bytes(old),
    );
    // echo@0.9.0's entry, written before the registry bounded entries.
    let mut entries = echo_log(&mock.url, &key_id, &sha);
    let long = json!({
        "v": 1, "op": "publish", "time": "2026-01-01T00:00:03Z", "kind": "tool",
        "name": "echo", "version": "0.9.0", "sha256": old_sha, "signer": key_id,
        "reason": "x".repeat(70_000),
    });
    entries.push(serde_json::to_vec(&long).unwrap());
    let log_key = new_log_key(&mock);
    mock.serve_log(&log_key, &entries);

    let user = User::new(&mock.url);
    let run = user.ok(&["log", "verify"]);
    assert!(
        run.stderr.contains(
            "warning: 1 of the log's entries are too long to be served (the registry serves placeholders)"
        ),
        "{}",
        run.stderr
    );
    let audited = user.ok(&["--json", "log", "verify"]).json();
    assert_eq!(
        (audited["size"].clone(), audited["unavailable"].clone()),
        (json!(4), json!(1))
    );
    let shown = user.ok(&["log", "show"]).stdout;
    assert!(
        shown.contains("      3  (too long to be served)"),
        "{shown}"
    );

    // Another version in the same bundle is proved as ever.
    let pulled = user
        .ok(&["--json", "pull", "echo@=1.0.0", "--kind", "tool"])
        .json();
    assert_eq!(pulled["log_index"], 2);
    // The placeholder's own version cannot be.
    let err = user.fails(&["pull", "echo@=0.9.0", "--kind", "tool"]);
    assert_eq!(
        err,
        "log entry 3 is too long to be served; the registry serves a placeholder"
    );
    assert!(!user.path("echo@0.9.0.tool").exists());
    assert_eq!(leftovers(user.work.path()), Vec::<String>::new());

    // A placeholder's leaf hash is checked by the root: another one fails
    // the audit.
    let size = entries.len() as u64;
    let tile_path = agentlang_core::tlog::tile_path(Some(0), 0, size);
    let mut tree = agentlang_core::tlog::Tree::default();
    for e in &entries {
        tree.append(e).unwrap();
    }
    let mut tile = tree
        .hash_tile(size, 0, 0, u32::try_from(size).unwrap())
        .unwrap();
    tile[3 * 32] ^= 1;
    mock.route("GET", &format!("/log/{tile_path}"), Reply::bytes(tile));
    let fresh = User::new(&mock.url);
    let err = fresh.fails(&["log", "verify"]);
    assert_eq!(
        err,
        "the registry's log entries do not give the root its checkpoint of 4 entries signs"
    );
}
