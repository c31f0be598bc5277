//! `--min-release-age` through the real binaries: `lock` holds back a
//! release younger than the age and names it, the config default does
//! the same, and `install` passes over a young agent version and warns
//! about a young pin it keeps.

use std::fs;

use agentlang_e2e::{backdate, publisher, simple_tool, start_registry, write_tool};

const PROMPT: &str =
    "version: 2\nrole: system\nsections:\n  - name: task\n    content: Fetch pages.\n";

#[test]
fn young_releases_are_held_back_and_named() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");
    write_tool(
        &alice.path("web_fetch"),
        &simple_tool("web_fetch", "1.0.0", &[]),
    );
    alice.ok(&["publish", "web_fetch"]);
    backdate(&registry, "1.0.0", 10);
    write_tool(
        &alice.path("web_fetch"),
        &simple_tool("web_fetch", "1.1.0", &[]),
    );
    alice.ok(&["publish", "web_fetch"]);

    let dir = alice.path("fetcher");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: fetcher\nversion: 2.0.0\ndescription: Fetches pages.\n\
         tools:\n  - name: web_fetch\n    version: ^1.0\n",
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();

    let run = alice.ok(&["lock", "fetcher", "--min-release-age", "3d"]);
    assert!(
        run.stderr.contains("held back as younger than 3days")
            && run.stderr.contains("web_fetch@1.1.0 (published "),
        "{}",
        run.stderr
    );
    let lock = fs::read_to_string(dir.join("agent.lock")).unwrap();
    assert!(
        lock.contains("  web_fetch:\n    version: 1.0.0\n"),
        "{lock}"
    );
    assert!(lock.contains("log_index: "), "{lock}");

    // No age: the newest. The configured default holds it back again.
    alice.ok(&["lock", "fetcher", "--update"]);
    let lock = fs::read_to_string(dir.join("agent.lock")).unwrap();
    assert!(lock.contains("version: 1.1.0"), "{lock}");
    let run = alice.run_with(
        &["lock", "fetcher", "--update"],
        &[("AGENTLANG_MIN_RELEASE_AGE", "3d")],
        "",
    );
    assert!(run.stderr.contains("web_fetch@1.1.0"), "{}", run.stderr);
    let lock = fs::read_to_string(dir.join("agent.lock")).unwrap();
    assert!(lock.contains("version: 1.0.0"), "{lock}");
    // `0` turns the default off.
    let run = alice.run_with(
        &["lock", "fetcher", "--update", "--min-release-age", "0"],
        &[("AGENTLANG_MIN_RELEASE_AGE", "3d")],
        "",
    );
    assert!(!run.stderr.contains("held back"), "{}", run.stderr);

    // An agent published days ago, and its next version a moment ago:
    // install takes the older one, names the newer, and keeps the older
    // one's young pin with a warning.
    alice.ok(&["publish", "fetcher"]);
    backdate(&registry, "2.0.0", 10);
    let yaml = fs::read_to_string(dir.join("agent.yaml")).unwrap();
    fs::write(dir.join("agent.yaml"), yaml.replace("2.0.0", "2.1.0")).unwrap();
    alice.ok(&["lock", "fetcher"]);
    alice.ok(&["publish", "fetcher"]);
    let run = alice.ok(&[
        "install",
        "fetcher",
        "--dir",
        "consumer",
        "--min-release-age",
        "3d",
    ]);
    assert!(
        run.stderr.contains("held back as younger than 3days")
            && run.stderr.contains("fetcher@2.1.0 (published "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the lock pins tool web_fetch@1.1.0")
            && run.stderr.contains("installed as pinned"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("fetcher@2.0.0"), "{}", run.stdout);
    // Only young versions match: refused, naming them.
    let refused = alice.fails(&[
        "install",
        "fetcher@^2.1",
        "--dir",
        "consumer2",
        "--min-release-age",
        "3d",
    ]);
    assert!(
        refused.contains(
            "every unyanked version of fetcher matching ^2.1 was published less than 3days ago (2.1.0)"
        ),
        "{refused}"
    );
}
