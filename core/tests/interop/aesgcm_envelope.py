#!/usr/bin/env python3
"""An independent implementation of the AgentLang prompt envelope (DESIGN.md,
"Prompt encryption"), on Python's `cryptography` package, for interop tests.

    aesgcm_envelope.py open KEYFILE AAD ENVELOPE    -> plaintext on stdout
    aesgcm_envelope.py seal KEYFILE AAD PLAINTEXT   -> envelope on stdout

`open` also recomputes the nonce from the plaintext and fails (exit 3) when
it differs from the envelope's, which checks the derivation, not only the
cipher.
"""
import base64
import hashlib
import hmac
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"AGLENC1\n"


def derive_nonce(key: bytes, aad: bytes, plaintext: bytes) -> bytes:
    return hmac.new(key, aad + b"\x00" + plaintext, hashlib.sha256).digest()[:12]


def main() -> int:
    mode, key_file, aad_text, data_file = sys.argv[1:5]
    with open(key_file, "rb") as f:
        key = base64.b64decode(f.read().strip(), validate=True)
    assert len(key) == 32, "key must be 32 bytes"
    aad = aad_text.encode("utf-8")
    with open(data_file, "rb") as f:
        data = f.read()

    if mode == "open":
        if not data.startswith(MAGIC):
            print("bad magic", file=sys.stderr)
            return 2
        nonce, body = data[8:20], data[20:]
        plaintext = AESGCM(key).decrypt(nonce, body, aad)
        if derive_nonce(key, aad, plaintext) != nonce:
            print("nonce is not HMAC-SHA256(key, AAD || 0x00 || plaintext)[:12]", file=sys.stderr)
            return 3
        sys.stdout.buffer.write(plaintext)
        return 0
    if mode == "seal":
        nonce = derive_nonce(key, aad, data)
        sys.stdout.buffer.write(MAGIC + nonce + AESGCM(key).encrypt(nonce, data, aad))
        return 0
    print(f"unknown mode {mode!r}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
