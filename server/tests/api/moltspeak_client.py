"""An independent MoltSpeak 0.1 client: written from docs/moltspeak.md and
the seed, with libraries nobody here wrote (PyNaCl's libsodium `Box` for
the envelopes, `cryptography` for Ed25519, `rfc8785` for JCS, `websockets`
for the stream). It walks every exchange against a running registry and
prints `ok: <step>` per step; any mismatch raises, so the exit code is
non-zero.

Usage: moltspeak_client.py BASE_URL
"""

import base64
import hashlib
import json
import os
import sys
import time
import urllib.request
import uuid

import nacl.public
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from websockets.sync.client import connect

BASE = sys.argv[1].rstrip("/")
STEPS = []


def step(name):
    STEPS.append(name)
    print("ok:", name, flush=True)


def b64(raw):
    return base64.b64encode(raw).decode()


def unb64(text, prefix):
    assert text.startswith(prefix), f"{text!r} does not start with {prefix!r}"
    return base64.b64decode(text[len(prefix):], validate=True)


def now_ms():
    return int(time.time() * 1000)


def post(path, body):
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        BASE + path, data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200, response.status
        return json.loads(response.read())


def get(path):
    with urllib.request.urlopen(BASE + path, timeout=30) as response:
        return json.loads(response.read())


class Agent:
    """One client identity: an Ed25519 signing key and an X25519 box key."""

    def __init__(self, name):
        self.name = name
        self.sign_key = Ed25519PrivateKey.generate()
        raw = self.sign_key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.key = "ed25519:" + b64(raw)
        self.box_key = nacl.public.PrivateKey.generate()
        self.enc_key = "x25519:" + b64(bytes(self.box_key.public_key))

    def party(self, with_keys=True):
        party = {"agent": self.name, "org": "python-client"}
        if with_keys:
            party["key"] = self.key
            party["enc_key"] = self.enc_key
        return party

    def sign(self, message):
        unsigned = {k: v for k, v in message.items() if k != "sig"}
        signature = self.sign_key.sign(rfc8785.dumps(unsigned))
        return dict(unsigned, sig="ed25519:" + b64(signature))

    def message(self, op, p, cls="pub", **extra):
        message = {
            "v": "0.1",
            "id": str(uuid.uuid4()),
            "ts": now_ms(),
            "op": op,
            "from": self.party(),
            "to": {"agent": REGISTRY["agent"], "org": REGISTRY["org"]},
            "p": p,
            "cls": cls,
        }
        message.update(extra)
        return self.sign(message)


def registry_signed(message):
    """The registry's signature over JCS without `sig`, with the published key."""
    key = Ed25519PublicKey.from_public_bytes(unb64(REGISTRY["key"], "ed25519:"))
    assert message["from"]["key"] == REGISTRY["key"], message["from"]
    unsigned = {k: v for k, v in message.items() if k != "sig"}
    key.verify(unb64(message["sig"], "ed25519:"), rfc8785.dumps(unsigned))
    tampered = json.loads(json.dumps(unsigned))
    tampered["id"] = tampered["id"] + "x"
    try:
        key.verify(unb64(message["sig"], "ed25519:"), rfc8785.dumps(tampered))
    except InvalidSignature:
        return message
    raise AssertionError("a changed message still verified")


def expect_error(answer, code, re=None):
    assert answer["op"] == "error", answer
    assert answer["p"]["code"] == code, answer["p"]
    if re is not None:
        assert answer["re"] == re, answer
    registry_signed(answer)
    return answer


class Session:
    """A verified session: what the handshake left both sides holding."""

    def __init__(self, agent, session_id, expires):
        self.agent = agent
        self.id = session_id
        self.expires = expires
        registry_box = nacl.public.PublicKey(unb64(REGISTRY["enc_key"], "x25519:"))
        self.box = nacl.public.Box(agent.box_key, registry_box)

    def seal(self, message, nonce=None, box=None, sender_public=None):
        nonce = nonce or os.urandom(24)
        plaintext = json.dumps(message).encode()
        ciphertext = (box or self.box).encrypt(plaintext, nonce).ciphertext
        return {
            "moltspeak": "0.1",
            "envelope": {
                "encrypted": True,
                "algorithm": "x25519-xsalsa20-poly1305",
                "sender_public": sender_public or self.agent.enc_key,
                "nonce": "base64:" + b64(nonce),
                "session": self.id,
            },
            "ciphertext": "base64:" + b64(ciphertext),
        }

    def open(self, answer):
        """The signed message inside an encrypted answer of this session."""
        assert "envelope" in answer, f"expected an encrypted envelope, got {answer}"
        envelope = answer["envelope"]
        assert envelope["encrypted"] is True, envelope
        assert envelope["algorithm"] == "x25519-xsalsa20-poly1305", envelope
        assert envelope["sender_public"] == REGISTRY["enc_key"], envelope
        assert envelope["session"] == self.id, envelope
        nonce = unb64(envelope["nonce"], "base64:")
        assert len(nonce) == 24
        plaintext = self.box.decrypt(unb64(answer["ciphertext"], "base64:"), nonce)
        return registry_signed(json.loads(plaintext))

    def ask(self, message):
        return self.open(post("/moltspeak/v0.1/message", self.seal(message)))


def hello(agent):
    message = agent.message(
        "hello",
        {
            "protocol_versions": ["0.1"],
            "capabilities": ["query", "stream"],
            "max_message_size": 1048576,
            "supported_cls": ["pub", "int", "conf", "pii", "sec"],
        },
    )
    answer = post("/moltspeak/v0.1/message", message)
    assert answer["op"] == "hello_ack", answer
    assert answer["re"] == message["id"], answer
    registry_signed(answer)
    return answer


def verify(agent, ack, timestamp=None, signer=None):
    nonce = os.urandom(32)
    message = agent.message(
        "verify",
        {
            "challenge": ack["p"]["challenge"],
            "timestamp": timestamp if timestamp is not None else now_ms(),
            "nonce": "base64:" + b64(nonce),
        },
    )
    if signer is not None:
        message = signer.sign(message)
    return message, nonce, post("/moltspeak/v0.1/message", message)


def handshake(agent):
    ack = hello(agent)
    message, nonce, answer = verify(agent, ack)
    assert answer["op"] == "verify_response", answer
    assert answer["re"] == message["id"], answer
    registry_signed(answer)
    # The registry proved itself: it signed our fresh nonce.
    assert answer["p"]["nonce"] == "base64:" + b64(nonce), answer["p"]
    session = answer["p"]["session"]
    return Session(agent, session["id"], session["expires"]), message


def query(agent, cls="pub", **extra):
    return agent.message(
        "query",
        {"domain": "registry", "intent": "search", "params": {"q": "web"}},
        cls=cls,
        **extra,
    )


def main():
    global REGISTRY
    REGISTRY = get("/.well-known/moltspeak.json")
    unb64(REGISTRY["key"], "ed25519:")
    assert len(unb64(REGISTRY["enc_key"], "x25519:")) == 32
    step("the registry publishes its Ed25519 and X25519 keys")

    alice = Agent("python-alice")
    ack = hello(alice)
    assert ack["from"]["enc_key"] == REGISTRY["enc_key"], ack["from"]
    assert len(unb64(ack["p"]["challenge"], "base64:")) == 32
    assert set(ack["p"]["supported_cls"]) == {"pub", "int", "conf", "pii", "sec"}, ack["p"]
    assert hello(alice)["p"]["challenge"] != ack["p"]["challenge"]
    step("hello_ack carries the keys and a fresh 256-bit challenge")

    unsigned = {k: v for k, v in alice.message("hello", {}).items() if k != "sig"}
    expect_error(post("/moltspeak/v0.1/message", unsigned), "E_AUTH_FAILED")
    step("an unsigned hello is refused")

    mallory = Agent("python-mallory")
    _, _, answer = verify(alice, hello(alice), signer=mallory)
    assert answer["p"]["code"] in ("E_SIGNATURE", "E_AUTH_FAILED"), answer["p"]
    registry_signed(answer)
    step("a verify signed by another key is refused")

    _, _, answer = verify(alice, hello(alice), timestamp=now_ms() - 10 * 60 * 1000)
    expect_error(answer, "E_AUTH_FAILED")
    step("a stale verify is refused")

    session, verify_message = handshake(alice)
    assert session.expires > now_ms() + 30 * 60 * 1000, session.expires
    step("verify opens a session and the registry signs our nonce")

    replayed = post("/moltspeak/v0.1/message", verify_message)
    expect_error(replayed, "E_AUTH_FAILED")
    step("a replayed verify is refused")

    # Encrypted exchanges inside the session.
    asked = query(alice, cls="conf")
    answer = session.ask(asked)
    assert answer["op"] == "respond", answer
    assert answer["re"] == asked["id"], answer
    assert answer["p"]["status"] == "success", answer["p"]
    assert answer["cls"] in ("pub", "int", "conf"), answer["cls"]
    step("a conf query travels and is answered encrypted")

    secret = agent_query_with_bad_intent(alice, "sec")
    answer = session.ask(secret)
    assert answer["op"] == "error" and answer["p"]["code"] == "E_INVALID_PARAM", answer
    assert answer["cls"] == "sec", f"an error quoting a sec message must be sec: {answer}"
    step("an answer carrying a sec request's data is classified sec")

    nonce = os.urandom(24)
    first = session.open(post("/moltspeak/v0.1/message", session.seal(query(alice), nonce)))
    assert first["op"] == "respond", first
    again = post("/moltspeak/v0.1/message", session.seal(query(alice), nonce))
    expect_error(session.open(again) if "envelope" in again else again, "E_AUTH_FAILED")
    step("a reused nonce is refused")

    forged_box = nacl.public.Box(
        nacl.public.PrivateKey.generate(),
        nacl.public.PublicKey(unb64(REGISTRY["enc_key"], "x25519:")),
    )
    wrong = post("/moltspeak/v0.1/message", session.seal(query(alice), box=forged_box))
    expect_error(session.open(wrong) if "envelope" in wrong else wrong, "E_AUTH_FAILED")
    step("an envelope sealed with the wrong key is refused")

    stranger = Session(alice, str(uuid.uuid4()), 0)
    expect_error(post("/moltspeak/v0.1/message", stranger.seal(query(alice))), "E_AUTH_FAILED")
    step("an unknown session is refused")

    mallory_says = session.seal(query(mallory))
    answer = post("/moltspeak/v0.1/message", mallory_says)
    opened = session.open(answer) if "envelope" in answer else answer
    assert opened["op"] == "error" and opened["p"]["code"] in ("E_SIGNATURE", "E_AUTH_FAILED"), opened
    step("a message signed by another key inside the session is refused")

    for cls in ("conf", "sec"):
        expect_error(post("/moltspeak/v0.1/message", query(alice, cls=cls)), "E_CLASSIFICATION")
    step("conf and sec in plaintext are refused")

    stream(session)
    consent(session)
    print(f"{len(STEPS)} steps passed", flush=True)


def agent_query_with_bad_intent(agent, cls):
    return agent.message(
        "query",
        {"domain": "registry", "intent": "no-such-intent", "params": {"q": "x"}},
        cls=cls,
    )


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def stream(session):
    alice = session.agent
    url = BASE.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
    with connect(url + "/moltspeak/v0.1/stream", open_timeout=30, max_size=4 << 20) as ws:

        def send(p):
            message = alice.message("stream", p, cls="conf")
            ws.send(json.dumps(session.seal(message)))
            answer = session.open(json.loads(ws.recv(timeout=30)))
            assert answer["re"] == message["id"], answer
            return answer

        answer = send({"action": "start", "stream_id": "py-1", "type": "bytes", "chunk_size": 65536})
        assert answer["op"] == "respond", answer
        chunks = [os.urandom(65536), os.urandom(65536), b"tail"]
        for sequence, data in enumerate(chunks):
            answer = send({
                "action": "chunk", "stream_id": "py-1", "sequence": sequence,
                "data": "base64:" + b64(data), "checksum": sha256(data),
            })
            assert answer["op"] == "respond", answer
        answer = send({
            "action": "end", "stream_id": "py-1", "total_chunks": 3,
            "total_bytes": sum(map(len, chunks)), "final_checksum": sha256(b"".join(chunks)),
        })
        assert answer["op"] == "respond", answer
        assert json.dumps(answer["p"]["data"]).find(str(sum(map(len, chunks)))) >= 0, answer["p"]
        step("a stream of three chunks is received whole over the WebSocket")

        for stream_id in ("py-2", "py-3", "py-4"):
            send({"action": "start", "stream_id": stream_id, "type": "bytes"})
        skipped = send({
            "action": "chunk", "stream_id": "py-2", "sequence": 1,
            "data": "base64:" + b64(b"x"), "checksum": sha256(b"x"),
        })
        assert skipped["op"] == "error" and skipped["p"].get("field") == "p.sequence", skipped
        step("a missing chunk is reported")

        bad = send({
            "action": "chunk", "stream_id": "py-3", "sequence": 0,
            "data": "base64:" + b64(b"x"), "checksum": sha256(b"y"),
        })
        assert bad["op"] == "error" and "checksum" in bad["p"].get("field", ""), bad
        step("a chunk whose checksum does not match is reported")

        big = os.urandom(65537)
        over = send({
            "action": "chunk", "stream_id": "py-4", "sequence": 0,
            "data": "base64:" + b64(big), "checksum": sha256(big),
        })
        assert over["op"] == "error", over
        step("a chunk over 64 KiB is refused")


def consent(session):
    alice = session.agent
    asked = alice.message(
        "consent",
        {
            "action": "request",
            "data_types": ["email"],
            "purpose": "Schedule meeting with contacts",
            "duration": "1h",
            "human": "user:john@example.com",
        },
        cls="int",
    )
    answer = session.ask(asked)
    assert answer["op"] == "consent_response", answer
    assert answer["re"] == asked["id"], answer
    proof = answer["p"]["proof"]
    assert proof.startswith("consent-token:"), proof
    step("a consent exchange issues a proof")

    def pii_query(proof, types=("email",)):
        return alice.message(
            "query",
            {"domain": "registry", "intent": "search", "params": {"q": "jane@example.com"}},
            cls="pii",
            pii_meta={
                "types": list(types),
                "consent": {
                    "granted_by": answer["p"]["granted_by"],
                    "purpose": answer["p"]["purpose"],
                    "expires": answer["p"]["expires"],
                    "proof": proof,
                },
            },
        )

    accepted = session.ask(pii_query(proof))
    assert accepted["op"] == "respond", accepted
    step("pii with the registry's proof is accepted")

    forged = proof[:-4] + ("AAAA" if not proof.endswith("AAAA") else "BBBB")
    refused = session.ask(pii_query(forged))
    assert refused["op"] == "error" and refused["p"]["code"] == "E_CONSENT", refused
    refused = session.ask(pii_query("consent-token:made-up"))
    assert refused["op"] == "error" and refused["p"]["code"] == "E_CONSENT", refused
    step("a forged consent proof is refused")


if __name__ == "__main__":
    main()
