//! Skill packages and the Agent Skills discovery index: published like any
//! package, listed newest-first in `/.well-known/agent-skills/index.json`
//! with a `url` whose bytes hash to the entry's `digest`, and checked as a
//! client would by `skills-ref` (the specification's reference validator,
//! `AGENTLANG_TEST_SKILLS_REF`; skipped without it, except under CI=true).

use std::{path::Path, time::Duration};

use agentlang_core::Kind;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    conformance,
    publish::{PROMPT_YAML, agent_with, build, locked_agent, publish, published, publisher},
    support::{Backend, TestApp, backend_tests, problem, seed},
};

backend_tests!(
    the_index_lists_each_skills_newest_release_with_its_digest,
    a_skill_md_outside_the_spec_is_refused_naming_the_file,
    skills_ref_accepts_what_the_index_serves,
    agents_lock_and_publish_against_published_skills,
    skills_have_pages_and_appear_in_search,
);

fn skill_md(name: &str, version: &str, description: &str) -> String {
    format!(
        "---\nname: {name}\ndescription: {description}\nlicense: MIT\nmetadata:\n  version: {version}\n---\n# {name}\n\nRun scripts/extract.py on the file.\n"
    )
}

fn skill(key: &agentlang_core::signing::SecretKey, name: &str, version: &str) -> Vec<u8> {
    let md = skill_md(
        name,
        version,
        &format!("{name} {version} extracts text. Use for PDFs."),
    );
    build(
        key,
        Kind::Skill,
        name,
        version,
        &[
            ("SKILL.md", md.as_bytes()),
            ("scripts/extract.py", b"print('text')\n"),
            ("references/REFERENCE.md", b"# Reference\n"),
        ],
        1_738_146_600,
    )
}

async fn index(app: &TestApp) -> Value {
    let res = app.get("/.well-known/agent-skills/index.json").await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    res.json().await.unwrap()
}

async fn the_index_lists_each_skills_newest_release_with_its_digest(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let empty = index(&app).await;
    assert_eq!(
        empty,
        json!({"$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json", "skills": []})
    );

    let alice = publisher(&app, "alice").await;
    let v1 = published(&app, &alice.token, skill(&alice.key, "pdf-tools", "1.0.0")).await;
    assert_eq!(v1["kind"], "skill");
    published(&app, &alice.token, skill(&alice.key, "pdf-tools", "1.1.0")).await;
    published(&app, &alice.token, skill(&alice.key, "csv-tools", "0.3.0")).await;
    // A prerelease is not the release clients should take.
    published(
        &app,
        &alice.token,
        skill(&alice.key, "csv-tools", "0.4.0-rc.1"),
    )
    .await;

    let listed = index(&app).await;
    let skills = listed["skills"].as_array().unwrap();
    let names: Vec<(&str, &str)> = skills
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["version"].as_str().unwrap()))
        .collect();
    assert_eq!(names, [("csv-tools", "0.3.0"), ("pdf-tools", "1.1.0")]);
    for entry in skills {
        assert_eq!(entry["type"], "archive");
        let url = entry["url"].as_str().unwrap();
        assert_eq!(
            url,
            format!(
                "/api/v1/skills/{}/{}/download",
                entry["name"].as_str().unwrap(),
                entry["version"].as_str().unwrap()
            )
        );
        let bytes = app.get(url).await.bytes().await.unwrap();
        assert_eq!(
            entry["digest"].as_str().unwrap(),
            format!("sha256:{}", hex::encode(Sha256::digest(&bytes))),
            "the digest is the SHA-256 of what the url serves"
        );
    }
    assert_eq!(
        skills[1]["description"],
        "pdf-tools 1.1.0 extracts text. Use for PDFs."
    );

    // The package and version records answer under /api/v1/skills.
    let record: Value = app
        .get("/api/v1/skills/pdf-tools")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(record["versions"].as_array().unwrap().len(), 2);

    // Yanked: the next newest takes its place; all yanked: gone.
    for (version, reason) in [("1.1.0", "wrong output"), ("1.0.0", "also wrong")] {
        let res = app
            .request(
                Method::POST,
                &format!("/api/v1/skills/pdf-tools/{version}/yank"),
            )
            .bearer_auth(&alice.token)
            .json(&json!({"reason": reason}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            res.status(),
            StatusCode::OK,
            "{}",
            res.text().await.unwrap()
        );
        let listed = index(&app).await;
        let pdf: Vec<&Value> = listed["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["name"] == "pdf-tools")
            .collect();
        match version {
            "1.1.0" => assert_eq!(pdf[0]["version"], "1.0.0", "{listed}"),
            _ => assert!(pdf.is_empty(), "{listed}"),
        }
    }
}

async fn a_skill_md_outside_the_spec_is_refused_naming_the_file(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let md = "---\nname: pdf-tools\ndescription: Extracts text.\nversion: 1.0.0\nmetadata:\n  version: 1.0.0\n---\n# x\n";
    let bad = build(
        &alice.key,
        Kind::Skill,
        "pdf-tools",
        "1.0.0",
        &[("SKILL.md", md.as_bytes())],
        0,
    );
    let body = problem(
        publish(&app, &alice.token, bad).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "SKILL.md", "{body}");
    let message = body["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("unexpected frontmatter keys: version")
            && message
                .contains("allowed-tools, compatibility, description, license, metadata, name"),
        "{body}"
    );
    // Nothing half-written: no package, nothing listed.
    problem(
        app.get("/api/v1/skills/pdf-tools").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    assert_eq!(index(&app).await["skills"], json!([]));
}

/// Unpacks a downloaded archive into `dir` as a client would.
fn unpack(bytes: &[u8], dir: &Path) {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive.unpack(dir).unwrap();
}

async fn skills_ref_accepts_what_the_index_serves(backend: Backend) {
    let Some(skills_ref) = conformance::tool("AGENTLANG_TEST_SKILLS_REF", "agentskills") else {
        return;
    };
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    published(&app, &alice.token, skill(&alice.key, "pdf-tools", "2.0.0")).await;
    let listed = index(&app).await;
    let entry = &listed["skills"][0];
    let bytes = app
        .get(entry["url"].as_str().unwrap())
        .await
        .bytes()
        .await
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    // Clients unpack into a folder named after the skill.
    let dir = work.path().join(entry["name"].as_str().unwrap());
    unpack(&bytes, &dir);
    assert!(dir.join("scripts/extract.py").is_file());
    let (ok, output) = conformance::run(
        tokio::process::Command::new(&skills_ref)
            .arg("validate")
            .arg(&dir),
        Duration::from_secs(60),
    )
    .await;
    assert!(ok, "skills-ref refused the published skill:\n{output}");

    // And the other way: what skills-ref refuses, our validation refuses.
    for (front, why) in [
        (
            "name: pdf--tools\ndescription: d\nmetadata:\n  version: 1.0.0\n",
            "consecutive hyphens",
        ),
        (
            "name: pdf-tools\ndescription: d\nauthor: me\nmetadata:\n  version: 1.0.0\n",
            "unexpected key",
        ),
        (
            &format!(
                "name: pdf-tools\ndescription: {}\nmetadata:\n  version: 1.0.0\n",
                "d".repeat(1025)
            ),
            "long description",
        ),
    ] {
        let bad = work
            .path()
            .join("bad")
            .join(if front.contains("pdf--tools") {
                "pdf--tools"
            } else {
                "pdf-tools"
            });
        std::fs::create_dir_all(&bad).unwrap();
        std::fs::write(bad.join("SKILL.md"), format!("---\n{front}---\n# x\n")).unwrap();
        let (ok, output) = conformance::run(
            tokio::process::Command::new(&skills_ref)
                .arg("validate")
                .arg(&bad),
            Duration::from_secs(60),
        )
        .await;
        assert!(!ok, "skills-ref accepted {why}:\n{output}");
        let ours = agentlang_core::agentskills::parse_skill_doc(
            &std::fs::read(bad.join("SKILL.md")).unwrap(),
        );
        assert!(ours.is_err(), "our validation accepted {why}");
        std::fs::remove_dir_all(work.path().join("bad")).unwrap();
    }
}

async fn resolve_json(app: &TestApp, request: &Value) -> reqwest::Response {
    app.request(Method::POST, "/api/v1/resolve")
        .header("accept", "application/json")
        .json(request)
        .send()
        .await
        .unwrap()
}

/// An agent whose `skills:` names the published pdf-tools at `req`.
fn agent_needing(req: &str) -> String {
    format!(
        "name: reader\nversion: 1.0.0\ndescription: Reads PDFs.\n\
         models:\n  claude-sonnet-4:\n    provider: anthropic\n\
         skills:\n  - name: pdf-tools\n    version: \"{req}\"\n"
    )
}

async fn agents_lock_and_publish_against_published_skills(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let old = published(&app, &alice.token, skill(&alice.key, "pdf-tools", "0.1.0")).await;
    let new = published(&app, &alice.token, skill(&alice.key, "pdf-tools", "0.1.1")).await;
    published(&app, &alice.token, skill(&alice.key, "pdf-tools", "0.2.0")).await;
    let hash = |v: &Value| v["hash"].as_str().unwrap().to_owned();

    // The newest version that fits, its hash and the requirement as sent.
    let res = resolve_json(&app, &json!({"skills": {"pdf-tools": "^0.1"}})).await;
    assert_eq!(res.status(), StatusCode::OK);
    let lock: Value = res.json().await.unwrap();
    assert_eq!(
        lock["skills"],
        json!({"pdf-tools": {
            "version": "0.1.1",
            "hash": hash(&new),
            "requirement": "^0.1",
            "log_index": new["log_index"],
        }}),
        "{lock}"
    );
    // The existing lock's pin stays while it fits.
    let mut pinned = lock.clone();
    pinned["skills"]["pdf-tools"]["version"] = json!("0.1.0");
    pinned["skills"]["pdf-tools"]["hash"] = json!(hash(&old));
    let res = resolve_json(
        &app,
        &json!({"skills": {"pdf-tools": "^0.1"}, "lock": pinned}),
    )
    .await;
    let kept: Value = res.json().await.unwrap();
    assert_eq!(kept["skills"]["pdf-tools"]["version"], "0.1.0");
    // From agent.yaml, as `curl --data-binary @agent.yaml` sends it.
    let res = app
        .request(Method::POST, "/api/v1/resolve")
        .header("content-type", "application/yaml")
        .header("accept", "application/json")
        .body(agent_needing("^0.2"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let from_yaml: Value = res.json().await.unwrap();
    assert_eq!(from_yaml["skills"]["pdf-tools"]["version"], "0.2.0");
    assert!(from_yaml["tools"].as_object().unwrap().is_empty());

    // An unknown skill, and a requirement nothing published meets.
    let body = problem(
        resolve_json(&app, &json!({"skills": {"ghost": "^1", "pdf-tools": "^3"}})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;
    let fields: Vec<&str> = body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["skills.ghost", "skills.pdf-tools"], "{body}");
    assert!(body.to_string().contains("0.1.0, 0.1.1, 0.2.0"), "{body}");
    // Bounded like tools.
    let many: serde_json::Map<String, Value> = (0..65)
        .map(|i| (format!("skill-{i}"), json!("*")))
        .collect();
    problem(
        resolve_json(&app, &json!({"skills": many})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation-failed",
    )
    .await;

    // Publish holds the lock to the registry: without one, with a hash the
    // registry does not hold, then the true one.
    let yaml = agent_needing("^0.1");
    let with_lock = |lock: Option<&Value>| {
        let files: [(&str, &[u8]); 1] = [("prompt.yaml", PROMPT_YAML.as_bytes())];
        match lock {
            Some(lock) => {
                let lock: agentlang_core::lockfile::Lockfile =
                    serde_json::from_value(lock.clone()).unwrap();
                locked_agent(&alice.key, &yaml, &files, Some(&lock.to_yaml().unwrap()))
            }
            None => agent_with(&alice.key, &yaml, &files),
        }
    };
    let body = problem(
        publish(&app, &alice.token, with_lock(None)).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "lock-missing",
    )
    .await;
    assert!(body.to_string().contains("pdf-tools"), "{body}");
    let mut forged = lock.clone();
    forged["skills"]["pdf-tools"]["hash"] = json!(format!("sha256:{}", "0".repeat(64)));
    let body = problem(
        publish(&app, &alice.token, with_lock(Some(&forged))).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "lock-mismatch",
    )
    .await;
    assert_eq!(body["errors"][0]["field"], "skills.pdf-tools", "{body}");
    assert!(body.to_string().contains(&hash(&new)), "{body}");
    let agent = published(&app, &alice.token, with_lock(Some(&lock))).await;
    assert_eq!(agent["name"], "reader");
}

/// A catalog page's HTML, after checking its status and type.
async fn html(app: &TestApp, path: &str, status: StatusCode) -> String {
    let res = app.get(path).await;
    assert_eq!(res.status(), status, "{path}");
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "text/html; charset=utf-8",
        "{path}"
    );
    res.text().await.unwrap()
}

async fn skills_have_pages_and_appear_in_search(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let md = |version: &str| {
        format!(
            "---\nname: pdf-tools\ndescription: Extract text and tables from PDF files.\n\
             license: Apache-2.0\ncompatibility: Requires python3\n\
             allowed-tools: Bash(python3:*) Read\n\
             metadata:\n  version: {version}\n  author: example-org\n---\n\
             # PDF tools\n\nRun `scripts/extract.py FILE` and read its output.\n\n\
             <script>alert('skill')</script>\n"
        )
    };
    for version in ["1.0.0", "1.1.0"] {
        let md = md(version);
        let bytes = build(
            &alice.key,
            Kind::Skill,
            "pdf-tools",
            version,
            &[
                ("SKILL.md", md.as_bytes()),
                ("scripts/extract.py", b"print('text')\n"),
            ],
            1_738_146_600,
        );
        published(&app, &alice.token, bytes).await;
    }
    let download = app.get("/api/v1/skills/pdf-tools/1.1.0/download").await;
    assert_eq!(download.status(), StatusCode::OK);
    let digest = hex::encode(Sha256::digest(download.bytes().await.unwrap()));

    // The newest version: its SKILL.md rendered (the script sanitized
    // away), its frontmatter, how to use it, and its discovery entry.
    let page = html(&app, "/skills/pdf-tools", StatusCode::OK).await;
    for expected in [
        "<h1><code>pdf-tools</code> <span class=\"version\">1.1.0</span></h1>",
        "<h3>PDF tools</h3>",
        "<p>Run <code>scripts/extract.py FILE</code> and read its output.</p>",
        "<dt>License</dt><dd>Apache-2.0</dd>",
        "<dt>Compatibility</dt><dd>Requires python3</dd>",
        "<li><code>Bash(python3:*)</code></li><li><code>Read</code></li>",
        "<dt>Metadata <code>author</code></dt><dd>example-org</dd>",
        "agentlang pull pdf-tools@=1.1.0 --kind skill",
        "skills:\n  - name: pdf-tools\n    version: ^1.1",
        "<code>/api/v1/skills/pdf-tools/1.1.0/download</code>",
        &format!(r#"<code class="hash">sha256:{digest}</code>"#),
        "lists this version",
        r#"<a href="/skills/pdf-tools/1.0.0">1.0.0</a>"#,
        r#"<a href="/publishers/alice">alice</a>"#,
    ] {
        assert!(page.contains(expected), "missing {expected:?} in {page}");
    }
    assert!(!page.contains("alert("), "{page}");
    assert_eq!(page.matches("<script").count(), 1, "only the copy script");

    // An older version has its own page, and says the index lists another.
    let older = html(&app, "/skills/pdf-tools/1.0.0", StatusCode::OK).await;
    assert!(
        older.contains("<code>/api/v1/skills/pdf-tools/1.0.0/download</code>")
            && older.contains("so not this version"),
        "{older}"
    );

    // Search finds it, on the catalog page and in the API, and the link
    // answers.
    let found = html(&app, "/search?q=pdf", StatusCode::OK).await;
    assert!(found.contains(r#"<a href="/skills/pdf-tools">"#), "{found}");
    let filtered = html(&app, "/search?q=pdf&kind=skill", StatusCode::OK).await;
    assert!(
        filtered.contains(r#"<a href="/skills/pdf-tools">"#)
            && filtered.contains(r#"<option value="skill" selected>Skills</option>"#),
        "{filtered}"
    );
    let api: Value = app.get("/api/v1/search?q=pdf").await.json().await.unwrap();
    let hit = &api["results"][0];
    assert_eq!(
        (hit["kind"].as_str(), hit["name"].as_str()),
        (Some("skill"), Some("pdf-tools")),
        "{api}"
    );
    html(&app, "/skills/pdf-tools", StatusCode::OK).await;

    // Owners yank from the page, as from a tool's.
    let session = crate::catalog::sign_in(&app, "alice", seed::PASSWORD)
        .await
        .unwrap();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let owned = client
        .get(format!("{}/skills/pdf-tools/1.1.0", app.url))
        .header(reqwest::header::COOKIE, &session)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        owned.contains(r#"action="/skills/pdf-tools/1.1.0/yank""#),
        "{owned}"
    );
    let marker = r#"name="csrf_token" value=""#;
    let csrf = owned[owned.find(marker).unwrap() + marker.len()..]
        .split('"')
        .next()
        .unwrap();
    let res = client
        .post(format!("{}/skills/pdf-tools/1.1.0/yank", app.url))
        .header(reqwest::header::COOKIE, &session)
        .form(&[("reason", "wrong tables"), ("csrf_token", csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        res.headers()[reqwest::header::LOCATION],
        "/skills/pdf-tools/1.1.0"
    );
    let after = html(&app, "/skills/pdf-tools", StatusCode::OK).await;
    assert!(
        after.contains("<span class=\"version\">1.0.0</span></h1>")
            && after.contains("Reason: wrong tables")
            && after.contains("lists this version"),
        "the newest unyanked version represents it, and the index lists it: {after}"
    );

    // Unknown skills, versions and spellings that name nothing are 404
    // pages; a tool's page does not answer for a skill.
    for path in [
        "/skills/no-such-skill",
        "/skills/pdf-tools/9.9.9",
        "/skills/pdf-tools/not-a-version",
        "/tools/pdf-tools",
    ] {
        html(&app, path, StatusCode::NOT_FOUND).await;
    }
}
