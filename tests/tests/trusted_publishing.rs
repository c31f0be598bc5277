//! `agentlang trust add|list|remove`: the CI identities a package trusts
//! (docs/trusted-publishing.md), from the command line against the real
//! registry binary configured with an OpenID Connect issuer.

use agentlang_e2e::{publisher, simple_tool, start_registry_with_env, write_tool};

const ISSUER: &str = "https://token.actions.githubusercontent.com";

#[test]
fn owners_trust_list_and_remove_a_ci_identity() {
    let registry = start_registry_with_env(&[("AGENTLANG_REGISTRY_OIDC_ISSUERS", ISSUER)]);
    let alice = publisher(&registry, "alice");
    write_tool(&alice.path("calc"), &simple_tool("calc", "1.0.0", &[]));
    alice.ok(&["publish", "calc"]);

    let added = alice
        .ok(&[
            "--json",
            "trust",
            "add",
            "calc",
            "--issuer",
            ISSUER,
            "--repository",
            "acme/calc",
            "--workflow",
            "release.yml",
            "--environment",
            "release",
        ])
        .json();
    assert_eq!(added["repository"], "acme/calc", "{added}");
    assert_eq!(added["environment"], "release", "{added}");
    let id = added["id"].as_i64().expect("an id");

    let shown = alice.ok(&["trust", "list", "calc"]).stdout;
    assert!(
        shown.contains(&format!(
            "{id}  {ISSUER} acme/calc release.yml (environment release)"
        )),
        "{shown}"
    );
    let listed = alice
        .ok(&["--json", "trust", "list", "calc", "--kind", "tool"])
        .json();
    assert_eq!(listed["publishers"][0]["id"], id, "{listed}");
    assert_eq!(listed["tokens"], serde_json::json!([]), "{listed}");

    // An issuer the registry is not configured with is refused; so is
    // anyone but an owner.
    let refused = alice.fails(&[
        "trust",
        "add",
        "calc",
        "--issuer",
        "https://gitlab.com",
        "--repository",
        "g/p",
        "--workflow",
        ".gitlab-ci.yml",
    ]);
    assert!(refused.contains("issuer"), "{refused}");
    let bob = publisher(&registry, "bob");
    let refused = bob.fails(&["trust", "list", "calc"]);
    assert!(refused.contains("not an owner"), "{refused}");

    let removed = alice
        .ok(&["trust", "remove", "calc", &id.to_string()])
        .stdout;
    assert!(removed.contains("removed"), "{removed}");
    let shown = alice.ok(&["trust", "list", "calc"]).stdout;
    assert!(shown.contains("no trusted publishers"), "{shown}");
    let refused = alice.fails(&["trust", "remove", "calc", &id.to_string()]);
    assert!(
        refused.contains("not found") || refused.contains("404"),
        "{refused}"
    );
}

#[test]
fn trusted_token_exchanges_the_id_token_it_is_given() {
    let registry = start_registry_with_env(&[("AGENTLANG_REGISTRY_OIDC_ISSUERS", ISSUER)]);
    let alice = publisher(&registry, "alice");
    // The registry's refusal reaches the user: the exchange was made.
    let run = alice.run_with(
        &["trusted-token", "--jwt-env", "CI_JWT"],
        &[("CI_JWT", "not.a.jwt")],
        "",
    );
    assert_ne!(run.code, Some(0), "{}", run.stdout);
    assert!(
        run.stderr.contains("ID token is malformed"),
        "{}",
        run.stderr
    );
    let run = alice.run_with(
        &["trusted-token", "--jwt-env", "CI_JWT"],
        &[("CI_JWT", " ")],
        "",
    );
    assert_ne!(run.code, Some(0));
    assert!(
        run.stderr.contains("CI_JWT holds no ID token"),
        "{}",
        run.stderr
    );
}
