//! CLowl 0.2: the spec's examples, every rule with its E-code, and the reply
//! constructors.

use agentlang_core::{
    digest::Sha256Digest,
    protocol::clowl::{
        Body, BodyKind, ClowlError, Context, ContextContent, ContextRef, ContextUse,
        DelegationMode, ErrorBody, ErrorCategory, ErrorCode, Id, MAX_INLINE_CHARS, Message,
        Performative, Recipient, parse_ctx_hash,
    },
    {Kind, PackageName, Version},
};
use serde_json::{Map, Value, json};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/clowl/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn id(s: &str) -> Id {
    Id::new(s).expect("non-empty id")
}

/// A valid REQ to mutate in the rule table.
fn base() -> Value {
    json!({
        "clowl": "0.2",
        "mid": "m001",
        "ts": 1709078400,
        "tid": "t001",
        "pid": null,
        "p": "REQ",
        "from": "oscar",
        "to": "radar",
        "cid": "pipe001",
        "body": {"t": "search", "d": {"q": "mcp vs a2a"}},
        "ctx": {"ref": "research/brief.md", "inline": null, "hash": null},
        "auth": "token-1",
        "det": false
    })
}

fn parse(value: &Value) -> Result<Message, ClowlError> {
    Message::from_slice(&serde_json::to_vec(value).expect("serializable"))
}

#[test]
fn spec_dlgt_example_parses_and_round_trips() {
    let bytes = fixture("dlgt-transfer.json");
    let message = Message::from_slice(&bytes).expect("the spec's DLGT example is valid");
    assert_eq!(message.performative(), Performative::Dlgt);
    assert_eq!(
        message.body_kind(),
        &BodyKind::Delegation(DelegationMode::Transfer)
    );
    assert_eq!(message.pid(), Some(&id("m003")));
    assert_eq!(message.tid(), Some(&id("t001")));
    assert_eq!(message.to(), &Recipient::Agent(id("muse")));
    assert_eq!(
        message.ctx().and_then(Context::reference),
        Some("research/mcp-vs-a2a.md")
    );
    let original: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(message.to_value(), original);
    assert_eq!(Message::from_slice(&message.to_vec()), Ok(message));
}

#[test]
fn spec_caps_example_parses_and_matches_the_caps_constructor() {
    let message = Message::from_slice(&fixture("caps.json")).expect("valid CAPS");
    assert_eq!(message.to(), &Recipient::Broadcast);
    let supports = vec![
        "search:web".to_owned(),
        "search:repo".to_owned(),
        "analyze:trend".to_owned(),
    ];
    assert_eq!(
        message.body_kind(),
        &BodyKind::Capabilities(supports.clone())
    );
    let built = Message::caps(id("radar"), supports, id("caps-001"), 1709078400);
    assert_eq!(built, message);
    assert_eq!(
        built.to_value(),
        serde_json::from_slice::<Value>(&fixture("caps.json")).unwrap()
    );
}

#[test]
fn spec_schema_template_is_refused_for_its_placeholder_performative() {
    let err = Message::from_slice(&fixture("schema-template.json")).unwrap_err();
    assert_eq!(err.code, ErrorCode::E001);
    assert_eq!(err.field.as_deref(), Some("p"));
    assert!(err.msg.contains("<performative>"), "{err}");
}

#[test]
fn a_clowl_0_1_message_is_a_version_mismatch() {
    let err = Message::from_slice(&fixture("v0.1-prompt-format.json")).unwrap_err();
    assert_eq!(err.code, ErrorCode::E014);
    assert_eq!(err.field.as_deref(), Some("cl"));
}

#[test]
fn spec_error_body_is_a_valid_err_body() {
    let mut v = base();
    v["p"] = json!("ERR");
    v["body"] = serde_json::from_slice(&fixture("error-body.json")).unwrap();
    let message = parse(&v).expect("valid ERR");
    assert_eq!(
        message.body_kind(),
        &BodyKind::Error(ErrorBody {
            code: ErrorCode::E001,
            msg: "Human-readable error description".into(),
            retry: true
        })
    );
}

type Mutation = fn(&mut Value);

/// Every rule of the spec, each with the code and field it fails with.
#[test]
fn every_rule_fails_with_its_code_and_field() {
    let cases: &[(&str, Mutation, ErrorCode, Option<&str>)] = &[
        ("not an object", |v| *v = json!([1]), ErrorCode::E001, None),
        (
            "clowl missing",
            |v| drop(v.as_object_mut().unwrap().remove("clowl")),
            ErrorCode::E001,
            Some("clowl"),
        ),
        (
            "clowl not a string",
            |v| v["clowl"] = json!(0.2),
            ErrorCode::E001,
            Some("clowl"),
        ),
        (
            "clowl 0.3",
            |v| v["clowl"] = json!("0.3"),
            ErrorCode::E014,
            Some("clowl"),
        ),
        (
            "clowl 0.1",
            |v| v["clowl"] = json!("0.1"),
            ErrorCode::E014,
            Some("clowl"),
        ),
        (
            "unknown field",
            |v| v["priority"] = json!("high"),
            ErrorCode::E001,
            Some("priority"),
        ),
        (
            "mid missing",
            |v| drop(v.as_object_mut().unwrap().remove("mid")),
            ErrorCode::E001,
            Some("mid"),
        ),
        (
            "mid empty",
            |v| v["mid"] = json!(""),
            ErrorCode::E001,
            Some("mid"),
        ),
        (
            "mid number",
            |v| v["mid"] = json!(7),
            ErrorCode::E001,
            Some("mid"),
        ),
        (
            "ts missing",
            |v| drop(v.as_object_mut().unwrap().remove("ts")),
            ErrorCode::E001,
            Some("ts"),
        ),
        (
            "ts string",
            |v| v["ts"] = json!("1709078400"),
            ErrorCode::E001,
            Some("ts"),
        ),
        (
            "ts float",
            |v| v["ts"] = json!(1709078400.5),
            ErrorCode::E001,
            Some("ts"),
        ),
        (
            "ts negative",
            |v| v["ts"] = json!(-1),
            ErrorCode::E001,
            Some("ts"),
        ),
        (
            "tid null",
            |v| v["tid"] = json!(null),
            ErrorCode::E001,
            Some("tid"),
        ),
        (
            "pid number",
            |v| v["pid"] = json!(3),
            ErrorCode::E001,
            Some("pid"),
        ),
        (
            "p missing",
            |v| drop(v.as_object_mut().unwrap().remove("p")),
            ErrorCode::E001,
            Some("p"),
        ),
        (
            "p lowercase",
            |v| v["p"] = json!("req"),
            ErrorCode::E001,
            Some("p"),
        ),
        (
            "p unknown",
            |v| v["p"] = json!("PING"),
            ErrorCode::E001,
            Some("p"),
        ),
        (
            "from missing",
            |v| drop(v.as_object_mut().unwrap().remove("from")),
            ErrorCode::E001,
            Some("from"),
        ),
        (
            "from object",
            |v| v["from"] = json!({"agent": "x"}),
            ErrorCode::E001,
            Some("from"),
        ),
        (
            "to missing",
            |v| drop(v.as_object_mut().unwrap().remove("to")),
            ErrorCode::E001,
            Some("to"),
        ),
        (
            "to number",
            |v| v["to"] = json!(1),
            ErrorCode::E001,
            Some("to"),
        ),
        (
            "to empty list",
            |v| v["to"] = json!([]),
            ErrorCode::E001,
            Some("to"),
        ),
        (
            "to list with non-string",
            |v| v["to"] = json!(["a", 2]),
            ErrorCode::E001,
            Some("to[1]"),
        ),
        (
            "to list with *",
            |v| v["to"] = json!(["a", "*"]),
            ErrorCode::E001,
            Some("to[1]"),
        ),
        (
            "cid missing",
            |v| drop(v.as_object_mut().unwrap().remove("cid")),
            ErrorCode::E001,
            Some("cid"),
        ),
        (
            "body missing",
            |v| drop(v.as_object_mut().unwrap().remove("body")),
            ErrorCode::E001,
            Some("body"),
        ),
        (
            "body string",
            |v| v["body"] = json!("search"),
            ErrorCode::E001,
            Some("body"),
        ),
        (
            "body.t missing",
            |v| drop(v["body"].as_object_mut().unwrap().remove("t")),
            ErrorCode::E001,
            Some("body.t"),
        ),
        (
            "body.t number",
            |v| v["body"]["t"] = json!(1),
            ErrorCode::E001,
            Some("body.t"),
        ),
        (
            "body.d missing",
            |v| drop(v["body"].as_object_mut().unwrap().remove("d")),
            ErrorCode::E001,
            Some("body.d"),
        ),
        (
            "body.d array",
            |v| v["body"]["d"] = json!([]),
            ErrorCode::E001,
            Some("body.d"),
        ),
        (
            "body unknown field",
            |v| v["body"]["x"] = json!(1),
            ErrorCode::E001,
            Some("body.x"),
        ),
        (
            "ctx string (0.1 form)",
            |v| v["ctx"] = json!("research/brief.md"),
            ErrorCode::E001,
            Some("ctx"),
        ),
        (
            "ctx unknown field",
            |v| v["ctx"]["url"] = json!("x"),
            ErrorCode::E001,
            Some("ctx.url"),
        ),
        (
            "ctx.ref number",
            |v| v["ctx"]["ref"] = json!(1),
            ErrorCode::E001,
            Some("ctx.ref"),
        ),
        (
            "ctx.inline too long",
            |v| v["ctx"]["inline"] = json!("é".repeat(MAX_INLINE_CHARS + 1)),
            ErrorCode::E001,
            Some("ctx.inline"),
        ),
        (
            "ctx.hash short",
            |v| v["ctx"]["hash"] = json!("abc123"),
            ErrorCode::E001,
            Some("ctx.hash"),
        ),
        (
            "ctx.hash other algorithm",
            |v| v["ctx"]["hash"] = json!(format!("md5:{}", "a".repeat(64))),
            ErrorCode::E001,
            Some("ctx.hash"),
        ),
        (
            "ctx.hash not hex",
            |v| v["ctx"]["hash"] = json!("g".repeat(64)),
            ErrorCode::E001,
            Some("ctx.hash"),
        ),
        (
            "auth number",
            |v| v["auth"] = json!(1),
            ErrorCode::E001,
            Some("auth"),
        ),
        (
            "det string",
            |v| v["det"] = json!("true"),
            ErrorCode::E001,
            Some("det"),
        ),
        (
            "DLGT without mode",
            |v| v["p"] = json!("DLGT"),
            ErrorCode::E008,
            Some("body.d.delegation_mode"),
        ),
        (
            "DLGT with unknown mode",
            |v| {
                v["p"] = json!("DLGT");
                v["body"]["d"]["delegation_mode"] = json!("handoff");
            },
            ErrorCode::E008,
            Some("body.d.delegation_mode"),
        ),
        (
            "DLGT mode not a string",
            |v| {
                v["p"] = json!("DLGT");
                v["body"]["d"]["delegation_mode"] = json!(1);
            },
            ErrorCode::E008,
            Some("body.d.delegation_mode"),
        ),
        (
            "ERR without code",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"msg": "m", "retry": true});
            },
            ErrorCode::E008,
            Some("body.d.code"),
        ),
        (
            "ERR with E017",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"code": "E017", "msg": "m", "retry": true});
            },
            ErrorCode::E008,
            Some("body.d.code"),
        ),
        (
            "ERR code number",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"code": 1, "msg": "m", "retry": true});
            },
            ErrorCode::E008,
            Some("body.d.code"),
        ),
        (
            "ERR without msg",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"code": "E004", "retry": true});
            },
            ErrorCode::E008,
            Some("body.d.msg"),
        ),
        (
            "ERR without retry",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"code": "E004", "msg": "m"});
            },
            ErrorCode::E008,
            Some("body.d.retry"),
        ),
        (
            "ERR retry string",
            |v| {
                v["p"] = json!("ERR");
                v["body"]["d"] = json!({"code": "E004", "msg": "m", "retry": "yes"});
            },
            ErrorCode::E008,
            Some("body.d.retry"),
        ),
        (
            "CAPS without version",
            |v| {
                v["p"] = json!("CAPS");
                v["body"]["d"] = json!({"supports": []});
            },
            ErrorCode::E008,
            Some("body.d.clowl"),
        ),
        (
            "CAPS advertising 0.1",
            |v| {
                v["p"] = json!("CAPS");
                v["body"]["d"] = json!({"clowl": "0.1"});
            },
            ErrorCode::E014,
            Some("body.d.clowl"),
        ),
        (
            "CAPS supports not strings",
            |v| {
                v["p"] = json!("CAPS");
                v["body"]["d"] = json!({"clowl": "0.2", "supports": ["a", 1]});
            },
            ErrorCode::E008,
            Some("body.d.supports[1]"),
        ),
    ];
    for (name, mutate, code, field) in cases {
        let mut v = base();
        mutate(&mut v);
        let err = parse(&v).expect_err(name);
        assert_eq!(
            (err.code, err.field.as_deref()),
            (*code, *field),
            "{name}: {err}"
        );
    }
    assert!(parse(&base()).is_ok(), "the base message is valid");
}

#[test]
fn optional_fields_and_recipient_forms_are_accepted() {
    let cases: &[(&str, Mutation)] = &[
        ("no optional fields", |v| {
            for key in ["tid", "pid", "ctx", "auth", "det"] {
                v.as_object_mut().unwrap().remove(key);
            }
        }),
        ("pid string", |v| v["pid"] = json!("m000")),
        ("broadcast", |v| v["to"] = json!("*")),
        ("multicast", |v| v["to"] = json!(["radar", "muse"])),
        ("empty task type", |v| v["body"]["t"] = json!("")),
        ("every performative without body rules", |v| {
            v["p"] = json!("PROG")
        }),
        ("inline at the limit", |v| {
            v["ctx"]["inline"] = json!("é".repeat(MAX_INLINE_CHARS))
        }),
        ("ctx sub-fields absent", |v| v["ctx"] = json!({})),
        ("hash with prefix, upper case", |v| {
            v["ctx"]["hash"] = json!(format!("sha256:{}", "AB".repeat(32)))
        }),
        ("DLGT fork", |v| {
            v["p"] = json!("DLGT");
            v["body"]["d"]["delegation_mode"] = json!("fork");
        }),
        ("DLGT assist", |v| {
            v["p"] = json!("DLGT");
            v["body"]["d"]["delegation_mode"] = json!("assist");
        }),
    ];
    for (name, mutate) in cases {
        let mut v = base();
        mutate(&mut v);
        if let Err(e) = parse(&v) {
            panic!("{name}: {e}");
        }
    }
    let mut v = base();
    v["to"] = json!(["radar", "muse"]);
    assert_eq!(
        parse(&v).unwrap().to(),
        &Recipient::Multicast(vec![id("radar"), id("muse")])
    );
    for p in Performative::ALL {
        assert_eq!(p.as_str().parse::<Performative>(), Ok(p));
    }
}

#[test]
fn hashes_are_written_as_lowercase_hex() {
    let mut v = base();
    v["ctx"]["hash"] = json!(format!("sha256:{}", "AB".repeat(32)));
    let message = parse(&v).unwrap();
    assert_eq!(message.to_value()["ctx"]["hash"], json!("ab".repeat(32)));
}

#[test]
fn oversized_and_non_json_input_is_e001() {
    let err =
        Message::from_slice_with_limit(&serde_json::to_vec(&base()).unwrap(), 64).unwrap_err();
    assert_eq!(err.code, ErrorCode::E001);
    assert!(err.msg.contains("at most 64"), "{err}");
    let err = Message::from_slice(b"{\"clowl\":").unwrap_err();
    assert_eq!((err.code, err.field), (ErrorCode::E001, None));
    let deep = "[".repeat(200) + &"]".repeat(200);
    assert_eq!(
        Message::from_slice(deep.as_bytes()).unwrap_err().code,
        ErrorCode::E001
    );
}

#[test]
fn duplicate_keys_are_e001() {
    let text = br#"{"clowl":"0.2","mid":"m1","mid":"m2","ts":1,"p":"REQ","from":"a","to":"b","cid":"c","body":{"t":"x","d":{}}}"#;
    let err = Message::from_slice(text).unwrap_err();
    assert_eq!(err.code, ErrorCode::E001);
    assert!(err.msg.contains("duplicate key \"mid\""), "{err}");
}

#[test]
fn deserialize_validates_too() {
    let mut v = base();
    v["p"] = json!("DLGT");
    let err = serde_json::from_value::<Message>(v).unwrap_err();
    assert!(
        err.to_string().contains("E008 body.d.delegation_mode"),
        "{err}"
    );
    let ok: Message = serde_json::from_value(base()).unwrap();
    assert_eq!(serde_json::to_value(&ok).unwrap()["mid"], json!("m001"));
}

#[test]
fn error_codes_carry_the_spec_table() {
    use ErrorCategory as C;
    let table = [
        ("E001", C::Parse, true),
        ("E002", C::Auth, false),
        ("E003", C::Context, true),
        ("E004", C::Capacity, true),
        ("E005", C::Task, false),
        ("E006", C::Timeout, true),
        ("E007", C::Dependency, true),
        ("E008", C::Validation, true),
        ("E009", C::Internal, true),
        ("E010", C::Delegation, false),
        ("E011", C::Conflict, true),
        ("E012", C::Budget, false),
        ("E013", C::Cancelled, false),
        ("E014", C::Version, false),
        ("E015", C::Cycle, false),
        ("E016", C::Security, false),
    ];
    assert_eq!(ErrorCode::ALL.len(), table.len());
    for (code, (name, category, retryable)) in ErrorCode::ALL.into_iter().zip(table) {
        assert_eq!(code.as_str(), name);
        assert_eq!(name.parse::<ErrorCode>(), Ok(code));
        assert_eq!(
            (code.category(), code.retryable()),
            (category, retryable),
            "{name}"
        );
    }
    assert!("E000".parse::<ErrorCode>().is_err());
}

#[test]
fn reply_threads_under_the_request() {
    let mut v = base();
    v["to"] = json!(["radar", "muse"]);
    let req = parse(&v).unwrap();
    let mut d = Map::new();
    d.insert("result".into(), json!("ok"));
    let done = Message::reply(
        &req,
        Performative::Done,
        id("radar"),
        Body::new("search", d),
        id("m002"),
        1709078460,
    )
    .unwrap();
    assert_eq!(done.pid(), Some(req.mid()));
    assert_eq!(done.cid(), req.cid());
    assert_eq!(done.tid(), req.tid());
    assert_eq!(done.to(), &Recipient::Agent(id("oscar")));
    assert_eq!((done.mid(), done.ts()), (&id("m002"), 1709078460));

    // The reply constructor applies the body rules too.
    let err = Message::reply(
        &req,
        Performative::Dlgt,
        id("radar"),
        Body::new("search", Map::new()),
        id("m003"),
        1,
    )
    .unwrap_err();
    assert_eq!(err.code, ErrorCode::E008);
}

#[test]
fn error_reply_has_the_spec_shape() {
    let req = parse(&base()).unwrap();
    let err = Message::error(
        &req,
        id("radar"),
        ErrorCode::E004,
        "at capacity",
        id("m009"),
        1709078470,
    );
    assert_eq!(err.performative(), Performative::Err);
    assert_eq!(err.pid(), Some(&id("m001")));
    assert_eq!(
        err.to_value()["body"],
        json!({"t": "error", "d": {"code": "E004", "msg": "at capacity", "retry": true}})
    );
    // The message it builds is one the parser accepts as is.
    assert_eq!(Message::from_slice(&err.to_vec()), Ok(err));

    for code in ErrorCode::ALL {
        let reply = Message::error(&req, id("radar"), code, code.meaning(), id("m010"), 1);
        let reparsed = Message::from_slice(&reply.to_vec()).unwrap();
        match reparsed.body_kind() {
            BodyKind::Error(body) => assert_eq!((body.code, body.retry), (code, code.retryable())),
            other => panic!("{code}: {other:?}"),
        }
    }
}

#[test]
fn rejected_bytes_get_an_err_threaded_where_possible() {
    let mut v = base();
    v["p"] = json!("DLGT");
    let raw = serde_json::to_vec(&v).unwrap();
    let error = Message::from_slice(&raw).unwrap_err();
    let answer = Message::error_for_rejected(&raw, &error, id("registry"), id("e1"), 1709078480);
    assert_eq!(answer.pid(), Some(&id("m001")));
    assert_eq!(answer.cid(), &id("pipe001"));
    assert_eq!(answer.to(), &Recipient::Agent(id("oscar")));
    assert_eq!(
        answer.to_value()["body"]["d"],
        json!({"code": "E008", "msg": "body.d.delegation_mode: DLGT requires a delegation mode: transfer, fork or assist", "retry": true})
    );
    assert!(Message::from_slice(&answer.to_vec()).is_ok());

    let garbage = b"not json";
    let error = Message::from_slice(garbage).unwrap_err();
    let answer = Message::error_for_rejected(garbage, &error, id("registry"), id("e2"), 1);
    assert_eq!(
        (answer.pid(), answer.cid(), answer.to()),
        (None, &id("e2"), &Recipient::Broadcast)
    );
}

#[test]
fn ctx_resolution_follows_the_spec_rules() {
    let content = b"# MCP vs A2A";
    let hash = Sha256Digest::of(content);
    let ctx = Context::new(
        Some("research/a.md".into()),
        Some("summary".into()),
        Some(hash),
    )
    .unwrap();
    assert_eq!(
        ctx.resolve(Some(content)),
        Ok(ContextContent::Referenced(content))
    );
    // Altered content is a security violation, not missing context.
    let err = ctx.resolve(Some(b"tampered")).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::E016, Some("ctx.hash"))
    );
    assert_eq!(ctx.resolve(None), Ok(ContextContent::Inline("summary")));

    let no_inline = Context::new(Some("research/a.md".into()), None, None).unwrap();
    let err = no_inline.resolve(None).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::E003, Some("ctx"))
    );

    assert_eq!(parse_ctx_hash(&hash.to_hex()), Ok(hash));
    assert_eq!(
        parse_ctx_hash(&format!("sha256:{}", hash.to_hex().to_uppercase())),
        Ok(hash)
    );
    let err = Context::new(None, Some("x".repeat(MAX_INLINE_CHARS + 1)), None).unwrap_err();
    assert_eq!(err.field.as_deref(), Some("ctx.inline"));
}

#[test]
fn error_display_names_code_and_field() {
    let mut v = base();
    v["det"] = json!(1);
    assert_eq!(
        parse(&v).unwrap_err().to_string(),
        "E001 det: must be a boolean"
    );
    assert!(Id::new("").is_err());
}

#[test]
fn held_digests_decide_ctx_like_fetched_content() {
    let held = Sha256Digest::of(b"container");
    let other = Sha256Digest::of(b"something else");
    let with = |reference: Option<&str>, inline: Option<&str>, hash: Option<Sha256Digest>| {
        Context::new(reference.map(Into::into), inline.map(Into::into), hash).unwrap()
    };
    let r = Some("agentlang:tool/web_search@1.0.0");
    assert_eq!(
        with(r, None, Some(held)).check_held(Some(&held)),
        Ok(ContextUse::Referenced)
    );
    assert_eq!(
        with(r, None, None).check_held(Some(&held)),
        Ok(ContextUse::Referenced)
    );
    let err = with(r, Some("fallback"), Some(other))
        .check_held(Some(&held))
        .unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::E016, Some("ctx.hash"))
    );
    assert_eq!(
        with(r, Some("fallback"), Some(held)).check_held(None),
        Ok(ContextUse::Inline("fallback"))
    );
    let err = with(r, None, Some(held)).check_held(None).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::E003, Some("ctx"))
    );
    assert_eq!(
        with(None, Some("only inline"), None).check_held(None),
        Ok(ContextUse::Inline("only inline"))
    );
    assert_eq!(
        with(None, None, None).check_held(None),
        Ok(ContextUse::Nothing)
    );
}

#[test]
fn ctx_refs_name_packages_versions_and_blobs_of_this_registry_only() {
    let base = "https://registry.example.com";
    let name = |n: &str| PackageName::new(n).unwrap();
    assert_eq!(
        ContextRef::parse("agentlang:tool/web_search", base),
        ContextRef::Package(Kind::Tool, name("web_search"))
    );
    assert_eq!(
        ContextRef::parse("agentlang:agent/research-assistant@1.0.0", base),
        ContextRef::Version(
            Kind::Agent,
            name("research-assistant"),
            Version::parse("1.0.0").unwrap()
        )
    );
    let digest = Sha256Digest::of(b"x");
    assert_eq!(
        ContextRef::parse(&format!("sha256:{}", digest.to_hex()), base),
        ContextRef::Blob(digest)
    );
    assert_eq!(
        ContextRef::parse(&format!("{base}/api/v1/tools/web_search/1.2.0"), base),
        ContextRef::Version(
            Kind::Tool,
            name("web_search"),
            Version::parse("1.2.0").unwrap()
        )
    );
    assert_eq!(
        ContextRef::parse(&format!("{base}/api/v1/skills/pdf"), &format!("{base}/")),
        ContextRef::Package(Kind::Skill, name("pdf"))
    );
    for foreign in [
        "research/mcp-vs-a2a.md",
        "https://elsewhere.example.com/api/v1/tools/web_search",
        "https://registry.example.com.evil.example/api/v1/tools/web_search",
        "agentlang:gizmo/web_search",
        "agentlang:tool/web_search@not-semver",
        "agentlang:tool",
        "sha256:abcd",
        "https://registry.example.com/api/v1/tools/web_search/1.0.0/download",
    ] {
        assert_eq!(
            ContextRef::parse(foreign, base),
            ContextRef::Foreign,
            "{foreign}"
        );
    }
}

#[test]
fn uuid_v7_mids_are_recognised_by_version_and_variant() {
    for v7 in [
        "0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a01",
        "0195F0A2-7C1E-7A3B-BD2E-2F1C8E4B6A01",
    ] {
        assert!(id(v7).is_uuid_v7(), "{v7}");
    }
    for not_v7 in [
        "m004",
        "caps-001",
        // version 4
        "0195f0a2-7c1e-4a3b-9d2e-2f1c8e4b6a01",
        // variant 110 (Microsoft)
        "0195f0a2-7c1e-7a3b-cd2e-2f1c8e4b6a01",
        // no hyphens, braces, a stray character
        "0195f0a27c1e7a3b9d2e2f1c8e4b6a01",
        "{0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a01}",
        "0195f0a2-7c1e-7a3b-9d2e-2f1c8e4b6a0g",
    ] {
        assert!(!id(not_v7).is_uuid_v7(), "{not_v7}");
    }
}
