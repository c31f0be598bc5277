//! The command line's own manners: what it does when its reader goes away,
//! and the account, config and owner commands around the package ones.

use std::process::{Command, Stdio};

use agentlang_e2e::{User, bins};

/// Runs `agentlang ARGS` with a standard output whose reader is already
/// closed, as `agentlang ... | head -1` leaves it once head has its line.
fn run_into_closed_pipe(args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let config = tempfile::tempdir().expect("config folder");
    let out = Command::new(&bins().cli)
        .args(args)
        .env("AGENTLANG_CONFIG_DIR", config.path())
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("running agentlang");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_standard_output_ends_the_output_quietly() {
    for args in [
        &["completions", "bash"][..],
        &["events", "schema"],
        // What every command prints goes through the same writer.
        &["--json", "keygen"],
    ] {
        let (code, stderr) = run_into_closed_pipe(args);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
    }
}

#[test]
fn whoami_logout_and_config_say_who_where_and_why() {
    let registry = agentlang_e2e::start_registry();
    let user = User::new(&registry.url);
    let err = user.fails(&["whoami"]);
    assert!(err.contains("not logged in"), "{err}");
    user.sign_up("alice", "correct horse battery staple");

    let me = user.ok(&["--json", "whoami"]).json();
    assert_eq!(me["username"], "alice", "{me}");
    assert_eq!(me["registry"], registry.url.as_str(), "{me}");
    assert_eq!(me["token_source"], "file", "{me}");
    let human = user.ok(&["whoami"]).stdout;
    assert!(human.starts_with("alice on "), "{human}");

    // Where each setting came from: the harness sets AGENTLANG_REGISTRY.
    let settings = user.ok(&["--json", "config"]).json();
    let setting = |settings: &serde_json::Value, name: &str| {
        settings
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {settings}"))
            .clone()
    };
    let reg = setting(&settings, "registry");
    assert_eq!(reg["source"], "env", "{reg}");
    assert_eq!(reg["value"], registry.url.as_str(), "{reg}");
    assert_eq!(setting(&settings, "token")["value"], "stored for alice");
    let flagged = user
        .ok(&["--json", "--registry", "http://example.test/", "config"])
        .json();
    let reg = setting(&flagged, "registry");
    assert_eq!(reg["source"], "flag", "{reg}");
    assert_eq!(reg["value"], "http://example.test", "{reg}");
    assert_eq!(setting(&flagged, "token")["value"], serde_json::Value::Null);
    let path = user.ok(&["config", "path"]).stdout;
    assert_eq!(
        path.trim_end(),
        user.config_path("config.toml").to_str().unwrap()
    );
    let text = user.ok(&["config"]).stdout;
    assert!(text.contains("AGENTLANG_REGISTRY"), "{text}");

    // logout revokes the token on the registry, not only here.
    let token = user.token();
    let out = user.ok(&["logout"]);
    assert!(out.stdout.contains("revoked its token"), "{out:?}");
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let creds = std::fs::read_to_string(user.config_path("credentials.toml")).unwrap();
    assert!(!creds.contains(&token), "{creds}");
    let err = user.fails(&["whoami"]);
    assert!(err.contains("not logged in"), "{err}");
    let err = user
        .run_with(&["whoami"], &[("AGENTLANG_TOKEN", &token)], "")
        .failure();
    assert!(err.contains("(401)"), "the registry still takes it: {err}");
    let again = user.ok(&["logout"]).stdout;
    assert!(again.contains("nothing to do"), "{again}");
}

#[test]
fn owner_lists_invites_and_removes_like_cargo_owner() {
    let registry = agentlang_e2e::start_registry();
    let alice = agentlang_e2e::publisher(&registry, "alice");
    agentlang_e2e::write_tool(
        &alice.path("echo"),
        &agentlang_e2e::simple_tool("echo", "1.0.0", &[]),
    );
    alice.ok(&["publish", "echo"]);
    let bob = User::new(&registry.url);
    bob.sign_up("bob", "correct horse battery staple");

    let owners = |user: &User| {
        let list = user.ok(&["--json", "owner", "echo", "--list"]).json();
        let names = |key: &str| -> Vec<String> {
            list[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["username"].as_str().unwrap().to_owned())
                .collect()
        };
        (names("owners"), names("invitations"))
    };
    assert_eq!(owners(&bob), (vec!["alice".to_owned()], vec![]));
    let text = bob.ok(&["owner", "echo", "--list"]).stdout;
    assert!(text.contains("alice") && text.contains("founder"), "{text}");

    // Not an owner yet: one error line from the registry.
    let err = bob.fails(&["owner", "echo", "--add", "bob"]);
    assert!(err.contains("(403)"), "{err}");

    let out = alice.ok(&["owner", "echo", "--add", "bob"]).stdout;
    assert!(out.contains("invited bob"), "{out}");
    assert_eq!(
        owners(&alice),
        (vec!["alice".to_owned()], vec!["bob".to_owned()])
    );
    bob.ok(&["owner", "echo", "--accept", "--kind", "tool"]);
    assert_eq!(
        owners(&alice),
        (vec!["alice".to_owned(), "bob".to_owned()], vec![])
    );
    alice.ok(&["owner", "echo", "--remove", "bob"]);
    assert_eq!(owners(&alice), (vec!["alice".to_owned()], vec![]));

    // One action at a time, and a name that holds no package.
    let run = alice.run(&["owner", "echo"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let err = alice.fails(&["owner", "nothing_here", "--list"]);
    assert!(err.contains("no package named nothing_here"), "{err}");
}

#[test]
fn quiet_prints_only_errors_and_verbose_tells_every_request() {
    let registry = agentlang_e2e::start_registry();
    let user = User::new(&registry.url);
    user.sign_up("alice", "correct horse battery staple");

    let loud = user.ok(&["whoami"]);
    assert!(loud.stdout.contains("alice"), "{}", loud.stdout);
    let quiet = user.ok(&["-q", "whoami"]);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    // --json is asked for explicitly: -q does not take it away.
    assert_eq!(
        user.ok(&["-q", "--json", "whoami"]).json()["username"],
        "alice"
    );
    // Errors still speak.
    let err = user
        .run(&["--quiet", "owner", "nothing_here", "--list"])
        .failure();
    assert!(err.contains("no package named"), "{err}");

    let verbose = user.ok(&["-v", "whoami"]);
    let url = format!("{}/api/v1/account", registry.url);
    assert!(
        verbose.stderr.contains(&format!("> GET {url}"))
            && verbose.stderr.contains(&format!("< 200 GET {url}")),
        "{}",
        verbose.stderr
    );
    assert_eq!(verbose.stdout, loud.stdout);
    let run = user.run(&["-q", "-v", "whoami"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}

#[test]
fn trust_fetches_of_pinned_tools_are_not_counted_as_downloads() {
    let registry = agentlang_e2e::start_registry();
    let alice = agentlang_e2e::publisher(&registry, "alice");
    agentlang_e2e::publish_research_tools(&alice);
    agentlang_e2e::copy_dir(
        &agentlang_e2e::workspace_root().join("core/tests/fixtures/agents/research-assistant"),
        &alice.path("research-assistant"),
    );
    let built = alice.ok(&["--json", "build", "research-assistant"]).json();
    let file = built["path"].as_str().unwrap().to_owned();
    // inspect fetches every pinned tool to read what it asks for.
    let run = alice.ok(&["inspect", &file]);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    // A pull is a download.
    alice.ok(&["pull", "web_fetch", "--kind", "tool", "-o", "wf.tool"]);

    let downloads = |tool: &str, version: &str| {
        let url = format!("{}/api/v1/tools/{tool}/{version}", registry.url);
        let record: serde_json::Value = reqwest::blocking::get(&url).unwrap().json().unwrap();
        record["downloads"].as_i64().unwrap()
    };
    // Counts reach the records within seconds: wait for the pull's.
    let started = std::time::Instant::now();
    while downloads("web_fetch", "1.0.3") == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the pull was never counted"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(
        downloads("web_fetch", "1.0.3"),
        1,
        "inspect's fetch counted"
    );
    assert_eq!(
        downloads("web_search", "1.2.0"),
        0,
        "inspect's fetch counted"
    );
}

#[test]
fn search_never_prints_a_name_with_an_empty_version() {
    use agentlang_e2e::mock::{MockRegistry, Reply};
    let mock = MockRegistry::start();
    mock.route(
        "GET",
        "/api/v1/search",
        Reply::json(
            200,
            &serde_json::json!({ "total": 2, "results": [
                { "kind": "tool", "name": "gone", "version": null, "description": "All yanked." },
                { "kind": "tool", "name": "here", "version": "1.0.0", "description": "Live." },
            ]}),
        ),
    );
    let user = User::new(&mock.url);
    let out = user.ok(&["search", "x"]).stdout;
    assert!(!out.contains("gone@"), "{out}");
    assert!(
        out.contains("tool   gone (every version yanked)  All yanked."),
        "{out}"
    );
    assert!(out.contains("tool   here@1.0.0  Live."), "{out}");
}
