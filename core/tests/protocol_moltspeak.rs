//! MoltSpeak 0.1: every example of the spec, every error-code path, PII
//! consent, signatures and envelopes.

use agentlang_core::protocol::moltspeak::{
    Classification, Consent, ENCRYPTION_ALGORITHM, Envelope, ErrorCategory, ErrorCode, ErrorReport,
    MAX_BATCH_BYTES, MAX_MESSAGE_BYTES, Message, MessageBuilder, MoltError, Op, Party, PiiMeta,
    PublicKey, Transmission, parse_batch, salvage_id,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::SigningKey;
use serde_json::{Map, Value, json};

/// Between the examples' timestamps and their consent's expiry.
const NOW: u64 = 1_703_280_120_000;

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/tests/fixtures/moltspeak", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

fn fixture(prefix: &str) -> Value {
    let (_, bytes) = fixtures()
        .into_iter()
        .find(|(name, _)| name.starts_with(prefix))
        .unwrap_or_else(|| panic!("no fixture {prefix}"));
    serde_json::from_slice(&bytes).unwrap()
}

fn validate(v: &Value) -> Result<Message, MoltError> {
    Message::validate(&serde_json::to_vec(v).unwrap(), NOW)
}

fn signing_key(seed: u8) -> SigningKey {
    SigningKey::from_bytes(&[seed; 32])
}

#[test]
fn every_spec_example_parses_and_validates() {
    let examples = fixtures();
    assert_eq!(
        examples.len(),
        14,
        "one file per example of moltspeak-examples.txt"
    );
    let mut summary = String::new();
    for (name, bytes) in &examples {
        let message = Message::validate(bytes, NOW).unwrap_or_else(|e| panic!("{name}: {e}"));
        summary.push_str(&format!(
            "{name}: op={} cls={} ts={} from={} re={} cap={:?} pii={:?}\n",
            message.op(),
            message.cls(),
            message.ts().map_or("-".into(), |t| t.to_string()),
            message.from().map_or("-", |f| f.agent.as_str()),
            message.re().unwrap_or("-"),
            message.cap(),
            message
                .scan_pii()
                .types()
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>(),
        ));
        // The kept object is the received one, byte for byte in meaning.
        assert_eq!(
            message.to_value(),
            serde_json::from_slice::<Value>(bytes).unwrap()
        );
    }
    insta::assert_snapshot!(summary);
}

#[test]
fn pii_example_needs_its_consent() {
    let with_consent = fixture("07-");
    let message = validate(&with_consent).expect("the consent example passes");
    assert_eq!(message.cls(), Classification::Pii);
    assert_eq!(
        message
            .pii_meta()
            .and_then(|m| m.consent.as_ref())
            .map(|c| c.expires),
        Some(1_703_283_600_000)
    );

    let mut without = with_consent.clone();
    without.as_object_mut().unwrap().remove("pii_meta");
    let err = validate(&without).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::Consent, Some("pii_meta.consent"))
    );
    let report = err
        .detected_pii
        .as_ref()
        .expect("the error says what was found");
    assert_eq!(
        json!(report),
        json!({"types": ["email"], "count": 2, "fields": ["p.params.attendees"]})
    );

    // Reclassified without consent: still blocked, for the classification.
    let mut reclassified = without.clone();
    reclassified["cls"] = json!("int");
    let err = validate(&reclassified).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::Consent, Some("cls"))
    );

    // Consent given but the message not classified pii.
    let mut unclassified = with_consent.clone();
    unclassified["cls"] = json!("conf");
    assert_eq!(
        validate(&unclassified).unwrap_err().code,
        ErrorCode::Consent
    );

    // Consent expired.
    let err = Message::validate(
        &serde_json::to_vec(&with_consent).unwrap(),
        1_703_283_600_000,
    )
    .unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::Consent, Some("pii_meta.consent.expires"))
    );

    // A kind of PII the consent does not declare.
    let mut phone = with_consent;
    phone["p"]["params"]["dial_in"] = json!("+1 415 555 0123");
    let err = validate(&phone).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::Consent, Some("pii_meta.types"))
    );
    assert!(err.message.contains("phone"), "{err}");

    // Classified pii with no consent at all, even when nothing is detected.
    let mut claimed = fixture("01-");
    claimed["cls"] = json!("pii");
    assert_eq!(validate(&claimed).unwrap_err().code, ErrorCode::Consent);
}

#[test]
fn consent_error_report_has_the_spec_shape() {
    let mut without = fixture("07-");
    without.as_object_mut().unwrap().remove("pii_meta");
    let err = validate(&without).unwrap_err();
    let report = ErrorReport::from(&err);
    let reply = report
        .to_message("error-consent-001", "calendar-sync-001", 1_703_280_000_000)
        .unwrap();
    let p = reply.to_value()["p"].clone();
    assert_eq!(p["code"], json!("E_CONSENT"));
    assert_eq!(p["category"], json!("privacy"));
    assert_eq!(p["field"], json!("pii_meta.consent"));
    assert_eq!(p["recoverable"], json!(true));
    assert_eq!(
        p["suggestion"],
        json!({"action": "request_consent", "consent_type": "pii", "data_types": ["email"]})
    );
    assert_eq!(
        p["detected_pii"],
        json!({"types": ["email"], "count": 2, "fields": ["p.params.attendees"]})
    );
    assert_eq!(
        (reply.op(), reply.re()),
        (Op::Error, Some("calendar-sync-001"))
    );
    // The spec's own E_CONSENT example carries no PII itself.
    assert!(validate(&fixture("11-")).is_ok());
}

#[test]
fn invalid_param_report_matches_the_spec_error_example() {
    let mut report = ErrorReport::new(
        ErrorCode::InvalidParam,
        "Parameter 'location' is required for weather queries",
    );
    report.field = Some("p.params.location".into());
    report.suggestion = json!({"action": "retry", "fix": "Add location parameter"})
        .as_object()
        .cloned();
    assert_eq!(
        Value::Object(report.to_payload()),
        json!({
            "code": "E_INVALID_PARAM",
            "category": "validation",
            "message": "Parameter 'location' is required for weather queries",
            "field": "p.params.location",
            "recoverable": true,
            "suggestion": {"action": "retry", "fix": "Add location parameter"}
        })
    );
    assert!(
        report.to_message("e1", "", 1).is_err(),
        "an error must answer some id"
    );
}

type Mutation = fn(&mut Value);

#[test]
fn each_rule_fails_with_its_code_and_field() {
    let cases: &[(&str, Mutation, ErrorCode, Option<&str>)] = &[
        (
            "not an object",
            |v| *v = json!("query"),
            ErrorCode::Schema,
            None,
        ),
        (
            "v missing",
            |v| drop(v.as_object_mut().unwrap().remove("v")),
            ErrorCode::MissingField,
            Some("v"),
        ),
        (
            "v number",
            |v| v["v"] = json!(0.1),
            ErrorCode::Schema,
            Some("v"),
        ),
        (
            "v 0.2",
            |v| v["v"] = json!("0.2"),
            ErrorCode::Version,
            Some("v"),
        ),
        (
            "unknown top-level field",
            |v| v["priority"] = json!(1),
            ErrorCode::Schema,
            Some("priority"),
        ),
        (
            "id missing",
            |v| drop(v.as_object_mut().unwrap().remove("id")),
            ErrorCode::MissingField,
            Some("id"),
        ),
        (
            "id empty",
            |v| v["id"] = json!(""),
            ErrorCode::InvalidParam,
            Some("id"),
        ),
        (
            "id number",
            |v| v["id"] = json!(1),
            ErrorCode::Schema,
            Some("id"),
        ),
        (
            "ts string",
            |v| v["ts"] = json!("now"),
            ErrorCode::Schema,
            Some("ts"),
        ),
        (
            "ts negative",
            |v| v["ts"] = json!(-1),
            ErrorCode::InvalidParam,
            Some("ts"),
        ),
        (
            "ts fractional",
            |v| v["ts"] = json!(1.5),
            ErrorCode::InvalidParam,
            Some("ts"),
        ),
        (
            "op missing",
            |v| drop(v.as_object_mut().unwrap().remove("op")),
            ErrorCode::MissingField,
            Some("op"),
        ),
        (
            "op unknown",
            |v| v["op"] = json!("dance"),
            ErrorCode::InvalidParam,
            Some("op"),
        ),
        (
            "from string",
            |v| v["from"] = json!("assistant-alpha"),
            ErrorCode::Schema,
            Some("from"),
        ),
        (
            "from without agent",
            |v| v["from"] = json!({"org": "acme"}),
            ErrorCode::MissingField,
            Some("from.agent"),
        ),
        (
            "from agent empty",
            |v| v["from"]["agent"] = json!(""),
            ErrorCode::InvalidParam,
            Some("from.agent"),
        ),
        (
            "from unknown field",
            |v| v["from"]["nick"] = json!("a"),
            ErrorCode::Schema,
            Some("from.nick"),
        ),
        (
            "from.key not ed25519",
            |v| v["from"]["key"] = json!("rsa:AAAA"),
            ErrorCode::InvalidParam,
            Some("from.key"),
        ),
        (
            "from.key short",
            |v| v["from"]["key"] = json!("ed25519:abc123"),
            ErrorCode::InvalidParam,
            Some("from.key"),
        ),
        (
            "from.key weak",
            |v| v["from"]["key"] = json!(format!("ed25519:{}", STANDARD.encode([0u8; 32]))),
            ErrorCode::InvalidParam,
            Some("from.key"),
        ),
        (
            "to.enc_key bad",
            |v| v["to"]["enc_key"] = json!("x25519:nL9hHg3..."),
            ErrorCode::InvalidParam,
            Some("to.enc_key"),
        ),
        (
            "p missing",
            |v| drop(v.as_object_mut().unwrap().remove("p")),
            ErrorCode::MissingField,
            Some("p"),
        ),
        (
            "p array",
            |v| v["p"] = json!([]),
            ErrorCode::Schema,
            Some("p"),
        ),
        (
            "cls missing",
            |v| drop(v.as_object_mut().unwrap().remove("cls")),
            ErrorCode::MissingField,
            Some("cls"),
        ),
        (
            "cls unknown",
            |v| v["cls"] = json!("top-secret"),
            ErrorCode::InvalidParam,
            Some("cls"),
        ),
        (
            "sig number",
            |v| v["sig"] = json!(1),
            ErrorCode::Schema,
            Some("sig"),
        ),
        (
            "sig placeholder",
            |v| v["sig"] = json!("ed25519:..."),
            ErrorCode::Signature,
            Some("sig"),
        ),
        (
            "enc string",
            |v| v["enc"] = json!("aes"),
            ErrorCode::Schema,
            Some("enc"),
        ),
        (
            "re number",
            |v| v["re"] = json!(1),
            ErrorCode::Schema,
            Some("re"),
        ),
        (
            "respond without re",
            |v| v["op"] = json!("respond"),
            ErrorCode::MissingField,
            Some("re"),
        ),
        (
            "error without re",
            |v| v["op"] = json!("error"),
            ErrorCode::MissingField,
            Some("re"),
        ),
        (
            "task_ack without re",
            |v| v["op"] = json!("task_ack"),
            ErrorCode::MissingField,
            Some("re"),
        ),
        (
            "hello without from",
            |v| {
                v["op"] = json!("hello");
                v.as_object_mut().unwrap().remove("from");
            },
            ErrorCode::MissingField,
            Some("from"),
        ),
        (
            "exp string",
            |v| v["exp"] = json!("soon"),
            ErrorCode::Schema,
            Some("exp"),
        ),
        (
            "exp passed",
            |v| v["exp"] = json!(NOW),
            ErrorCode::Timeout,
            Some("exp"),
        ),
        (
            "cap string",
            |v| v["cap"] = json!("task.create"),
            ErrorCode::Schema,
            Some("cap"),
        ),
        (
            "cap entry number",
            |v| v["cap"] = json!(["a", 1]),
            ErrorCode::Schema,
            Some("cap[1]"),
        ),
        (
            "cap entry empty",
            |v| v["cap"] = json!([""]),
            ErrorCode::InvalidParam,
            Some("cap[0]"),
        ),
        (
            "ext not namespaced",
            |v| v["ext"] = json!({"reasoning": {}}),
            ErrorCode::InvalidParam,
            Some("ext.reasoning"),
        ),
        (
            "ext empty org",
            |v| v["ext"] = json!({".reasoning": {}}),
            ErrorCode::InvalidParam,
            Some("ext..reasoning"),
        ),
        (
            "ext array",
            |v| v["ext"] = json!([]),
            ErrorCode::Schema,
            Some("ext"),
        ),
        (
            "pii_meta array",
            |v| v["pii_meta"] = json!([]),
            ErrorCode::Schema,
            Some("pii_meta"),
        ),
        (
            "pii_meta unknown field",
            |v| v["pii_meta"] = json!({"kinds": []}),
            ErrorCode::Schema,
            Some("pii_meta.kinds"),
        ),
        (
            "consent without proof",
            |v| {
                v["pii_meta"] =
                    json!({"consent": {"granted_by": "user:j", "purpose": "x", "expires": 1}});
            },
            ErrorCode::MissingField,
            Some("pii_meta.consent.proof"),
        ),
        (
            "consent expires string",
            |v| {
                v["pii_meta"] = json!({"consent": {"granted_by": "user:j", "purpose": "x", "expires": "never", "proof": "p"}});
            },
            ErrorCode::Schema,
            Some("pii_meta.consent.expires"),
        ),
        (
            "pii_meta on a public message",
            |v| v["pii_meta"] = json!({"types": []}),
            ErrorCode::Classification,
            Some("cls"),
        ),
    ];
    for (name, mutate, code, field) in cases {
        let mut v = fixture("01-");
        mutate(&mut v);
        let err = validate(&v).expect_err(name);
        assert_eq!(
            (err.code, err.field.as_deref()),
            (*code, *field),
            "{name}: {err}"
        );
    }
}

#[test]
fn size_limits_are_checked_before_parsing() {
    // Not JSON at all, so only a size check can have refused it.
    let big = vec![b'x'; MAX_MESSAGE_BYTES + 1];
    let err = Message::from_slice(&big).unwrap_err();
    assert_eq!(err.code, ErrorCode::Schema);
    assert!(err.message.contains("limit is 1048576"), "{err}");
    assert_eq!(
        Message::from_slice(&big[..100]).unwrap_err().code,
        ErrorCode::Parse
    );

    let huge = vec![b'x'; MAX_BATCH_BYTES + 1];
    let err = parse_batch(&huge).unwrap_err();
    assert!(err.message.contains("limit is 10485760"), "{err}");
}

#[test]
fn duplicate_keys_are_refused_so_signer_and_reader_agree() {
    let text = r#"{"v":"0.1","id":"d-1","op":"query","p":{},"cls":"pub","cls":"pii"}"#;
    let err = Message::from_slice(text.as_bytes()).unwrap_err();
    assert_eq!(err.code, ErrorCode::Parse);
    assert!(err.message.contains("duplicate key \"cls\""), "{err}");
}

#[test]
fn both_classification_spellings_normalize() {
    for (given, expected) in [
        ("pub", Classification::Public),
        ("public", Classification::Public),
        ("int", Classification::Internal),
        ("internal", Classification::Internal),
        ("conf", Classification::Confidential),
        ("confidential", Classification::Confidential),
        ("sec", Classification::Secret),
        ("secret", Classification::Secret),
    ] {
        let mut v = fixture("01-");
        v["cls"] = json!(given);
        assert_eq!(validate(&v).map(|m| m.cls()), Ok(expected), "{given}");
    }
    assert_eq!(Classification::Confidential.as_str(), "conf");
}

#[test]
fn unknown_namespaced_extensions_are_kept() {
    let mut v = fixture("01-");
    v["ext"] = json!({
        "anthropic.reasoning": {"show_thinking": true, "confidence_threshold": 0.8},
        "openai.functions": {"allowed_functions": ["search", "calculate"]},
        "acme.v2.tracing": "on"
    });
    let message = validate(&v).expect("unknown extensions are not an error");
    let ext = message.ext().unwrap();
    assert_eq!(ext.len(), 3);
    assert_eq!(
        ext["anthropic.reasoning"]["confidence_threshold"],
        json!(0.8)
    );
}

#[test]
fn consent_op_may_name_its_human_but_not_leak_others() {
    assert!(validate(&fixture("06-")).is_ok());
    let mut v = fixture("06-");
    v["p"]["cc"] = json!("jane@example.com");
    let err = validate(&v).unwrap_err();
    assert_eq!(err.code, ErrorCode::Consent);
    assert_eq!(err.detected_pii.unwrap().fields(), ["p.cc"]);
}

#[test]
fn sign_verify_tamper_round_trip() {
    let key = signing_key(7);
    let mut from = Party::new("assistant-alpha", Some("acme-corp"));
    from.key = Some(PublicKey::from(key.verifying_key()));
    let mut payload = Map::new();
    payload.insert("domain".into(), json!("weather"));
    payload.insert("params".into(), json!({"location": "Tokyo", "days": 3}));
    let message = MessageBuilder::new("q-1", Op::Query, Classification::Public, payload)
        .ts(1_703_280_000_000)
        .from(&from)
        .to(&Party::new("weather-service", None))
        .ext("acme.trace", json!({"span": "s1"}))
        .build()
        .unwrap()
        .sign(&key)
        .unwrap();

    let sig = message.to_value()["sig"].as_str().unwrap().to_owned();
    assert!(
        sig.starts_with("ed25519:") && sig.len() == "ed25519:".len() + 88,
        "{sig}"
    );
    let key_text = message.to_value()["from"]["key"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        PublicKey::parse(&key_text),
        Ok(PublicKey::from(key.verifying_key()))
    );

    // Over the wire and back: still verifies, with the given or sender key.
    let received = Message::from_slice(&message.to_vec()).unwrap();
    assert_eq!(received.verify(&key.verifying_key()), Ok(()));
    assert_eq!(received.verify_with_sender_key(), Ok(()));

    // Key order and whitespace do not matter: the signature covers JCS.
    let reordered = format!(
        "{{ \"sig\": \"{sig}\", \"ext\": {{\"acme.trace\": {{\"span\": \"s1\"}}}}, \"cls\": \"pub\",\n \"p\": {{\"params\": {{\"days\": 3.0, \"location\": \"Tokyo\"}}, \"domain\": \"weather\"}},\n \"to\": {{\"agent\": \"weather-service\"}}, \"from\": {{\"key\": \"{key_text}\", \"org\": \"acme-corp\", \"agent\": \"assistant-alpha\"}}, \"op\": \"query\", \"ts\": 1703280000000, \"id\": \"q-1\", \"v\": \"0.1\" }}"
    );
    assert_eq!(
        Message::from_slice(reordered.as_bytes())
            .unwrap()
            .verify_with_sender_key(),
        Ok(())
    );

    // Any change to what was signed breaks it, extensions included.
    let tampers: &[(&str, Mutation)] = &[
        ("payload", |v| v["p"]["params"]["location"] = json!("Osaka")),
        ("number", |v| v["p"]["params"]["days"] = json!(4)),
        ("extension", |v| {
            v["ext"]["acme.trace"]["span"] = json!("s2")
        }),
        ("classification", |v| v["cls"] = json!("int")),
        ("added field", |v| v["re"] = json!("x")),
    ];
    for (name, tamper) in tampers {
        let mut v = received.to_value();
        tamper(&mut v);
        let err = Message::from_value(v)
            .unwrap()
            .verify(&key.verifying_key())
            .unwrap_err();
        assert_eq!(
            (err.code, err.field.as_deref()),
            (ErrorCode::Signature, Some("sig")),
            "{name}"
        );
    }

    // The right message with another key fails too.
    let err = received
        .verify(&signing_key(8).verifying_key())
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::Signature);
}

#[test]
fn unsigned_or_keyless_messages_fail_authentication() {
    let message = validate(&fixture("01-")).unwrap();
    let err = message.verify(&signing_key(1).verifying_key()).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::AuthFailed, Some("sig"))
    );
    let signed = message.sign(&signing_key(1)).unwrap();
    let err = signed.verify_with_sender_key().unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::AuthFailed, Some("from.key"))
    );
}

#[test]
fn jcs_form_is_stable() {
    let a = br#"{"v":"0.1","id":"n-1","op":"task","cls":"int","p":{"b":1.0,"a":1e2,"c":[0.5,-0],"d":"\u00e9\n","e":1E-7}}"#;
    let b = r#"{ "p": { "e": 1e-7, "d": "é\n", "c": [5e-1, 0], "a": 100, "b": 1 }, "cls": "int", "op": "task", "id": "n-1", "v": "0.1" }"#;
    let ma = Message::from_slice(a).unwrap();
    let mb = Message::from_slice(b.as_bytes()).unwrap();
    let canonical = String::from_utf8(ma.signing_bytes().unwrap()).unwrap();
    assert_eq!(
        canonical,
        r#"{"cls":"int","id":"n-1","op":"task","p":{"a":100,"b":1,"c":[0.5,0],"d":"é\n","e":1e-7},"v":"0.1"}"#
    );
    assert_eq!(mb.signing_bytes().unwrap(), ma.signing_bytes().unwrap());

    // `sig` is left out of what is signed.
    let signed = ma.clone().sign(&signing_key(3)).unwrap();
    assert_eq!(signed.signing_bytes().unwrap(), ma.signing_bytes().unwrap());

    // An integer JCS cannot represent exactly cannot be signed.
    let mut v = ma.to_value();
    v["p"]["n"] = json!(9_007_199_254_740_993_u64);
    let err = Message::from_value(v)
        .unwrap()
        .sign(&signing_key(3))
        .unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::InvalidParam, Some("p.n"))
    );
}

#[test]
fn built_messages_equal_parsed_ones() {
    let mut meta = PiiMeta {
        types: vec!["email".into()],
        ..PiiMeta::default()
    };
    meta.consent = Some(Consent {
        granted_by: "user:john@example.com".into(),
        purpose: "Schedule meeting with contacts".into(),
        expires: 1_703_283_600_000,
        proof: "consent-token:ct_abc123xyz".into(),
    });
    let mut payload = Map::new();
    payload.insert("attendees".into(), json!(["jane@example.com"]));
    let built = MessageBuilder::new("m-1", Op::Respond, Classification::Pii, payload)
        .re("q-1")
        .ts(NOW)
        .exp(NOW + 60_000)
        .cap(&["task.create"])
        .pii_meta(&meta)
        .build()
        .unwrap();
    built.check(NOW).unwrap();
    assert_eq!(Message::from_slice(&built.to_vec()), Ok(built.clone()));
    assert_eq!(built.pii_meta(), Some(&meta));
    assert_eq!(built.exp(), Some(NOW + 60_000));
    assert_eq!(
        built.check(NOW + 60_000).unwrap_err().code,
        ErrorCode::Timeout
    );

    let err = built.check_capabilities(&["query"]).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::Capability, Some("cap"))
    );
    assert_eq!(built.check_capabilities(&["query", "task.create"]), Ok(()));
}

#[test]
fn envelopes_wrap_messages() {
    let message = fixture("01-");
    let plain = json!({
        "moltspeak": "0.1",
        "envelope": {"encrypted": false, "compressed": false, "encoding": "utf-8"},
        "message": message
    });
    let t = Transmission::from_slice(&serde_json::to_vec(&plain).unwrap()).unwrap();
    assert_eq!(
        t.message().map(Message::id),
        Some("a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d")
    );

    let mut expired = plain.clone();
    expired["message"]["exp"] = json!(NOW);
    let bytes = serde_json::to_vec(&expired).unwrap();
    assert!(Transmission::from_slice(&bytes).is_ok(), "shape only");
    assert_eq!(
        Transmission::validate(&bytes, NOW).unwrap_err().code,
        ErrorCode::Timeout
    );

    let mut bad_inner = plain.clone();
    bad_inner["message"]["cls"] = json!("top-secret");
    let err = Transmission::from_value(bad_inner).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::InvalidParam, Some("message.cls"))
    );

    let mut wrong_version = plain.clone();
    wrong_version["moltspeak"] = json!("1.0");
    assert_eq!(
        Transmission::from_value(wrong_version).unwrap_err().code,
        ErrorCode::Version
    );

    let mut compressed = plain.clone();
    compressed["envelope"]["compressed"] = json!(true);
    assert_eq!(
        Transmission::from_value(compressed)
            .unwrap_err()
            .field
            .as_deref(),
        Some("envelope.compressed")
    );

    let mut no_message = plain;
    no_message.as_object_mut().unwrap().remove("message");
    let err = Transmission::from_value(no_message).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::MissingField, Some("message"))
    );

    let encrypted = json!({
        "moltspeak": "0.1",
        "envelope": {
            "encrypted": true,
            "algorithm": ENCRYPTION_ALGORITHM,
            "sender_public": format!("x25519:{}", STANDARD.encode([9u8; 32])),
            "nonce": format!("base64:{}", STANDARD.encode([1u8; 24]))
        },
        "ciphertext": format!("base64:{}", STANDARD.encode(b"sealed"))
    });
    match Transmission::from_value(encrypted.clone()).unwrap() {
        Transmission::Envelope(Envelope::Encrypted(e)) => {
            assert_eq!(
                (e.sender_public, e.nonce.len(), e.ciphertext.as_slice()),
                ([9u8; 32], 24, &b"sealed"[..])
            );
        }
        other => panic!("expected an encrypted envelope, got {other:?}"),
    }
    let mut short_nonce = encrypted;
    short_nonce["envelope"]["nonce"] = json!("base64:AAAA");
    let err = Transmission::from_value(short_nonce).unwrap_err();
    assert_eq!(
        (err.code, err.field.as_deref()),
        (ErrorCode::InvalidParam, Some("envelope.nonce"))
    );
}

#[test]
fn batches_judge_each_item() {
    let good = fixture("01-");
    let mut bad = fixture("02-");
    bad.as_object_mut().unwrap().remove("re");
    let batch = serde_json::to_vec(&json!([good, bad, {"moltspeak": "0.1", "envelope": {"encrypted": false}, "message": fixture("03-")}])).unwrap();
    let results = parse_batch(&batch).unwrap();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_ok());
    assert_eq!(
        results[1].as_ref().unwrap_err().code,
        ErrorCode::MissingField
    );
    assert!(results[2].is_ok());

    assert_eq!(parse_batch(b"{}").unwrap_err().code, ErrorCode::Schema);
    assert_eq!(parse_batch(b"[").unwrap_err().code, ErrorCode::Parse);

    // One item over the single-message limit fails alone.
    let mut huge = fixture("01-");
    huge["p"]["blob"] = json!("a".repeat(MAX_MESSAGE_BYTES));
    let results =
        parse_batch(&serde_json::to_vec(&json!([huge, fixture("01-")])).unwrap()).unwrap();
    assert_eq!(results[0].as_ref().unwrap_err().code, ErrorCode::Schema);
    assert!(results[1].is_ok());
}

#[test]
fn error_codes_carry_the_spec_table() {
    use ErrorCategory as C;
    let table = [
        ("E_PARSE", C::Protocol),
        ("E_VERSION", C::Protocol),
        ("E_SCHEMA", C::Validation),
        ("E_MISSING_FIELD", C::Validation),
        ("E_INVALID_PARAM", C::Validation),
        ("E_AUTH_FAILED", C::Auth),
        ("E_SIGNATURE", C::Auth),
        ("E_CAPABILITY", C::Auth),
        ("E_CONSENT", C::Privacy),
        ("E_CLASSIFICATION", C::Privacy),
        ("E_RATE_LIMIT", C::Transport),
        ("E_TIMEOUT", C::Transport),
        ("E_TASK_FAILED", C::Execution),
        ("E_INTERNAL", C::Execution),
    ];
    assert_eq!(ErrorCode::ALL.len(), table.len());
    for (code, (name, category)) in ErrorCode::ALL.into_iter().zip(table) {
        assert_eq!((code.as_str(), code.category()), (name, category));
        assert_eq!(name.parse::<ErrorCode>().ok(), Some(code));
    }
    // The recoverable flags the spec's examples show.
    assert!(ErrorCode::RateLimit.recoverable() && ErrorCode::Consent.recoverable());
    assert!(!ErrorCode::Signature.recoverable() && !ErrorCode::Version.recoverable());
}

#[test]
fn rejected_bytes_yield_an_id_to_answer() {
    assert_eq!(
        salvage_id(br#"{"v":"9","id":"x-1"}"#).as_deref(),
        Some("x-1")
    );
    assert_eq!(
        salvage_id(br#"{"moltspeak":"0.1","message":{"id":"x-2"}}"#).as_deref(),
        Some("x-2")
    );
    assert_eq!(salvage_id(b"nope"), None);
    let err = MoltError::new(ErrorCode::Version, "v 9", Some("v"));
    let reply = ErrorReport::from(&err)
        .to_message("e-1", "x-1", NOW)
        .unwrap();
    assert_eq!(
        reply.to_value()["p"]["suggestion"],
        json!({"action": "downgrade", "supported_versions": ["0.1"]})
    );
}

// ---------------------------------------------------------------------------
// Encryption, handshake and streams (issue 47)

mod sessions {
    use agentlang_core::protocol::moltspeak::{
        Classification, EncryptionKey, EncryptionSecret, Envelope, MessageBuilder, Op, Party,
        SharedBox, Transmission, crypto, handshake,
        stream::{StreamPayload, StreamReceiver, checksum_of},
    };
    use ed25519_dalek::SigningKey;
    use serde_json::{Map, Value, json};

    /// NaCl's `box` test vector (tests/box.c of the NaCl distribution, as
    /// the crypto_box crate and PHP sodium_compat carry it): alice's secret,
    /// bob's public key, the nonce, plaintext and `crypto_box` output.
    const ALICE_SECRET: &str = "68f208412d8dd5db9d0c6d18512e86f0ec75665ab841372d57b042b27ef89d4c";
    const BOB_SECRET: &str = "b581fb5ae182a16f603f39270d4e3b95bc008310b727a11dd4e784a0044d461b";
    const BOB_PUBLIC: &str = "e8980c86e032f1eb2975052e8d65bddd15c3b59641174ec9678a53789d92c754";
    const NONCE: &str = "69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37";
    const PLAINTEXT: &str = "be075fc53c81f2d5cf141316ebeb0c7b5228c52a4c62cbd44b66849b64244ffce5ecbaaf33bd751a1ac728d45e6c61296cdc3c01233561f41db66cce314adb310e3be8250c46f06dceea3a7fa1348057e2f6556ad6b1318a024a838f21af1fde048977eb48f59ffd4924ca1c60902e52f0a089bc76897040e082f937763848645e0705";
    const CIPHERTEXT: &str = "c03f27d188ef650cd12936913137bb17ed4c98c2648939e2e1d2e855470a7b8c632cabfd5ab3b3c2d313dc8c9ecf5da173e1f9c318cdef1dced6d2519e695085e6b5c401a2bd5331442986c7076d412625497c4cb2fd94c6f103961033b2c930d7e82e0341f29d3879bd6ab9d881ea3a1f365d634e653c6e171aac7fc1e76934d23be6f04a54010808dbf0f9bd30f63b68d026";

    fn bytes<const N: usize>(hex_text: &str) -> [u8; N] {
        hex::decode(hex_text).unwrap().try_into().unwrap()
    }

    #[test]
    fn the_nacl_box_vector_seals_and_opens() {
        let alice = EncryptionSecret::from_bytes(bytes(ALICE_SECRET));
        let bob = EncryptionSecret::from_bytes(bytes(BOB_SECRET));
        assert_eq!(
            bob.public_key(),
            EncryptionKey::from_bytes(bytes(BOB_PUBLIC))
        );
        let nonce: [u8; 24] = bytes(NONCE);
        let plaintext = hex::decode(PLAINTEXT).unwrap();
        let sealed = SharedBox::new(&alice, &bob.public_key()).encrypt(&nonce, &plaintext);
        assert_eq!(hex::encode(&sealed), CIPHERTEXT);
        let opened = SharedBox::new(&bob, &alice.public_key()).decrypt(&nonce, &sealed);
        assert_eq!(opened, Some(plaintext));
        let mut tampered = sealed;
        tampered[20] ^= 1;
        assert_eq!(
            SharedBox::new(&bob, &alice.public_key()).decrypt(&nonce, &tampered),
            None
        );
    }

    /// libsodium's `crypto_sign_ed25519_sk_to_curve25519` /
    /// `_pk_to_curve25519` for the seed of its test/default/ed25519_convert.c.
    #[test]
    fn the_x25519_key_is_derived_from_ed25519_as_libsodium_does() {
        let key = SigningKey::from_bytes(&bytes(
            "421151a459faeade3d247115f94aedae42318124095afabe4d1451a559faedee",
        ));
        let secret = EncryptionSecret::from_ed25519(&key);
        assert_eq!(
            hex::encode(secret.to_bytes()),
            "8052030376d47112be7f73ed7a019293dd12ad910b654455798b4667d73de166"
        );
        assert_eq!(
            hex::encode(secret.public_key().as_bytes()),
            "f1814f0e8ff1043d8a44d25babff3cedcae6c22c3edaa48f857ae70de2baae50"
        );
        let text = secret.public_key().to_string();
        assert!(text.starts_with("x25519:"));
        assert_eq!(EncryptionKey::parse(&text).unwrap(), secret.public_key());
        assert!(EncryptionKey::parse("ed25519:AAAA").is_err());
    }

    fn party(key: &SigningKey, enc: &EncryptionSecret, agent: &str) -> Party {
        let mut party = Party::new(agent, Some("tests"));
        party.key = Some(key.verifying_key().into());
        party.enc_key = Some(enc.public_key());
        party
    }

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_handshake_and_an_envelope_round_trip_between_both_sides() {
        let (ck, ce) = (
            SigningKey::from_bytes(&[1; 32]),
            EncryptionSecret::from_bytes([2; 32]),
        );
        let (rk, re) = (
            SigningKey::from_bytes(&[3; 32]),
            EncryptionSecret::from_ed25519(&SigningKey::from_bytes(&[3; 32])),
        );
        let client = party(&ck, &ce, "client");
        let hello = handshake::hello("h", 1_000, &client, vec![json!("query")], &ck).unwrap();
        let verified = handshake::check_hello(&hello).unwrap();
        assert_eq!(verified.enc_key, ce.public_key());

        // An unsigned hello proves nothing.
        let unsigned = MessageBuilder::new("h2", Op::Hello, Classification::Public, Map::new())
            .from(&client)
            .build()
            .unwrap();
        assert_eq!(
            handshake::check_hello(&unsigned).unwrap_err().code.as_str(),
            "E_AUTH_FAILED"
        );

        let challenge = [7; 32];
        let ack = MessageBuilder::new(
            "a",
            Op::HelloAck,
            Classification::Public,
            map(json!({
                "challenge": handshake::encode_binary(&challenge), "challenge_expires": 61_000,
            })),
        )
        .from(&party(&rk, &re, "registry"))
        .re("h")
        .build()
        .unwrap()
        .sign(&rk)
        .unwrap();
        let ack = handshake::check_hello_ack(&ack, "h", None).unwrap();
        assert_eq!(ack.challenge, challenge);

        let nonce = [9; 32];
        let verify = handshake::verify("v", 5_000, &client, &ack.challenge, &nonce, &ck).unwrap();
        let request = handshake::check_verify(&verify, 5_000 + 29_000).unwrap();
        assert_eq!(request.challenge, challenge);
        let stale = handshake::check_verify(&verify, 5_000 + 31_000).unwrap_err();
        assert_eq!(
            (stale.code.as_str(), stale.field.as_deref()),
            ("E_AUTH_FAILED", Some("p.timestamp"))
        );

        let response = MessageBuilder::new("r", Op::VerifyResponse, Classification::Public, map(json!({
            "nonce": handshake::encode_binary(&nonce), "session": {"id": "s-1", "expires": 9_000},
        })))
        .re("v")
        .build()
        .unwrap()
        .sign(&rk)
        .unwrap();
        let grant = handshake::check_verify_response(&response, "v", &ack.key, &nonce).unwrap();
        assert_eq!(grant.id, "s-1");
        assert!(handshake::check_verify_response(&response, "v", &ack.key, &[0; 32]).is_err());

        // Client seals, registry opens (and the other way).
        let query =
            MessageBuilder::new("q", Op::Query, Classification::Secret, map(json!({"x": 1})))
                .ts(5_000)
                .build()
                .unwrap()
                .sign(&ck)
                .unwrap();
        let sealed = crypto::seal(
            &SharedBox::new(&ce, &ack.enc_key),
            &ce.public_key(),
            "s-1",
            &[4; 24],
            &query,
        );
        assert_eq!(sealed["envelope"]["session"], "s-1");
        let Transmission::Envelope(Envelope::Encrypted(env)) =
            Transmission::from_value(sealed).unwrap()
        else {
            panic!("not an encrypted envelope");
        };
        let opened = crypto::open(&SharedBox::new(&re, &ce.public_key()), &env).unwrap();
        assert_eq!(opened, query);
        let other = EncryptionSecret::from_bytes([5; 32]);
        let refused = crypto::open(&SharedBox::new(&re, &other.public_key()), &env).unwrap_err();
        assert_eq!(refused.code.as_str(), "E_AUTH_FAILED");
    }

    fn payload(v: Value) -> StreamPayload {
        StreamPayload::parse(&map(v)).unwrap()
    }

    fn chunk(sequence: u64, data: &[u8]) -> StreamPayload {
        use base64::Engine;
        payload(
            json!({"action": "chunk", "stream_id": "s", "sequence": sequence,
            "data": format!("base64:{}", base64::engine::general_purpose::STANDARD.encode(data)),
            "checksum": checksum_of(data)}),
        )
    }

    #[test]
    fn the_stream_receiver_enforces_order_checksums_and_totals() {
        let mut rx = StreamReceiver::new();
        rx.accept(payload(
            json!({"action": "start", "stream_id": "s", "type": "bytes"}),
        ))
        .unwrap();
        let missing = rx.accept(chunk(1, b"b")).unwrap_err();
        assert_eq!(missing.field.as_deref(), Some("p.sequence"));
        assert!(
            missing.message.contains("expected sequence 0, got 1"),
            "{missing}"
        );
        rx.accept(chunk(0, b"a")).unwrap();
        let repeated = rx.accept(chunk(0, b"a")).unwrap_err();
        assert_eq!(repeated.field.as_deref(), Some("p.sequence"));
        let receipt = rx.accept(chunk(1, b"bc")).unwrap();
        assert_eq!(receipt["received_bytes"], 3);
        let wrong_total = rx
            .accept(payload(json!({"action": "end", "stream_id": "s",
            "total_chunks": 2, "total_bytes": 4, "final_checksum": checksum_of(b"abc")})))
            .unwrap_err();
        assert_eq!(wrong_total.field.as_deref(), Some("p.total_bytes"));
        let end = rx
            .accept(payload(json!({"action": "end", "stream_id": "s",
            "total_chunks": 2, "total_bytes": 3, "final_checksum": checksum_of(b"abc")})))
            .unwrap();
        assert_eq!(end["complete"], true);
        assert_eq!(rx.session_bytes(), 3);

        let bad = json!({"action": "chunk", "stream_id": "s", "sequence": 0,
            "data": "base64:YQ==", "checksum": "sha256:00"});
        assert_eq!(
            StreamPayload::parse(bad.as_object().unwrap())
                .unwrap_err()
                .field
                .as_deref(),
            Some("p.checksum")
        );
        let big = vec![0_u8; 64 * 1024 + 1];
        use base64::Engine;
        let over = json!({"action": "chunk", "stream_id": "s", "sequence": 0,
            "data": format!("base64:{}", base64::engine::general_purpose::STANDARD.encode(&big)),
            "checksum": checksum_of(&big)});
        assert_eq!(
            StreamPayload::parse(over.as_object().unwrap())
                .unwrap_err()
                .field
                .as_deref(),
            Some("p.data")
        );
    }
}
