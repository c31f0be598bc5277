//! MoltSpeak operations over real HTTP: capability attestations checked
//! against a registered account's key (and the registry's own, served
//! attested), `task` and `tool` with their payload errors, the consent
//! exchange in a session, PII proofs (valid, forged, expired, another
//! key's, wider types) and `mask_fields` in answers.

use agentlang_core::protocol::moltspeak::{
    Classification, EncryptionSecret, Message, MessageBuilder, Op, Party, PublicKey, SharedBox,
    Transmission,
    capabilities::{Attestation, AttestationClaim, Capability},
    crypto,
    handshake::{self, SessionGrant},
};
use ed25519_dalek::{Signature, SigningKey, pkcs8::DecodePrivateKey};
use serde_json::{Value, json};

use crate::{
    clowl::seed_catalog,
    moltspeak_sessions::{now_ms, post, random},
    support::{Backend, TestApp},
};

fn code(answer: &Value) -> &str {
    assert_eq!(answer["op"], "error", "{answer}");
    answer["p"]["code"].as_str().unwrap()
}

fn field(answer: &Value) -> &str {
    answer["p"]["field"].as_str().unwrap_or_default()
}

struct Agent {
    key: SigningKey,
    enc: EncryptionSecret,
    party: Party,
}

impl Agent {
    fn new(key: SigningKey, name: &str) -> Self {
        let enc = EncryptionSecret::from_bytes(random());
        let mut party = Party::new(name, Some("tests"));
        party.key = Some(key.verifying_key().into());
        party.enc_key = Some(enc.public_key());
        Self { key, enc, party }
    }

    fn public(&self) -> PublicKey {
        self.key.verifying_key().into()
    }

    fn message(&self, op: Op, cls: Classification, p: Value) -> MessageBuilder {
        let Value::Object(p) = p else {
            panic!("p must be an object")
        };
        MessageBuilder::new(uuid::Uuid::new_v4().to_string(), op, cls, p)
            .from(&self.party)
            .ts(now_ms())
    }

    fn sign(&self, builder: MessageBuilder) -> Value {
        builder.build().unwrap().sign(&self.key).unwrap().to_value()
    }

    fn hello(&self, capabilities: Vec<Value>) -> Value {
        handshake::hello("h-1", now_ms(), &self.party, capabilities, &self.key)
            .unwrap()
            .to_value()
    }

    async fn session(&self, app: &TestApp) -> Session {
        let ack = Message::from_value(post(app, &self.hello(vec![])).await).unwrap();
        let ack = handshake::check_hello_ack(&ack, "h-1", None).unwrap();
        let nonce = random();
        let verify = handshake::verify(
            "v-1",
            now_ms(),
            &self.party,
            &ack.challenge,
            &nonce,
            &self.key,
        )
        .unwrap();
        let answer = Message::from_value(post(app, &verify.to_value()).await).unwrap();
        let grant = handshake::check_verify_response(&answer, "v-1", &ack.key, &nonce).unwrap();
        Session {
            shared: SharedBox::new(&self.enc, &ack.enc_key),
            registry_key: ack.key,
            own_enc: self.enc.public_key(),
            grant,
        }
    }
}

struct Session {
    shared: SharedBox,
    registry_key: PublicKey,
    own_enc: agentlang_core::protocol::moltspeak::EncryptionKey,
    grant: SessionGrant,
}

impl Session {
    /// Sends `message` sealed; the answer opened and its signature checked.
    async fn ask(&self, app: &TestApp, message: &Value) -> Value {
        let message = Message::from_value(message.clone()).unwrap();
        let sealed = crypto::seal(
            &self.shared,
            &self.own_enc,
            &self.grant.id,
            &random(),
            &message,
        );
        let answer = post(app, &sealed).await;
        let Transmission::Envelope(agentlang_core::protocol::moltspeak::Envelope::Encrypted(env)) =
            Transmission::from_value(answer.clone()).unwrap()
        else {
            panic!("expected an encrypted answer: {answer}");
        };
        let opened = crypto::open(&self.shared, &env).unwrap();
        opened.verify(self.registry_key.verifying_key()).unwrap();
        opened.to_value()
    }
}

fn attestation(
    org_key: &agentlang_core::signing::SecretKey,
    org: &str,
    capability: &str,
    agent: &Agent,
    expires: u64,
) -> Value {
    let claim = AttestationClaim {
        capability: Capability::parse(capability, "t").unwrap(),
        org: org.into(),
        agent: agent.party.agent.clone(),
        key: agent.public(),
        expires,
    };
    Attestation {
        capability: claim.capability,
        org: org.into(),
        signature: Signature::from_bytes(&org_key.sign(&claim.signing_bytes())),
        expires,
    }
    .to_value()
}

#[actix_web::test]
async fn attestations_are_checked_against_the_org_s_registered_keys() {
    let Some(app) = TestApp::builder(Backend::Sqlite)
        .user_with_key("acme", &["keys"])
        .build()
        .await
    else {
        return;
    };
    let org_key = app.user("acme").key();
    let agent = Agent::new(SigningKey::from_bytes(&[21; 32]), "coder-1");
    let later = now_ms() + 3_600_000;

    let good = attestation(org_key, "acme", "code.execute", &agent, later);
    let ack = post(&app, &agent.hello(vec![good.clone(), json!("task")])).await;
    assert_eq!(ack["op"], "hello_ack", "{ack}");

    // The registry's own capabilities, attested by its published key.
    let registry_key = PublicKey::parse(ack["from"]["key"].as_str().unwrap()).unwrap();
    let held = ack["p"]["capabilities"].as_array().unwrap();
    assert!(held.len() >= 10);
    for item in held {
        let attestation = agentlang_core::protocol::moltspeak::capabilities::parse_attestation(
            item.as_object().unwrap(),
            "c",
        )
        .unwrap();
        assert_eq!(attestation.org, "agentlang");
        attestation
            .verify(
                "agentlang-registry",
                &registry_key,
                registry_key.verifying_key(),
                now_ms(),
                "c",
            )
            .unwrap();
    }
    let doc: Value = app
        .get("/.well-known/moltspeak.json")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(doc["capabilities"], ack["p"]["capabilities"]);

    let expired = attestation(org_key, "acme", "code.execute", &agent, now_ms() - 1);
    let answer = post(&app, &agent.hello(vec![json!("query"), expired])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "p.capabilities[1].attestation.expires");

    let stranger = agentlang_core::signing::SecretKey::generate().unwrap();
    let forged = attestation(&stranger, "acme", "code.execute", &agent, later);
    let answer = post(&app, &agent.hello(vec![forged])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "p.capabilities[0].attestation.signature");

    // Another agent cannot replay acme's attestation of coder-1.
    let thief = Agent::new(SigningKey::from_bytes(&[22; 32]), "coder-1");
    let answer = post(&app, &thief.hello(vec![good])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");

    let unknown = attestation(org_key, "nobody-here", "code.execute", &agent, later);
    let answer = post(&app, &agent.hello(vec![unknown])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "p.capabilities[0].attestation.org");

    let answer = post(&app, &agent.hello(vec![json!("warp.drive")])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "p.capabilities[0]");

    // Once acme revokes its key, its attestations prove nothing.
    let key_id = org_key.public_key().key_id();
    let res = app
        .request(
            reqwest::Method::DELETE,
            &format!("/api/v1/keys/{}", key_id.as_str()),
        )
        .bearer_auth(&app.user("acme").token)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), reqwest::StatusCode::OK);
    let good = attestation(org_key, "acme", "code.execute", &agent, later);
    let answer = post(&app, &agent.hello(vec![good])).await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "p.capabilities[0].attestation.org");
}

fn plain(op: Op, p: Value, cap: &[&str]) -> Value {
    let Value::Object(p) = p else {
        panic!("p must be an object")
    };
    MessageBuilder::new(
        uuid::Uuid::new_v4().to_string(),
        op,
        Classification::Internal,
        p,
    )
    .cap(cap)
    .build()
    .unwrap()
    .to_value()
}

#[actix_web::test]
async fn tasks_and_tools_run_the_registry_s_intents() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let create = plain(
        Op::Task,
        json!({"action": "create", "task_id": "t-1", "type": "search",
               "input": {"q": "web"}, "priority": "high", "callback": {"on_complete": true}}),
        &["task.create"],
    );
    let answer = post(&app, &create).await;
    assert_eq!(answer["op"], "respond", "{answer}");
    assert_eq!(answer["re"], create["id"]);
    assert_eq!(answer["p"]["data"]["task_id"], "t-1");
    assert_eq!(answer["p"]["data"]["status"], "completed");
    assert!(answer["p"]["data"]["result"].is_object());

    let status = post(
        &app,
        &plain(Op::Task, json!({"action": "status", "task_id": "t-1"}), &[]),
    )
    .await;
    assert_eq!(status["p"]["data"]["status"], "completed", "{status}");
    let cancel = post(
        &app,
        &plain(Op::Task, json!({"action": "cancel", "task_id": "t-1"}), &[]),
    )
    .await;
    assert_eq!(cancel["p"]["data"]["cancelled"], false, "{cancel}");
    let again = post(&app, &create).await;
    assert_eq!(code(&again), "E_INVALID_PARAM");
    assert_eq!(field(&again), "p.task_id");

    for (p, want_code, want_field) in [
        (
            json!({"action": "status", "task_id": "nope"}),
            "E_INVALID_PARAM",
            "p.task_id",
        ),
        (
            json!({"action": "create", "task_id": "t-2", "type": "search", "input": {"q": "x"},
                   "callback": {"on_complete": "yes"}}),
            "E_SCHEMA",
            "p.callback.on_complete",
        ),
        (
            json!({"action": "create", "task_id": "t-3"}),
            "E_MISSING_FIELD",
            "p.type",
        ),
        (
            json!({"action": "create", "task_id": "t-4", "type": "research", "input": {}}),
            "E_INVALID_PARAM",
            "p.type",
        ),
        (
            json!({"action": "create", "task_id": "t-5", "type": "search", "input": {}}),
            "E_MISSING_FIELD",
            "p.input.q",
        ),
        (
            json!({"action": "explode", "task_id": "t"}),
            "E_INVALID_PARAM",
            "p.action",
        ),
        (
            json!({"action": "create", "task_id": "t-6", "type": "search", "priority": "asap"}),
            "E_INVALID_PARAM",
            "p.priority",
        ),
        (
            json!({"action": "create", "task_id": "t-7", "type": "search", "colour": 1}),
            "E_SCHEMA",
            "p.colour",
        ),
    ] {
        let answer = post(&app, &plain(Op::Task, p.clone(), &[])).await;
        assert_eq!(code(&answer), want_code, "{p} → {answer}");
        assert_eq!(field(&answer), want_field, "{p} → {answer}");
    }

    let list = post(
        &app,
        &plain(Op::Tool, json!({"action": "list"}), &["tool.list"]),
    )
    .await;
    let names: Vec<&str> = list["p"]["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "resolve", "info"]);
    assert_eq!(list["cls"], "pub");
    let invoked = post(
        &app,
        &plain(
            Op::Tool,
            json!({"action": "invoke", "tool": "search", "input": {"q": "web"}}),
            &["tool.invoke"],
        ),
    )
    .await;
    assert_eq!(invoked["op"], "respond", "{invoked}");
    for (p, want_code, want_field) in [
        (
            json!({"action": "invoke", "tool": "python-sandbox", "input": {}}),
            "E_INVALID_PARAM",
            "p.tool",
        ),
        (json!({"action": "invoke"}), "E_MISSING_FIELD", "p.tool"),
        (
            json!({"action": "invoke", "tool": "search", "input": []}),
            "E_SCHEMA",
            "p.input",
        ),
    ] {
        let answer = post(&app, &plain(Op::Tool, p.clone(), &[])).await;
        assert_eq!(code(&answer), want_code, "{p} → {answer}");
        assert_eq!(field(&answer), want_field, "{p} → {answer}");
    }

    // A name outside the spec's table, and one the registry does not hold.
    let answer = post(
        &app,
        &plain(
            Op::Tool,
            json!({"action": "list"}),
            &["tool.list", "teleport"],
        ),
    )
    .await;
    assert_eq!(code(&answer), "E_CAPABILITY");
    assert_eq!(field(&answer), "cap[1]");
    let answer = post(
        &app,
        &plain(Op::Tool, json!({"action": "list"}), &["code.execute"]),
    )
    .await;
    assert_eq!(code(&answer), "E_CAPABILITY");

    // Consent needs a session.
    let answer = post(
        &app,
        &plain(
            Op::Consent,
            json!({"action": "request", "data_types": ["email"], "purpose": "p",
                   "duration": "1h", "human": "user:jane@example.com"}),
            &[],
        ),
    )
    .await;
    assert_eq!(code(&answer), "E_AUTH_FAILED");
}

fn pii_task(agent: &Agent, task_id: &str, meta: Value) -> Value {
    let mut message = agent
        .message(
            Op::Task,
            Classification::Pii,
            json!({"action": "create", "task_id": task_id, "type": "search",
                   "input": {"q": "web"}, "description": "for jane@example.com"}),
        )
        .build()
        .unwrap()
        .to_value();
    message["pii_meta"] = meta;
    let message = Message::from_value(message).unwrap();
    message.sign(&agent.key).unwrap().to_value()
}

fn meta(grant: &Value, types: &[&str], mask: &[&str]) -> Value {
    json!({"types": types, "mask_fields": mask, "consent": {
        "granted_by": grant["granted_by"], "purpose": grant["purpose"],
        "expires": grant["expires"], "proof": grant["proof"]}})
}

#[actix_web::test]
async fn pii_needs_a_consent_token_the_registry_issued_to_the_sender() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let alice = Agent::new(SigningKey::from_bytes(&[31; 32]), "alice-agent");
    let session = alice.session(&app).await;

    let request = alice.sign(alice.message(
        Op::Consent,
        Classification::Internal,
        json!({"action": "request", "data_types": ["email", "name"],
               "purpose": "Schedule meeting", "duration": "1h", "human": "user:jane@example.com"}),
    ));
    let granted = session.ask(&app, &request).await;
    assert_eq!(granted["op"], "consent_response", "{granted}");
    assert_eq!(granted["re"], request["id"]);
    let grant = granted["p"].clone();
    assert_eq!(grant["status"], "granted");
    assert!(
        grant["proof"]
            .as_str()
            .unwrap()
            .starts_with("consent-token:")
    );
    assert_eq!(grant["data_types"], json!(["email", "name"]));
    let expires = grant["expires"].as_u64().unwrap();
    assert!(expires > now_ms() + 3_500_000 && expires <= now_ms() + 3_600_000);

    // Valid: accepted, and the masked task_id never comes back.
    let accepted = session
        .ask(
            &app,
            &pii_task(
                &alice,
                "patient-4711",
                meta(&grant, &["email"], &["task_id"]),
            ),
        )
        .await;
    assert_eq!(accepted["op"], "respond", "{accepted}");
    assert_eq!(accepted["p"]["data"]["task_id"], "[masked]");
    assert!(!accepted.to_string().contains("patient-4711"));
    // It echoes a pii request, so it is pii, under the request's consent:
    // the client's own PII rule accepts it.
    assert_eq!(accepted["cls"], "pii");
    Message::from_value(accepted.clone())
        .unwrap()
        .check(now_ms())
        .unwrap();
    // An error quoting a masked value masks it too.
    let refused = agent_task_with_kind(
        &alice,
        "zzz-secret-kind",
        meta(&grant, &["email"], &["input.kind"]),
    );
    let refused = session.ask(&app, &refused).await;
    assert_eq!(code(&refused), "E_INVALID_PARAM", "{refused}");
    assert!(
        !refused.to_string().contains("zzz-secret-kind"),
        "{refused}"
    );

    // Wider types than granted.
    let answer = session
        .ask(
            &app,
            &pii_task(&alice, "t-2", meta(&grant, &["email", "ssn"], &[])),
        )
        .await;
    assert_eq!(code(&answer), "E_CONSENT");
    assert_eq!(field(&answer), "pii_meta.types");

    // A forged token (the sample's), and one with a spliced claim.
    let mut forged = grant.clone();
    forged["proof"] = json!("consent-token:ct_abc123xyz");
    let answer = session
        .ask(
            &app,
            &pii_task(&alice, "t-3", meta(&forged, &["email"], &[])),
        )
        .await;
    assert_eq!(code(&answer), "E_CONSENT");
    assert_eq!(field(&answer), "pii_meta.consent.proof");

    // Purpose that disagrees with the token's.
    let mut other_purpose = grant.clone();
    other_purpose["purpose"] = json!("Marketing");
    let answer = session
        .ask(
            &app,
            &pii_task(&alice, "t-4", meta(&other_purpose, &["email"], &[])),
        )
        .await;
    assert_eq!(code(&answer), "E_CONSENT");
    assert_eq!(field(&answer), "pii_meta.consent.purpose");

    // Another agent's session cannot use alice's token.
    let bob = Agent::new(SigningKey::from_bytes(&[32; 32]), "bob-agent");
    let bob_session = bob.session(&app).await;
    let answer = bob_session
        .ask(&app, &pii_task(&bob, "t-5", meta(&grant, &["email"], &[])))
        .await;
    assert_eq!(code(&answer), "E_CONSENT");
    assert_eq!(field(&answer), "pii_meta.consent.proof");

    // Revoked: refused afterwards.
    let revoke = alice.sign(alice.message(
        Op::Consent,
        Classification::Internal,
        json!({"action": "revoke", "proof": grant["proof"]}),
    ));
    let revoked = session.ask(&app, &revoke).await;
    assert_eq!(revoked["p"]["status"], "revoked", "{revoked}");
    let answer = session
        .ask(
            &app,
            &pii_task(&alice, "t-6", meta(&grant, &["email"], &[])),
        )
        .await;
    assert_eq!(code(&answer), "E_CONSENT");

    // Consent payload errors name their path.
    for (p, want_code, want_field) in [
        (
            json!({"action": "request", "data_types": [], "purpose": "p", "duration": "1h", "human": "h"}),
            "E_INVALID_PARAM",
            "p.data_types",
        ),
        (
            json!({"action": "request", "data_types": ["email"], "purpose": "p", "duration": "forever", "human": "h"}),
            "E_INVALID_PARAM",
            "p.duration",
        ),
        (
            json!({"action": "request", "data_types": ["email"], "duration": "1h", "human": "h"}),
            "E_MISSING_FIELD",
            "p.purpose",
        ),
    ] {
        let message = alice.sign(alice.message(Op::Consent, Classification::Internal, p.clone()));
        let answer = session.ask(&app, &message).await;
        assert_eq!(code(&answer), want_code, "{p} → {answer}");
        assert_eq!(field(&answer), want_field, "{p} → {answer}");
    }
}

fn agent_task_with_kind(agent: &Agent, kind: &str, meta: Value) -> Value {
    let mut message = agent
        .message(
            Op::Tool,
            Classification::Pii,
            json!({"action": "invoke", "tool": "info", "input": {"kind": kind, "name": "x"}}),
        )
        .build()
        .unwrap()
        .to_value();
    message["pii_meta"] = meta;
    Message::from_value(message)
        .unwrap()
        .sign(&agent.key)
        .unwrap()
        .to_value()
}

#[actix_web::test]
async fn an_expired_token_is_refused_and_plaintext_pii_is_never_logged() {
    let Some(app) = TestApp::builder(Backend::Sqlite)
        .process()
        .env("AGENTLANG_REGISTRY_MOLTSPEAK_SESSION_TTL_SECS", "2")
        .user_with_key("carol", &["keys"])
        .build()
        .await
    else {
        return;
    };
    // The registered key, so plaintext messages it signs authenticate.
    let pem = app.user("carol").key().to_pkcs8_pem();
    let carol = Agent::new(SigningKey::from_pkcs8_pem(&pem).unwrap(), "carol-agent");
    let session = carol.session(&app).await;
    let request = carol.sign(carol.message(
        Op::Consent,
        Classification::Internal,
        json!({"action": "request", "data_types": ["email"], "purpose": "sync",
               "duration": "session", "human": "user:carol@example.com"}),
    ));
    let grant = session.ask(&app, &request).await["p"].clone();
    assert_eq!(grant["status"], "granted", "{grant}");

    // Plaintext, signed by the registered key: accepted, masked in the answer and the log.
    let accepted = post(
        &app,
        &pii_task(
            &carol,
            "record-9931",
            meta(&grant, &["email"], &["task_id"]),
        ),
    )
    .await;
    assert_eq!(accepted["op"], "respond", "{accepted}");
    assert_eq!(accepted["p"]["data"]["task_id"], "[masked]");
    let mut waited = 0;
    while !app.log().contains("moltspeak task") && waited < 50 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        waited += 1;
    }
    let log = app.log();
    assert!(log.contains("moltspeak task"), "{log}");
    assert!(!log.contains("record-9931"));

    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    let answer = post(
        &app,
        &pii_task(&carol, "t-late", meta(&grant, &["email"], &[])),
    )
    .await;
    assert_eq!(code(&answer), "E_CONSENT");
}
