#!/usr/bin/env python3
"""An independent C2SP transparency-log witness, and a tlog-proof verifier.

Written from the specifications (c2sp.org/tlog-witness, tlog-cosignature,
tlog-checkpoint, signed-note, tlog-proof; RFC 9162 for the Merkle proofs),
not from the registry's code: Ed25519 from `cryptography`, everything else
from the standard library.

    c2sp_witness.py serve --name NAME --log-vkey VKEY --state FILE [--corrupt]
        Serves `POST /add-checkpoint` on 127.0.0.1, a free port. Prints
        `VKEY <its verifier key>` and `PORT <port>`, then serves until
        killed. The state (the latest cosigned checkpoint of the log) is the
        JSON file FILE, `{"size": N, "root": "<base64>"}`, read and written
        under one lock per request (so a test may rewrite it). With
        --corrupt, every cosignature it answers is damaged.

    c2sp_witness.py verify-proof --log-vkey VKEY [--witness VKEY]... \
            [--require N] FILE
        Verifies a c2sp.org/tlog-proof@v1 whose `extra` is the logged entry:
        prints `{"index", "size", "cosignatures", "entry"}` as JSON, or
        exits 1 saying why.
"""

import argparse
import base64
import hashlib
import json
import os
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

EM_DASH = "\u2014"
MAX_BODY = 64 * 1024


def b64(data):
    return base64.b64encode(data).decode()


def unb64(text):
    return base64.b64decode(text, validate=True)


def key_id(name, typed_key):
    """signed-note: SHA-256(name || "\\n" || type || key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + typed_key).digest()[:4]


def parse_vkey(vkey, want_type):
    """`<name>+<hex id>+<base64(type || key)>` -> (name, id, public key)."""
    name, hex_id, data = vkey.strip().split("+", 2)
    raw = unb64(data)
    if raw[0] != want_type or len(raw) != 33:
        raise ValueError(f"not a key of type {want_type:#04x}")
    kid = bytes.fromhex(hex_id)
    if kid != key_id(name, raw):
        raise ValueError("the key id does not match")
    return name, kid, Ed25519PublicKey.from_public_bytes(raw[1:])


def split_note(note):
    """A signed note -> (text incl. its final newline, [signature lines])."""
    at = note.find(b"\n\n")
    if at < 0 or not note.endswith(b"\n"):
        raise ValueError("not a signed note")
    text = note[: at + 1]
    sigs = note[at + 2 :].decode().split("\n")[:-1]
    if not sigs:
        raise ValueError("a note without signatures")
    return text, sigs


def parse_sig_line(line):
    if not line.startswith(EM_DASH + " "):
        raise ValueError(f"not a signature line: {line!r}")
    name, data = line[2:].rsplit(" ", 1)
    raw = unb64(data)
    return name, raw[:4], raw[4:]


def verify_log_signature(note, log):
    """Verifies the log's signature; returns (text, signature lines)."""
    name, kid, pub = log
    text, sigs = split_note(note)
    good = False
    for line in sigs:
        sname, skid, sig = parse_sig_line(line)
        if sname == name and skid == kid:
            try:
                pub.verify(sig, text)
            except InvalidSignature:
                raise PermissionError("the log's signature does not verify")
            good = True
    if not good:
        raise PermissionError("no signature by the log's key")
    return text, sigs


def parse_checkpoint(text):
    lines = text.decode().split("\n")
    if len(lines) < 4:
        raise ValueError("a checkpoint has an origin, a size and a root")
    origin, size, root = lines[0], lines[1], lines[2]
    if not size.isdigit() or (size != "0" and size.startswith("0")):
        raise ValueError("the size is not a decimal")
    root = unb64(root)
    if len(root) != 32:
        raise ValueError("the root is not 32 bytes")
    return origin, int(size), root


def node(left, right):
    return hashlib.sha256(b"\x01" + left + right).digest()


def leaf(entry):
    return hashlib.sha256(b"\x00" + entry).digest()


def verify_consistency(first, second, first_hash, second_hash, proof):
    """RFC 9162, 2.1.4.2."""
    if first == second:
        return first_hash == second_hash and not proof
    if first == 0 or not proof:
        return False
    if first & (first - 1) == 0:
        proof = [first_hash] + proof
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_hash and sr == second_hash


def verify_inclusion(index, size, leaf_hash, proof, root):
    """RFC 9162, 2.1.3.2."""
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf_hash
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


class Witness:
    def __init__(self, name, log, state, corrupt):
        self.name = name
        self.log = log
        self.state = state
        self.corrupt = corrupt
        self.key = Ed25519PrivateKey.generate()
        pub = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        self.typed = b"\x04" + pub
        self.kid = key_id(name, self.typed)
        self.lock = threading.Lock()

    def vkey(self):
        return f"{self.name}+{self.kid.hex()}+{b64(self.typed)}"

    def load(self):
        try:
            with open(self.state) as f:
                s = json.load(f)
            return int(s["size"]), unb64(s["root"])
        except FileNotFoundError:
            return 0, None

    def save(self, size, root):
        tmp = self.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"size": size, "root": b64(root)}, f)
        os.replace(tmp, self.state)

    def cosign(self, text):
        t = int(time.time())
        msg = f"cosignature/v1\ntime {t}\n".encode() + text
        sig = self.key.sign(msg)
        if self.corrupt:
            sig = bytes([sig[0] ^ 0xFF]) + sig[1:]
        return f"{EM_DASH} {self.name} {b64(self.kid + struct.pack('>Q', t) + sig)}\n"

    def add_checkpoint(self, body):
        """-> (status, content type, body)."""
        try:
            head, sep, note = body.partition(b"\n\n")
            if not sep:
                raise ValueError("no empty line")
            lines = head.decode().split("\n")
            old = lines[0]
            if not old.startswith("old "):
                raise ValueError("no old size line")
            old = old[4:]
            if not old.isdigit() or (old != "0" and old.startswith("0")):
                raise ValueError("the old size is not a decimal")
            old = int(old)
            if len(lines) - 1 > 63:
                raise ValueError("more than 63 proof lines")
            proof = [unb64(l) for l in lines[1:]]
            if any(len(p) != 32 for p in proof):
                raise ValueError("a proof line is not a hash")
            text, _ = split_note(note)
            origin, size, root = parse_checkpoint(text)
        except (ValueError, UnicodeDecodeError) as e:
            return 400, "text/plain", f"{e}\n"
        if origin != self.log[0]:
            return 404, "text/plain", "unknown origin\n"
        try:
            verify_log_signature(note, self.log)
        except (PermissionError, ValueError) as e:
            return 403, "text/plain", f"{e}\n"
        if old > size:
            return 400, "text/plain", "the old size is larger than the checkpoint's\n"
        with self.lock:
            have, have_root = self.load()
            if old != have:
                return 409, "text/x.tlog.size", f"{have}\n"
            if size == 0 and root != hashlib.sha256(b"").digest():
                return 422, "text/plain", "an empty tree with another root\n"
            if old == 0:
                if proof:
                    return 422, "text/plain", "a proof from the empty tree\n"
            elif old == size:
                if root != have_root:
                    return 422, "text/plain", "the same size with another root\n"
            elif not verify_consistency(old, size, have_root, root, proof):
                return 422, "text/plain", "the consistency proof does not verify\n"
            self.save(size, root)
            return 200, "text/plain; charset=utf-8", self.cosign(text)


def serve(args):
    log = parse_vkey(args.log_vkey, 0x01)
    witness = Witness(args.name, log, args.state, args.corrupt)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            if self.path.rstrip("/").split("/")[-1] != "add-checkpoint":
                return self.answer(404, "text/plain", "not found\n")
            length = int(self.headers.get("content-length") or 0)
            if length > MAX_BODY:
                return self.answer(413, "text/plain", "too large\n")
            body = self.rfile.read(length)
            self.answer(*witness.add_checkpoint(body))

        def answer(self, status, ctype, text):
            data = text.encode()
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            print(f"add-checkpoint -> {status} {text.strip()[:80]}", file=sys.stderr, flush=True)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"VKEY {witness.vkey()}", flush=True)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


def verify_proof(args):
    log = parse_vkey(args.log_vkey, 0x01)
    witnesses = [parse_vkey(w, 0x04) for w in args.witness]
    with open(args.file, "rb") as f:
        data = f.read()
    head, sep, checkpoint = data.partition(b"\n\n")
    if not sep:
        sys.exit("no empty line")
    lines = head.decode().split("\n")
    if lines[0] != "c2sp.org/tlog-proof@v1":
        sys.exit("not a tlog-proof")
    rest = lines[1:]
    extra = None
    if rest and rest[0].startswith("extra "):
        extra = unb64(rest[0][6:])
        rest = rest[1:]
    if not rest or not rest[0].startswith("index "):
        sys.exit("no index line")
    index = int(rest[0][6:])
    proof = [unb64(l) for l in rest[1:]]
    if extra is None:
        sys.exit("no entry in extra")
    try:
        text, sigs = verify_log_signature(checkpoint, log)
    except (PermissionError, ValueError) as e:
        sys.exit(f"the checkpoint: {e}")
    origin, size, root = parse_checkpoint(text)
    cosigned = set()
    for line in sigs:
        name, kid, sig = parse_sig_line(line)
        for wname, wkid, wpub in witnesses:
            if name == wname and kid == wkid and len(sig) == 72:
                (t,) = struct.unpack(">Q", sig[:8])
                msg = f"cosignature/v1\ntime {t}\n".encode() + text
                try:
                    wpub.verify(sig[8:], msg)
                    cosigned.add(wname)
                except InvalidSignature:
                    sys.exit(f"a bad cosignature by {wname}")
    if len(cosigned) < args.require:
        sys.exit(f"{len(cosigned)} cosignatures of {args.require} required")
    if not verify_inclusion(index, size, leaf(extra), proof, root):
        sys.exit(f"entry {index} is not included")
    print(json.dumps({
        "index": index,
        "size": size,
        "origin": origin,
        "cosignatures": len(cosigned),
        "entry": json.loads(extra),
    }))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--name", required=True)
    s.add_argument("--log-vkey", required=True)
    s.add_argument("--state", required=True)
    s.add_argument("--corrupt", action="store_true")
    v = sub.add_parser("verify-proof")
    v.add_argument("--log-vkey", required=True)
    v.add_argument("--witness", action="append", default=[])
    v.add_argument("--require", type=int, default=0)
    v.add_argument("file")
    args = parser.parse_args()
    serve(args) if args.cmd == "serve" else verify_proof(args)


if __name__ == "__main__":
    main()
