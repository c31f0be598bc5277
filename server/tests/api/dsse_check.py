"""Checks a DSSE envelope the registry serves with securesystemslib, the
Secure Systems Lab's own DSSE implementation, none of it ours.

    python dsse_check.py ENVELOPE_FILE KEYID PUBLIC_KEY_HEX SHA256_HEX

Verifies the envelope's signature with the Ed25519 key (raw, hex) named
KEYID, then that its payload is an in-toto Statement v1 with a subject of
the given SHA-256. Prints the statement as JSON; exits non-zero otherwise.
"""

import json
import sys

from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey


def main() -> int:
    path, keyid, public_hex, sha256 = sys.argv[1:5]
    with open(path, "rb") as f:
        envelope = Envelope.from_dict(json.load(f))
    key = SSlibKey(keyid, "ed25519", "ed25519", {"public": public_hex})
    verified = envelope.verify([key], 1)
    if keyid not in verified:
        print(f"not verified by {keyid}: {verified}", file=sys.stderr)
        return 1
    if envelope.payload_type != "application/vnd.in-toto+json":
        print(f"payload type {envelope.payload_type}", file=sys.stderr)
        return 1
    statement = json.loads(envelope.payload)
    if statement.get("_type") != "https://in-toto.io/Statement/v1":
        print(f"not a Statement v1: {statement.get('_type')}", file=sys.stderr)
        return 1
    if not any(s.get("digest", {}).get("sha256") == sha256 for s in statement.get("subject", [])):
        print(f"no subject names {sha256}", file=sys.stderr)
        return 1
    print(json.dumps(statement))
    return 0


if __name__ == "__main__":
    sys.exit(main())
