//! MoltSpeak sessions over real HTTP, driven by the core's client-side
//! builders and checkers: the handshake, encrypted envelopes both ways,
//! their refusals (reused nonce, replayed verify, stale message, expired
//! session), classification, a stream inside a session, and the bounds on
//! sessions per client. (The independent PyNaCl client of
//! `moltspeak_interop` walks the same exchanges plus the WebSocket.)

use std::time::{SystemTime, UNIX_EPOCH};

use agentlang_core::protocol::moltspeak::{
    Classification, EncryptionKey, EncryptionSecret, Message, MessageBuilder, Op, Party, PublicKey,
    SharedBox, Transmission, crypto,
    handshake::{self, HelloAck, SessionGrant},
    stream::checksum_of,
};
use base64::Engine;
use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

use crate::{
    clowl::seed_catalog,
    support::{Backend, TestApp},
};

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

pub(crate) fn random<const N: usize>() -> [u8; N] {
    // Random UUIDs as the randomness source the test crate already has.
    let mut bytes = [0; N];
    for chunk in bytes.chunks_mut(16) {
        chunk.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..chunk.len()]);
    }
    bytes
}

pub(crate) async fn post(app: &TestApp, body: &Value) -> Value {
    let res = app.post_json("/moltspeak/v0.1/message", body).await;
    assert_eq!(res.status(), reqwest::StatusCode::OK);
    res.json().await.unwrap()
}

struct Client {
    key: SigningKey,
    enc: EncryptionSecret,
    party: Party,
}

impl Client {
    fn new(seed: u8) -> Self {
        let key = SigningKey::from_bytes(&[seed; 32]);
        let enc = EncryptionSecret::from_bytes(random());
        let mut party = Party::new(format!("rust-agent-{seed}"), Some("tests"));
        party.key = Some(key.verifying_key().into());
        party.enc_key = Some(enc.public_key());
        Self { key, enc, party }
    }

    fn message(&self, op: Op, cls: Classification, p: Value, ts: u64) -> Message {
        MessageBuilder::new(
            uuid::Uuid::new_v4().to_string(),
            op,
            cls,
            match p {
                Value::Object(m) => m,
                other => panic!("not an object: {other}"),
            },
        )
        .from(&self.party)
        .ts(ts)
        .build()
        .unwrap()
        .sign(&self.key)
        .unwrap()
    }

    async fn hello(&self, app: &TestApp) -> HelloAck {
        let hello = handshake::hello(
            "h-1",
            now_ms(),
            &self.party,
            vec![json!("query")],
            &self.key,
        )
        .unwrap();
        let ack = Message::from_value(post(app, &hello.to_value()).await).unwrap();
        handshake::check_hello_ack(&ack, "h-1", None).unwrap()
    }

    /// hello, verify: the verify message sent and the session granted.
    async fn handshake(&self, app: &TestApp) -> (Session, Message) {
        let ack = self.hello(app).await;
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
        let grant: SessionGrant =
            handshake::check_verify_response(&answer, "v-1", &ack.key, &nonce).unwrap();
        let session = Session {
            shared: SharedBox::new(&self.enc, &ack.enc_key),
            registry_key: ack.key,
            registry_enc: ack.enc_key,
            own_enc: self.enc.public_key(),
            grant,
        };
        (session, verify)
    }
}

struct Session {
    shared: SharedBox,
    registry_key: PublicKey,
    registry_enc: EncryptionKey,
    own_enc: EncryptionKey,
    grant: SessionGrant,
}

impl Session {
    fn seal(&self, message: &Message, nonce: &[u8; 24]) -> Value {
        crypto::seal(&self.shared, &self.own_enc, &self.grant.id, nonce, message)
    }

    /// The registry's answer, opened and its signature checked.
    fn open(&self, answer: &Value) -> Message {
        let Transmission::Envelope(agentlang_core::protocol::moltspeak::Envelope::Encrypted(env)) =
            Transmission::from_value(answer.clone()).unwrap()
        else {
            panic!("expected an encrypted answer: {answer}");
        };
        assert_eq!(env.sender_public, *self.registry_enc.as_bytes());
        assert_eq!(env.session.as_deref(), Some(self.grant.id.as_str()));
        let message = crypto::open(&self.shared, &env).unwrap();
        message.verify(self.registry_key.verifying_key()).unwrap();
        message
    }

    async fn ask(&self, app: &TestApp, message: &Message) -> Message {
        self.open(&post(app, &self.seal(message, &random())).await)
    }
}

fn search(q: &str) -> Value {
    json!({"domain": "registry", "intent": "search", "params": {"q": q}})
}

fn code(message: &Message) -> &str {
    assert_eq!(message.op(), Op::Error, "{}", message.to_value());
    message.payload()["code"].as_str().unwrap()
}

#[actix_web::test]
async fn a_session_carries_encrypted_queries_and_refuses_replays() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    seed_catalog(&app).await;
    let alice = Client::new(7);
    let (session, verify) = alice.handshake(&app).await;
    assert!(session.grant.expires > now_ms() + 3_500_000);

    // The verify cannot be replayed: its challenge is spent.
    let replayed = Message::from_value(post(&app, &verify.to_value()).await).unwrap();
    assert_eq!(code(&replayed), "E_AUTH_FAILED");

    // A confidential query, answered sealed; registry data is public.
    let asked = alice.message(
        Op::Query,
        Classification::Confidential,
        search("web"),
        now_ms(),
    );
    let answer = session.ask(&app, &asked).await;
    assert_eq!(answer.op(), Op::Respond, "{}", answer.to_value());
    assert_eq!(answer.re(), Some(asked.id()));
    assert_eq!(answer.cls(), Classification::Public);

    // An error about a secret request is itself secret.
    let bad = json!({"domain": "registry", "intent": "nope", "params": {}});
    let answer = session
        .ask(
            &app,
            &alice.message(Op::Query, Classification::Secret, bad, now_ms()),
        )
        .await;
    assert_eq!(code(&answer), "E_INVALID_PARAM");
    assert_eq!(answer.cls(), Classification::Secret);

    // The same nonce twice.
    let nonce = random();
    let first = post(
        &app,
        &session.seal(
            &alice.message(Op::Query, Classification::Public, search("a"), now_ms()),
            &nonce,
        ),
    )
    .await;
    assert_eq!(session.open(&first).op(), Op::Respond);
    let again = post(
        &app,
        &session.seal(
            &alice.message(Op::Query, Classification::Public, search("b"), now_ms()),
            &nonce,
        ),
    )
    .await;
    let again = session.open(&again);
    assert_eq!(code(&again), "E_AUTH_FAILED");
    assert_eq!(again.payload()["field"], "envelope.nonce");

    // A stale inner message.
    let stale = alice.message(
        Op::Query,
        Classification::Public,
        search("c"),
        now_ms() - 600_000,
    );
    assert_eq!(code(&session.ask(&app, &stale).await), "E_TIMEOUT");

    // Another key's message inside alice's session.
    let mallory = Client::new(9);
    let forged = mallory.message(Op::Query, Classification::Public, search("d"), now_ms());
    assert_eq!(code(&session.ask(&app, &forged).await), "E_AUTH_FAILED");

    // Sealed with another X25519 key: cannot be opened.
    let wrong = Session {
        shared: SharedBox::new(
            &EncryptionSecret::from_bytes(random()),
            &session.registry_enc,
        ),
        ..session
    };
    let answer = post(
        &app,
        &wrong.seal(
            &alice.message(Op::Query, Classification::Public, search("e"), now_ms()),
            &random(),
        ),
    )
    .await;
    let session = Session {
        shared: SharedBox::new(&alice.enc, &wrong.registry_enc),
        ..wrong
    };
    let answer = session.open(&answer);
    assert_eq!(code(&answer), "E_AUTH_FAILED");
    assert_eq!(answer.payload()["field"], "ciphertext");

    // conf and sec are refused in plaintext.
    for cls in [Classification::Confidential, Classification::Secret] {
        let plain = alice.message(Op::Query, cls, search("f"), now_ms());
        let answer = Message::from_value(post(&app, &plain.to_value()).await).unwrap();
        assert_eq!(code(&answer), "E_CLASSIFICATION");
    }
}

#[actix_web::test]
async fn a_stream_in_a_session_checks_order_checksums_and_sizes() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    let alice = Client::new(11);
    let (session, _) = alice.handshake(&app).await;
    let send = |p: Value| alice.message(Op::Stream, Classification::Confidential, p, now_ms());
    let b64 = |d: &[u8]| {
        format!(
            "base64:{}",
            base64::engine::general_purpose::STANDARD.encode(d)
        )
    };

    let start = session
        .ask(
            &app,
            &send(json!({"action": "start", "stream_id": "s-1", "type": "bytes"})),
        )
        .await;
    assert_eq!(start.op(), Op::Respond, "{}", start.to_value());
    assert_eq!(start.cls(), Classification::Confidential);
    let chunks: [&[u8]; 2] = [&[1; 65536], b"tail"];
    let skipped = session
        .ask(
            &app,
            &send(json!({"action": "chunk", "stream_id": "s-1", "sequence": 1,
            "data": b64(chunks[1]), "checksum": checksum_of(chunks[1])})),
        )
        .await;
    assert_eq!(code(&skipped), "E_INVALID_PARAM");
    assert_eq!(skipped.payload()["field"], "p.sequence");
    assert!(
        skipped.payload()["message"]
            .as_str()
            .unwrap()
            .contains("expected sequence 0, got 1")
    );
    let bad = session
        .ask(
            &app,
            &send(json!({"action": "chunk", "stream_id": "s-1", "sequence": 0,
            "data": b64(chunks[0]), "checksum": checksum_of(b"other")})),
        )
        .await;
    assert_eq!(bad.payload()["field"], "p.checksum");
    let big = vec![0; 65537];
    let over = session
        .ask(
            &app,
            &send(json!({"action": "chunk", "stream_id": "s-1", "sequence": 0,
            "data": b64(&big), "checksum": checksum_of(&big)})),
        )
        .await;
    assert_eq!(code(&over), "E_INVALID_PARAM");
    for (sequence, data) in chunks.iter().enumerate() {
        let receipt = session
            .ask(
                &app,
                &send(
                    json!({"action": "chunk", "stream_id": "s-1", "sequence": sequence,
                "data": b64(data), "checksum": checksum_of(data)}),
                ),
            )
            .await;
        assert_eq!(
            receipt.payload()["data"]["sequence"],
            sequence,
            "{}",
            receipt.to_value()
        );
    }
    let end = session
        .ask(&app, &send(json!({"action": "end", "stream_id": "s-1", "total_chunks": 2,
            "total_bytes": 65540, "final_checksum": checksum_of(&[&[1; 65536][..], b"tail"].concat())})))
        .await;
    assert_eq!(
        end.payload()["data"]["received_bytes"],
        65540,
        "{}",
        end.to_value()
    );
    assert_eq!(end.payload()["data"]["complete"], true);

    // Outside a session, a stream is refused.
    let plain = alice.message(
        Op::Stream,
        Classification::Internal,
        json!({"action": "start", "stream_id": "s-2", "type": "bytes"}),
        now_ms(),
    );
    let answer = Message::from_value(post(&app, &plain.to_value()).await).unwrap();
    assert_eq!(code(&answer), "E_AUTH_FAILED");
}

#[actix_web::test]
async fn sessions_are_bounded_per_client_and_expire() {
    let Some(app) = TestApp::builder(Backend::Sqlite)
        .config(|c| c.identity.moltspeak_session_ttl_secs = 2)
        .build()
        .await
    else {
        return;
    };
    let alice = Client::new(13);
    let (session, _) = alice.handshake(&app).await;
    for _ in 1..8 {
        alice.handshake(&app).await;
    }
    // The ninth live session of this address is refused.
    let ack = alice.hello(&app).await;
    let verify = handshake::verify(
        "v-9",
        now_ms(),
        &alice.party,
        &ack.challenge,
        &random(),
        &alice.key,
    )
    .unwrap();
    let answer = Message::from_value(post(&app, &verify.to_value()).await).unwrap();
    assert_eq!(code(&answer), "E_RATE_LIMIT");

    // Once expired, the session is unknown: a plaintext error.
    tokio::time::sleep(std::time::Duration::from_millis(2_100)).await;
    let asked = alice.message(Op::Query, Classification::Public, search("x"), now_ms());
    let answer = post(&app, &session.seal(&asked, &random())).await;
    let answer = Message::from_value(answer).unwrap();
    assert_eq!(code(&answer), "E_AUTH_FAILED");
    assert_eq!(answer.payload()["field"], "envelope.session");
    // And new sessions can be opened again.
    alice.handshake(&app).await;
}

/// A WebSocket client connection (tokio-tungstenite's).
type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(app: &TestApp) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let url = format!(
        "{}/moltspeak/v0.1/stream",
        app.url.replacen("http://", "ws://", 1)
    );
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_frame_size(Some(4 << 20))
        .max_message_size(Some(4 << 20));
    let (socket, _) =
        tokio_tungstenite::connect_async_with_config(url, Some(config), false).await?;
    Ok(socket)
}

/// Sends one text frame and reads the answer's (ping/pong skipped).
async fn exchange(socket: &mut Socket, frame: &Value) -> Option<Value> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .ok()?;
    loop {
        match socket.next().await? {
            Ok(Message::Text(text)) => return Some(serde_json::from_str(&text).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

#[actix_web::test]
async fn a_stream_over_the_websocket_is_sealed_frame_by_frame() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    let alice = Client::new(17);
    let (session, _) = alice.handshake(&app).await;
    let mut socket = connect(&app).await.unwrap();
    let b64 = |d: &[u8]| {
        format!(
            "base64:{}",
            base64::engine::general_purpose::STANDARD.encode(d)
        )
    };
    let data = vec![5_u8; 65536];
    let frames = [
        json!({"action": "start", "stream_id": "w-1", "type": "bytes", "chunk_size": 65536}),
        json!({"action": "chunk", "stream_id": "w-1", "sequence": 0, "data": b64(&data), "checksum": checksum_of(&data)}),
        json!({"action": "end", "stream_id": "w-1", "total_chunks": 1, "total_bytes": 65536, "final_checksum": checksum_of(&data)}),
    ];
    let mut last = None;
    for p in frames {
        let message = alice.message(Op::Stream, Classification::Confidential, p, now_ms());
        let answer = exchange(&mut socket, &session.seal(&message, &random()))
            .await
            .unwrap();
        let answer = session.open(&answer);
        assert_eq!(answer.op(), Op::Respond, "{}", answer.to_value());
        assert_eq!(answer.re(), Some(message.id()));
        assert_eq!(answer.cls(), Classification::Confidential);
        last = Some(answer);
    }
    assert_eq!(last.unwrap().payload()["data"]["received_bytes"], 65536);

    // A plaintext frame is refused in plaintext; the third closes the
    // connection.
    let plain = alice.message(
        Op::Stream,
        Classification::Internal,
        json!({"action": "start", "stream_id": "w-2", "type": "bytes"}),
        now_ms(),
    );
    for _ in 0..3 {
        let answer = exchange(&mut socket, &plain.to_value()).await.unwrap();
        assert_eq!(answer["p"]["code"], "E_CLASSIFICATION", "{answer}");
    }
    assert!(exchange(&mut socket, &plain.to_value()).await.is_none());
}

#[actix_web::test]
async fn stream_connections_are_bounded_per_client() {
    let Some(app) = TestApp::builder(Backend::Sqlite).build().await else {
        return;
    };
    let mut open = Vec::new();
    for _ in 0..4 {
        open.push(connect(&app).await.unwrap());
    }
    match connect(&app).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 429);
        }
        other => panic!(
            "a fifth connection was not refused: {:?}",
            other.map(|_| ())
        ),
    }
    // Closing one frees its slot.
    drop(open.pop());
    let mut reopened = None;
    for _ in 0..50 {
        if let Ok(socket) = connect(&app).await {
            reopened = Some(socket);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        reopened.is_some(),
        "a closed connection's slot was not freed"
    );
}

#[actix_web::test]
async fn every_websocket_frame_counts_against_the_message_budget() {
    let Some(app) = TestApp::builder(Backend::Sqlite)
        .rate_limits(|r| r.agent_messages_per_minute = std::num::NonZeroU32::new(4).unwrap())
        .build()
        .await
    else {
        return;
    };
    let alice = Client::new(19);
    // hello and verify spend two of the four.
    let (session, _) = alice.handshake(&app).await;
    let mut socket = connect(&app).await.unwrap();
    let mut codes = Vec::new();
    for i in 0..3 {
        let start = json!({"action": "start", "stream_id": format!("r-{i}"), "type": "bytes"});
        let message = alice.message(Op::Stream, Classification::Internal, start, now_ms());
        let answer = exchange(&mut socket, &session.seal(&message, &random()))
            .await
            .unwrap();
        codes.push(if answer.get("envelope").is_some() {
            session.open(&answer).op().to_string()
        } else {
            answer["p"]["code"].as_str().unwrap().to_owned()
        });
    }
    assert_eq!(codes, ["respond", "respond", "E_RATE_LIMIT"]);
}
