"""Writes the worked exchange of docs/moltspeak.md (between its
`worked-exchange` markers): a complete MoltSpeak 0.1
exchange (hello, hello_ack, verify, verify_response, an encrypted query
and its encrypted answer) with fixed example keys, so every byte a client
must produce can be checked. It uses libraries nobody here wrote (PyNaCl,
cryptography, rfc8785); `core/tests/moltspeak_worked_exchange.rs` checks
the document with the registry's own code, so the two must agree.

Run with the Python .ci/run installs for the MoltSpeak client:
    $HOME/.cache/agentlang-ci-venvs/moltspeak-client/bin/python3 docs/examples/moltspeak_exchange.py
"""

import base64
import hashlib
import json
import pathlib

import nacl.bindings
import nacl.public
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat


def b64(raw):
    return base64.b64encode(raw).decode()


def fixed(label):
    """32 example bytes, named so nobody mistakes them for a real secret."""
    return hashlib.sha256(b"moltspeak worked example: " + label.encode()).digest()


class Side:
    def __init__(self, name, org, ed_seed, x_secret):
        self.ed = Ed25519PrivateKey.from_private_bytes(ed_seed)
        self.ed_seed = ed_seed
        self.key = "ed25519:" + b64(self.ed.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        self.x = nacl.public.PrivateKey(x_secret)
        self.enc_key = "x25519:" + b64(bytes(self.x.public_key))
        self.party = {"agent": name, "org": org, "key": self.key, "enc_key": self.enc_key}

    def sign(self, message):
        unsigned = {k: v for k, v in message.items() if k != "sig"}
        signing_input = rfc8785.dumps(unsigned)
        signed = dict(unsigned, sig="ed25519:" + b64(self.ed.sign(signing_input)))
        return signed, signing_input.decode()


def main():
    client = Side("trip-planner-a1b2", "acme-corp", fixed("client ed25519"), fixed("client x25519"))
    registry_seed = fixed("registry ed25519")
    # The registry's X25519 secret is its Ed25519 secret converted the
    # libsodium way (crypto_sign_ed25519_sk_to_curve25519).
    registry_ed = Ed25519PrivateKey.from_private_bytes(registry_seed)
    registry_pk = registry_ed.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    registry_x = nacl.bindings.crypto_sign_ed25519_sk_to_curve25519(registry_seed + registry_pk)
    registry = Side("agentlang-registry", "agentlang", registry_seed, registry_x)
    registry_to = {"agent": registry.party["agent"], "org": registry.party["org"]}
    client_to = {"agent": client.party["agent"], "org": client.party["org"]}
    t0 = 1795000000000

    hello, hello_input = client.sign({
        "v": "0.1", "id": "0194e3c2-0000-7000-8000-000000000001", "ts": t0, "op": "hello",
        "from": client.party,
        "p": {"protocol_versions": ["0.1"], "capabilities": ["query", "stream"],
              "max_message_size": 1048576,
              "supported_cls": ["pub", "int", "conf", "pii", "sec"]},
        "cls": "pub",
    })
    challenge = fixed("challenge")
    hello_ack, _ = registry.sign({
        "v": "0.1", "id": "0194e3c2-0001-7000-8000-000000000002", "ts": t0 + 40, "op": "hello_ack",
        "re": hello["id"], "from": registry.party, "to": client_to,
        "p": {"protocol_versions": ["0.1"], "challenge": "base64:" + b64(challenge),
              "challenge_expires": t0 + 40 + 60000},
        "cls": "pub",
    })
    nonce = fixed("client nonce")
    verify, verify_input = client.sign({
        "v": "0.1", "id": "0194e3c2-0002-7000-8000-000000000003", "ts": t0 + 90, "op": "verify",
        "from": client.party,
        "p": {"challenge": hello_ack["p"]["challenge"], "timestamp": t0 + 90,
              "nonce": "base64:" + b64(nonce)},
        "cls": "pub",
    })
    session = {"id": "0194e3c2-0003-7000-8000-000000000004", "expires": t0 + 130 + 3600000}
    verify_response, _ = registry.sign({
        "v": "0.1", "id": "0194e3c2-0004-7000-8000-000000000005", "ts": t0 + 130,
        "op": "verify_response", "re": verify["id"], "from": registry.party, "to": client_to,
        "p": {"nonce": verify["p"]["nonce"], "session": session},
        "cls": "pub",
    })

    box = nacl.public.Box(client.x, registry.x.public_key)
    query, _ = client.sign({
        "v": "0.1", "id": "0194e3c2-0005-7000-8000-000000000006", "ts": t0 + 200, "op": "query",
        "from": client.party, "to": registry_to,
        "p": {"domain": "registry", "intent": "search", "params": {"q": "flight search"}},
        "cls": "conf",
    })
    query_plaintext = json.dumps(query, separators=(",", ":"), ensure_ascii=False)
    query_nonce = fixed("query nonce")[:24]
    query_envelope = {
        "moltspeak": "0.1",
        "envelope": {"encrypted": True, "algorithm": "x25519-xsalsa20-poly1305",
                     "sender_public": client.enc_key, "nonce": "base64:" + b64(query_nonce),
                     "session": session["id"]},
        "ciphertext": "base64:" + b64(box.encrypt(query_plaintext.encode(), query_nonce).ciphertext),
    }
    answer, _ = registry.sign({
        "v": "0.1", "id": "0194e3c2-0006-7000-8000-000000000007", "ts": t0 + 260, "op": "respond",
        "re": query["id"], "from": registry.party, "to": client_to,
        "p": {"status": "success", "data": {"results": [], "total": 0}},
        "cls": "pub",
    })
    answer_plaintext = json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
    answer_nonce = fixed("answer nonce")[:24]
    back = nacl.public.Box(registry.x, client.x.public_key)
    answer_envelope = {
        "moltspeak": "0.1",
        "envelope": {"encrypted": True, "algorithm": "x25519-xsalsa20-poly1305",
                     "sender_public": registry.enc_key, "nonce": "base64:" + b64(answer_nonce),
                     "session": session["id"]},
        "ciphertext": "base64:" + b64(back.encrypt(answer_plaintext.encode(), answer_nonce).ciphertext),
    }

    def block(value):
        return "```json\n" + json.dumps(value, indent=2, ensure_ascii=False) + "\n```\n"

    def text(value):
        return "```text\n" + value + "\n```\n"

    keys = {
        "client_ed25519_seed": "base64:" + b64(client.ed_seed),
        "client_x25519_secret": "base64:" + b64(bytes(client.x)),
        "registry_ed25519_seed": "base64:" + b64(registry_seed),
        "registry_x25519_secret": "base64:" + b64(bytes(registry.x)),
    }
    region = "".join([
        "The example keys (never use them for anything else). The registry's X25519 secret is its\n"
        "Ed25519 seed converted the libsodium way (`crypto_sign_ed25519_sk_to_curve25519`):\n\n",
        block(keys),
        "\n### 1. `hello` (client → registry)\n\nSigned by `from.key` over this JCS text (the message without `sig`):\n\n",
        text(hello_input), "\n", block(hello),
        "\n### 2. `hello_ack` (registry → client)\n\nSigned by the registry's key; `p.challenge` is 32 random bytes:\n\n",
        block(hello_ack),
        "\n### 3. `verify` (client → registry)\n\nThe challenge echoed, the client's clock, and 32 random bytes of its own. Signing input:\n\n",
        text(verify_input), "\n", block(verify),
        "\n### 4. `verify_response` (registry → client)\n\nThe client's nonce echoed under the registry's signature, and the session:\n\n",
        block(verify_response),
        "\n### 5. An encrypted `query` (client → registry)\n\nThe signed message, serialized compactly as UTF-8 (any JSON serialization works: the\n"
        "signature covers the JCS form, not these bytes):\n\n",
        text(query_plaintext),
        "\nsealed with `crypto_box(plaintext, nonce, registry enc_key, client x25519 secret)`:\n\n",
        block(query_envelope),
        "\n### 6. The encrypted answer (registry → client)\n\nOpened with `crypto_box_open(ciphertext, nonce, registry enc_key, client x25519 secret)`:\n\n",
        block(answer_envelope), "\nwhose plaintext is:\n\n", text(answer_plaintext),
    ])
    doc = pathlib.Path(__file__).resolve().parent.parent / "moltspeak.md"
    start, end = "<!-- worked-exchange:start -->\n", "<!-- worked-exchange:end -->"
    current = doc.read_text()
    before, rest = current.split(start, 1)
    _, after = rest.split(end, 1)
    doc.write_text(before + start + region + end + after)
    print(doc)


if __name__ == "__main__":
    main()
