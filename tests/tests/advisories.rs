//! `agentlang audit` through the real binaries: an advisory published to
//! the registry makes `audit` list the affected pin and exit 1 at or above
//! `--severity` (0 below it), and `lock` warn of it.

use std::fs;

use agentlang_e2e::{publisher, simple_tool, start_registry, write_tool};
use serde_json::json;

const PROMPT: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Fetch pages.\n";

#[test]
fn audit_lists_affected_pins_and_its_exit_code_follows_the_level() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_tool(
        &alice.path("web_fetch"),
        &simple_tool("web_fetch", "1.0.0", &[]),
    );
    alice.ok(&["publish", "web_fetch"]);
    let dir = alice.path("fetcher");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: fetcher\nversion: 1.0.0\ndescription: Fetches pages.\n\
         tools:\n  - name: web_fetch\n    version: ^1.0\n",
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();
    let run = alice.ok(&["lock", "fetcher"]);
    assert!(!run.stderr.contains("advisory"), "{}", run.stderr);
    let run = alice.run(&["audit", "fetcher"]);
    assert_eq!(run.code, Some(0), "{}", run.failure());
    assert!(run.stdout.contains("no advisory affects"), "{}", run.stdout);

    // Alice owns web_fetch: she publishes an advisory about 1.0.0.
    let res = reqwest::blocking::Client::new()
        .post(format!("{}/api/v1/advisories", registry.url))
        .bearer_auth(alice.token())
        .json(&json!({
            "modified": "2026-02-01T00:00:00Z",
            "summary": "Follows redirects to file:// URLs",
            "affected": [{
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.1"}]}],
                "database_specific": {"package": "tool/web_fetch"},
            }],
            "database_specific": {"severity": "moderate"},
        }))
        .send()
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().unwrap());
    let id = res.json::<serde_json::Value>().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let run = alice.run(&["audit", "fetcher"]);
    assert_eq!(run.code, Some(1), "{}", run.failure());
    assert!(
        run.stdout.contains(&format!(
            "moderate {id} tool web_fetch@1.0.0: Follows redirects to file:// URLs"
        )),
        "{}",
        run.stdout
    );
    // Below the level asked for: listed, exit 0.
    let run = alice.run(&["audit", "fetcher", "--severity", "high"]);
    assert_eq!(run.code, Some(0), "{}", run.failure());
    assert!(run.stdout.contains(&id), "{}", run.stdout);
    let run = alice.run(&["--json", "audit", "fetcher", "--severity", "moderate"]);
    assert_eq!(run.code, Some(1), "{}", run.failure());
    let answer = run.json();
    assert_eq!(answer["findings"][0]["id"], id.as_str(), "{answer}");
    assert_eq!(answer["findings"][0]["version"], "1.0.0");
    assert_eq!(answer["advisories"][0]["id"], id.as_str());

    // `lock` warns, one line for the pin.
    let run = alice.ok(&["lock", "fetcher", "--update"]);
    assert!(
        run.stderr.contains(&format!(
            "warning: advisory moderate {id} tool web_fetch@1.0.0"
        )),
        "{}",
        run.stderr
    );
}
