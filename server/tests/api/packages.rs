use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{
    publish::{published, publisher, tool},
    support::{Backend, TestApp, backend_tests, problem},
};

backend_tests!(
    package_and_version_records,
    downloads_stream_with_immutable_caching,
    ranges_resume_downloads,
    ranges_resume_streamed_downloads,
    ranges_resume_downloads_without_the_blob_cache,
    downloads_redirect_to_the_bucket_when_configured,
    owners_yank_and_unyank,
);

async fn package_and_version_records(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    for version in ["1.0.0", "1.10.0", "1.2.0", "2.0.0-rc.1"] {
        published(
            &app,
            &alice.token,
            tool(&alice.key, "web_fetch", version, &[]),
        )
        .await;
    }
    // Any spelling reaches it; versions come newest first by SemVer.
    let package: Value = app
        .get("/api/v1/tools/Web-Fetch")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(package["name"], "web_fetch");
    assert_eq!(package["kind"], "tool");
    assert_eq!(package["description"], "The web_fetch tool fetches things.");
    let versions: Vec<&str> = package["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0"]);

    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.10.0")
        .await
        .json()
        .await
        .unwrap();
    for field in [
        "sha256",
        "hash",
        "size",
        "manifest",
        "spec",
        "dependencies",
        "signer",
        "yanked",
        "yank_reason",
        "publisher",
        "published_at",
        "downloads",
    ] {
        assert!(version.get(field).is_some(), "{field} missing: {version}");
    }
    assert_eq!(version["manifest"]["version"], "1.10.0");
    assert_eq!(version["downloads"], 0);

    // Records carry an ETag of their bytes: a current copy is 304, and a
    // change (here a download counted) is a new tag.
    for path in ["/api/v1/tools/web_fetch", "/api/v1/tools/web_fetch/1.10.0"] {
        let res = app.get(path).await;
        assert_eq!(res.headers()["cache-control"], "public, no-cache");
        let etag = res.headers()["etag"].to_str().unwrap().to_owned();
        let revalidate = || {
            app.request(Method::GET, path)
                .header("if-none-match", etag.as_str())
                .send()
        };
        let res = revalidate().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED, "{path}");
        assert_eq!(res.headers()["etag"], etag.as_str());
        assert!(res.bytes().await.unwrap().is_empty());
        app.get("/api/v1/tools/web_fetch/1.10.0/download").await;
        app::packages::flush_downloads(app.state()).await.unwrap();
        let res = revalidate().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_ne!(res.headers()["etag"], etag.as_str());
    }

    for path in [
        "/api/v1/tools/nothing",
        "/api/v1/agents/web_fetch",
        "/api/v1/tools/web_fetch/9.9.9",
        "/api/v1/tools/web_fetch/not-semver",
        "/api/v1/widgets/web_fetch",
    ] {
        problem(app.get(path).await, StatusCode::NOT_FOUND, "not-found").await;
    }
}

async fn downloads_stream_with_immutable_caching(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = tool(&alice.key, "web_fetch", "1.0.3", &[]);
    let record = published(&app, &alice.token, bytes.clone()).await;
    let sha = record["sha256"].as_str().unwrap();

    let res = app.get("/api/v1/tools/web_fetch/1.0.3/download").await;
    assert_eq!(res.status(), StatusCode::OK);
    let headers = res.headers().clone();
    assert_eq!(headers["etag"], format!("\"{sha}\"").as_str());
    assert_eq!(
        headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert_eq!(
        headers["content-disposition"],
        "attachment; filename=\"web_fetch@1.0.3.tool\""
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["content-length"], bytes.len().to_string().as_str());
    assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());

    // A client with the current copy gets 304, which is not a download.
    let res = app
        .request(Method::GET, "/api/v1/tools/web_fetch/1.0.3/download")
        .header("if-none-match", format!("\"{sha}\""))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(res.headers()["etag"], format!("\"{sha}\"").as_str());
    let res = app
        .request(Method::GET, "/api/v1/tools/web_fetch/1.0.3/download")
        .header("if-none-match", "\"something-else\"")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);

    // HEAD: the same headers, no body, not a download.
    let res = app
        .request(Method::HEAD, "/api/v1/tools/web_fetch/1.0.3/download")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    for name in [
        "etag",
        "cache-control",
        "content-disposition",
        "content-type",
        "content-length",
    ] {
        assert_eq!(res.headers().get(name), headers.get(name), "{name}");
    }
    assert!(res.bytes().await.unwrap().is_empty());

    // Counts are written in batches; the periodic flush, done now.
    app::packages::flush_downloads(app.state()).await.unwrap();
    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.0.3")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(version["downloads"], 2);
    // HEAD answers wherever GET does, records and pages included.
    for path in [
        "/healthz",
        "/api/v1/tools/web_fetch/1.0.3",
        "/tools/web_fetch",
        "/",
    ] {
        let get = app.get(path).await;
        let head = app.request(Method::HEAD, path).send().await.unwrap();
        assert_eq!(head.status(), get.status(), "{path}");
        assert_eq!(
            head.headers().get("content-type"),
            get.headers().get("content-type"),
            "{path}"
        );
        assert!(head.bytes().await.unwrap().is_empty(), "{path}");
    }
    problem(
        app.get("/api/v1/tools/web_fetch/1.0.4/download").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
}

/// One byte range answers 206 with those bytes; If-Range guards it;
/// several ranges or a stale If-Range answer all of it; a range past the
/// end is 416; a resumption is not counted as a download. A small
/// container is served from the hot-blob cache.
async fn ranges_resume_downloads(backend: Backend) {
    ranges_of(backend, 0, None).await;
}

/// The same for a container too large for the hot-blob cache (3 MiB): it
/// streams from the store (a local file by position, in 256 KiB reads; S3
/// by a range request), and ranges cross those reads.
async fn ranges_resume_streamed_downloads(backend: Backend) {
    ranges_of(backend, 3 * 1024 * 1024, None).await;
}

/// The same with the hot-blob cache turned off: every download streams.
async fn ranges_resume_downloads_without_the_blob_cache(backend: Backend) {
    ranges_of(backend, 0, Some("0")).await;
}

async fn ranges_of(backend: Backend, payload: usize, blob_cache_mib: Option<&str>) {
    let mut builder = TestApp::builder(backend);
    if let Some(mib) = blob_cache_mib {
        builder = builder.env("AGENTLANG_REGISTRY_BLOB_CACHE_MIB", mib);
    }
    let Some(app) = builder.build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = crate::support::seed::tool_container(
        &alice.key,
        "web_fetch",
        "1.0.3",
        &[],
        "# web_fetch\n",
        payload,
    );
    let record = published(&app, &alice.token, bytes.clone()).await;
    let etag = format!("\"{}\"", record["sha256"].as_str().unwrap());
    let size = bytes.len();
    let path = "/api/v1/tools/web_fetch/1.0.3/download";
    let get = |headers: &[(&str, &str)]| {
        let mut request = app.request(Method::GET, path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send()
    };

    let res = get(&[]).await.unwrap();
    assert_eq!(res.headers()["accept-ranges"], "bytes");
    let tail = format!("bytes={}-", size - 10);
    let if_range = etag.clone();
    // Across the 256 KiB reads of a streamed container.
    let middle = "bytes=200000-699999";
    let mut cases = vec![];
    if size > 700_000 {
        cases.push((vec![("range", middle)], 200_000, 699_999));
    }
    for (headers, first, last) in cases.into_iter().chain([
        (vec![("range", "bytes=0-9")], 0, 9),
        (vec![("range", "bytes=-5")], size - 5, size - 1),
        (vec![("range", tail.as_str())], size - 10, size - 1),
        // Past the end: what there is.
        (vec![("range", "bytes=10-999999999")], 10, size - 1),
        (
            vec![("range", "bytes=3-7"), ("if-range", if_range.as_str())],
            3,
            7,
        ),
    ]) {
        let res = get(&headers).await.unwrap();
        assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT, "{headers:?}");
        assert_eq!(
            res.headers()["content-range"],
            format!("bytes {first}-{last}/{size}").as_str(),
            "{headers:?}"
        );
        assert_eq!(res.headers()["etag"], etag.as_str());
        assert_eq!(
            res.headers()["content-length"],
            (last - first + 1).to_string().as_str()
        );
        assert_eq!(
            res.bytes().await.unwrap().as_ref(),
            &bytes[first..=last],
            "{headers:?}"
        );
    }
    // All of it: a stale If-Range, several ranges, a range that is not one.
    for headers in [
        vec![("range", "bytes=0-9"), ("if-range", "\"other\"")],
        vec![("range", "bytes=0-1, 4-5")],
        vec![("range", "lines=1-2")],
    ] {
        let res = get(&headers).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{headers:?}");
        assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());
    }
    let past = format!("bytes={size}-");
    let res = get(&[("range", past.as_str())]).await.unwrap();
    assert_eq!(
        res.headers()["content-range"],
        format!("bytes */{size}").as_str()
    );
    problem(
        res,
        StatusCode::RANGE_NOT_SATISFIABLE,
        "range-not-satisfiable",
    )
    .await;
    // HEAD with a range: the partial answer's headers.
    let res = app
        .request(Method::HEAD, path)
        .header("range", "bytes=0-9")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(res.headers()["content-length"], "10");

    // Downloads counted: the plain GET, the three answered whole, and the
    // ranges from byte 0 (bytes=0-9); the resumptions are not.
    app::packages::flush_downloads(app.state()).await.unwrap();
    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.0.3")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(version["downloads"], 5, "{version}");
}

/// With `DOWNLOAD_REDIRECT_SECS`, an S3-backed registry answers a download
/// with 307 to a presigned URL that serves the container (and its ranges)
/// straight from the bucket; a registry on files keeps streaming.
async fn downloads_redirect_to_the_bucket_when_configured(backend: Backend) {
    let Some(app) = TestApp::builder(backend)
        .config(|c| c.download_redirect = std::time::Duration::from_secs(60))
        .build()
        .await
    else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bytes = tool(&alice.key, "web_fetch", "1.0.3", &[]);
    let record = published(&app, &alice.token, bytes.clone()).await;
    let etag = format!("\"{}\"", record["sha256"].as_str().unwrap());
    let path = "/api/v1/tools/web_fetch/1.0.3/download";
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client.get(app.path(path)).send().await.unwrap();
    match backend {
        Backend::Sqlite => {
            assert_eq!(res.status(), StatusCode::OK);
            assert_eq!(res.bytes().await.unwrap().as_ref(), bytes.as_slice());
        }
        Backend::PostgresS3 => {
            assert_eq!(res.status(), StatusCode::TEMPORARY_REDIRECT);
            assert_eq!(res.headers()["etag"], etag.as_str());
            assert_eq!(res.headers()["cache-control"], "no-store");
            let location = res.headers()["location"].to_str().unwrap().to_owned();
            assert!(location.contains("X-Amz-Signature="), "{location}");
            let fetched = client.get(&location).send().await.unwrap();
            assert_eq!(fetched.status(), StatusCode::OK, "{location}");
            assert_eq!(fetched.bytes().await.unwrap().as_ref(), bytes.as_slice());
            let part = client
                .get(&location)
                .header("range", "bytes=0-9")
                .send()
                .await
                .unwrap();
            assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
            assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[..10]);
            // A current copy is still 304, from the registry; HEAD still
            // answers the headers itself.
            let res = client
                .get(app.path(path))
                .header("if-none-match", etag.as_str())
                .send()
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
            let res = client.head(app.path(path)).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::OK);
            assert_eq!(
                res.headers()["content-length"],
                bytes.len().to_string().as_str()
            );
        }
    }
    // Redirected or streamed, it is a download.
    app::packages::flush_downloads(app.state()).await.unwrap();
    let version: Value = app
        .get("/api/v1/tools/web_fetch/1.0.3")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(version["downloads"], 1, "{version}");
}

async fn owners_yank_and_unyank(backend: Backend) {
    let Some(app) = TestApp::builder(backend).build().await else {
        return;
    };
    let alice = publisher(&app, "alice").await;
    let bob = publisher(&app, "bob").await;
    published(
        &app,
        &alice.token,
        tool(&alice.key, "web_fetch", "1.0.0", &[]),
    )
    .await;
    let yank = |token: String, path: &str| {
        app.request(Method::POST, path)
            .bearer_auth(token)
            .json(&json!({"reason": "leaks secrets"}))
            .send()
    };
    problem(
        yank(bob.token.clone(), "/api/v1/tools/web_fetch/1.0.0/yank")
            .await
            .unwrap(),
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let no_scope = app.token("alice", &["publish"]).await;
    problem(
        yank(no_scope, "/api/v1/tools/web_fetch/1.0.0/yank")
            .await
            .unwrap(),
        StatusCode::FORBIDDEN,
        "missing-scope",
    )
    .await;
    problem(
        yank(alice.token.clone(), "/api/v1/tools/web_fetch/1.0.1/yank")
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;

    let res = yank(alice.token.clone(), "/api/v1/tools/web_fetch/1.0.0/yank")
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["yanked"], true);
    assert_eq!(body["yank_reason"], "leaks secrets");
    // Yanked versions stay downloadable.
    assert_eq!(
        app.get("/api/v1/tools/web_fetch/1.0.0/download")
            .await
            .status(),
        StatusCode::OK
    );

    let unyank = |token: String| {
        app.request(Method::POST, "/api/v1/tools/web_fetch/1.0.0/unyank")
            .bearer_auth(token)
            .send()
    };
    problem(
        unyank(bob.token.clone()).await.unwrap(),
        StatusCode::FORBIDDEN,
        "not-owner",
    )
    .await;
    let res = unyank(alice.token.clone()).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["yanked"], false);
    assert_eq!(body["yank_reason"], Value::Null);
}
