//! Accounts and tokens against a real registry: register, login, the token
//! overrides, and the failures a new user meets first.

use agentlang_e2e::{User, start_registry};

#[test]
fn register_login_and_token_overrides() {
    let registry = start_registry();
    let alice = User::new(&registry.url);
    let stdin = "correct horse battery staple\n";
    let run = alice.run_with(
        &[
            "--json",
            "register",
            "--username",
            "alice",
            "--password-stdin",
        ],
        &[],
        stdin,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let registered = run.json();
    assert_eq!(registered["username"], "alice");
    assert_eq!(registered["registry"], registry.url.as_str());
    let creds = alice.config.path().join("credentials.toml");
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let text = std::fs::read_to_string(&creds).unwrap();
    assert!(
        text.contains(&registry.url) && text.contains("token = "),
        "{text}"
    );

    // Login again: the stored token still works, so it is kept.
    let run = alice.run_with(
        &["login", "--username", "alice", "--password-stdin"],
        &[],
        stdin,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout.contains("already logged in to"),
        "{}",
        run.stdout
    );
    assert_eq!(std::fs::read_to_string(&creds).unwrap(), text);
    let first = alice.token();

    // --force: a second token replaces the first, which is revoked.
    let run = alice.run_with(
        &[
            "login",
            "--username",
            "alice",
            "--password-stdin",
            "--force",
        ],
        &[],
        stdin,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("logged in to"), "{}", run.stdout);
    assert_ne!(alice.token(), first);
    let err = alice
        .run_with(&["whoami"], &[("AGENTLANG_TOKEN", &first)], "")
        .failure();
    assert!(
        err.contains("(401)"),
        "the replaced token still works: {err}"
    );

    // Another account: a token of its own, whatever is stored.
    let carol = User::new(&registry.url);
    carol.sign_up("carol", stdin.trim_end());
    let alices = alice.token();
    let run = alice.run_with(
        &["login", "--username", "carol", "--password-stdin"],
        &[],
        stdin,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert_ne!(alice.token(), alices);
    assert_eq!(alice.ok(&["--json", "whoami"]).json()["username"], "carol");

    // A wrong password: the registry's reason, without a login hint.
    let run = alice.run_with(
        &[
            "login",
            "--username",
            "alice",
            "--password-stdin",
            "--force",
        ],
        &[],
        "not the password\n",
    );
    assert_eq!(run.code, Some(1));
    let line = run.stderr.trim();
    assert!(
        line.starts_with("error: ") && line.contains("(401)"),
        "{line}"
    );
    assert!(!line.contains("agentlang login"), "{line}");
    assert_eq!(line.lines().count(), 1);

    // The same name again, differing only in case and -/_: refused.
    let bob = User::new(&registry.url);
    let run = bob.run_with(
        &["register", "--username", "ALICE", "--password-stdin"],
        &[],
        stdin,
    );
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("(409)"), "{}", run.stderr);

    // Too short a password: the field and why, once.
    let run = bob.run_with(
        &["register", "--username", "bob", "--password-stdin"],
        &[],
        "short\n",
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("password") && run.stderr.contains("(422)"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.matches("at least").count(), 1, "{}", run.stderr);

    // --registry beats AGENTLANG_REGISTRY; nothing listens on port 9.
    let run = alice.run(&["--registry", "http://127.0.0.1:9", "search", "x"]);
    assert!(
        run.stderr
            .contains("cannot reach the registry at http://127.0.0.1:9"),
        "{}",
        run.stderr
    );
    let run = alice.run(&["--registry", "ftp://example.com", "search", "x"]);
    assert!(
        run.stderr.contains("must start with http:// or https://"),
        "{}",
        run.stderr
    );
}
