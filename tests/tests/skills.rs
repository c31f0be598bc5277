//! Skill packages as an agent's dependencies, end to end with the real
//! binaries: a skill made with `new skill` and published; an agent that
//! names it with a requirement, locked and published; another user's
//! install unpacks the skill folder beside its verified container, `verify`
//! holds it to the container offline, and the hand-off names the folder.

use std::fs;

use agentlang_e2e::{User, publisher, start_registry};
use serde_json::Value;

const PROMPT: &str = "version: 2\nrole: system\nsections:\n  - name: task\n    content: Help.\n";

#[test]
fn an_agent_installs_and_runs_with_the_published_skill_it_locks() {
    let registry = start_registry();
    let alice = publisher(&registry, "alice");

    // The skill, as `new skill` makes it (version 0.1.0), plus a script.
    alice.ok(&["new", "skill", "pdf-tools"]);
    let skill_md = fs::read_to_string(alice.path("pdf-tools/SKILL.md")).unwrap();
    assert!(skill_md.contains("version: 0.1.0"), "{skill_md}");
    fs::create_dir_all(alice.path("pdf-tools/scripts")).unwrap();
    fs::write(
        alice.path("pdf-tools/scripts/extract.py"),
        "print('text')\n",
    )
    .unwrap();
    let skill = alice.ok(&["--json", "publish", "pdf-tools"]).json();
    assert_eq!(skill["kind"], "skill", "{skill}");
    let hash = format!("sha256:{}", skill["sha256"].as_str().unwrap());

    // An agent that depends on it by requirement; a co-located skill of the
    // same name would be ambiguous, and is refused.
    let dir = alice.path("reader");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("agent.yaml"),
        "name: reader\nversion: 1.0.0\ndescription: Reads PDFs.\n\
         skills:\n  - name: pdf-tools\n    version: ^0.1\n",
    )
    .unwrap();
    fs::write(dir.join("prompt.yaml"), PROMPT).unwrap();
    fs::create_dir_all(dir.join("skills/pdf-tools")).unwrap();
    fs::write(
        dir.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: The agent's own.\n---\n# Local\n",
    )
    .unwrap();
    let err = alice.fails(&["validate", "reader"]);
    assert!(
        err.contains("is both the published skill pdf-tools ^0.1 and the co-located"),
        "{err}"
    );
    fs::remove_dir_all(dir.join("skills")).unwrap();

    let locked = alice.ok(&["--json", "lock", "reader"]).json();
    assert_eq!(
        locked["lock"]["skills"]["pdf-tools"]["version"], "0.1.0",
        "{locked}"
    );
    assert_eq!(
        locked["lock"]["skills"]["pdf-tools"]["hash"], hash,
        "{locked}"
    );
    let text = fs::read_to_string(dir.join("agent.lock")).unwrap();
    assert!(text.contains("skills:\n  pdf-tools:\n"), "{text}");
    alice.ok(&["publish", "reader", "--open"]);

    // Another user installs it: the skill's container and its folder.
    let bob = User::new(&registry.url);
    let done = bob
        .ok(&["--json", "install", "reader", "--dir", "reader"])
        .json();
    assert_eq!(done["manifest"]["skills"][0]["name"], "pdf-tools", "{done}");
    let installed = bob.path("reader");
    assert!(installed.join("skills/pdf-tools@0.1.0.skill").is_file());
    assert_eq!(
        fs::read_to_string(installed.join("skills/pdf-tools/SKILL.md")).unwrap(),
        skill_md
    );
    assert_eq!(
        fs::read_to_string(installed.join("skills/pdf-tools/scripts/extract.py")).unwrap(),
        "print('text')\n"
    );
    assert!(!installed.join("skills/pdf-tools/manifest.json").exists());

    let verified = bob.ok(&["--json", "verify", "reader"]).json();
    assert_eq!(verified["valid"], true, "{verified}");

    // The hand-off names the skill, its version and its folder.
    let run = bob.ok(&["run", "reader", "--prompt", "read this"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let entry = &doc["agent"]["skills"]["pdf-tools"];
    assert_eq!(entry["version"], "0.1.0", "{doc}");
    assert_eq!(entry["requirement"], "^0.1");
    assert_eq!(entry["hash"], hash);
    let folder = entry["path"].as_str().unwrap();
    assert!(
        std::path::Path::new(folder).join("SKILL.md").is_file(),
        "{folder}"
    );
    assert!(entry["body"].as_str().unwrap().contains("# Pdf"), "{entry}");

    // A file changed in the unpacked folder fails verification offline.
    fs::write(
        installed.join("skills/pdf-tools/scripts/extract.py"),
        "print('pwned')\n",
    )
    .unwrap();
    let broken = bob.run(&["--json", "verify", "reader"]).json();
    assert_eq!(broken["valid"], false, "{broken}");
    assert!(
        broken
            .to_string()
            .contains("differs from the skill package"),
        "{broken}"
    );
}
