"""An OpenID Connect issuer nobody here wrote the cryptography of: keys,
JWKS and JWTs from joserfc (pinned in .ci/run, venv `oidc-issuer`).

Serves on 127.0.0.1 (a free port, printed as `PORT <n>`):
  GET  /.well-known/openid-configuration   discovery: issuer, jwks_uri
  GET  /jwks                               the public keys (RSA and EC)
  POST /mint    {"alg": "RS256"|"ES256"|"HS256"|"none",
                 "claims": {...}, "key": "current"|"stranger"}
                -> the signed token as text ("stranger": a key the JWKS
                   never lists, with a kid of its own)
  POST /rotate  new RSA and EC keys with new kids; the JWKS lists the new
                ones only, the old ones sign nothing more
  GET  /stats   {"jwks_fetches": n}

Keys are generated per run, never stored.
"""

import base64
import itertools
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey

generation = itertools.count(1)


def new_keys():
    n = next(generation)
    return {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": f"rsa-{n}", "use": "sig", "alg": "RS256"}),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": f"ec-{n}", "use": "sig", "alg": "ES256"}),
    }


state = {
    "keys": new_keys(),
    "stranger": {
        "RS256": RSAKey.generate_key(2048, parameters={"kid": "stranger-rsa"}),
        "ES256": ECKey.generate_key("P-256", parameters={"kid": "stranger-ec"}),
    },
    "jwks_fetches": 0,
    "issuer": None,
}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(request):
    alg = request.get("alg", "RS256")
    claims = request["claims"]
    if alg == "none":
        header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return f"{header}.{b64(json.dumps(claims).encode())}."
    if alg == "HS256":
        # Signed with a public key's bytes as the HMAC secret: the
        # algorithm-confusion attack a verifier must refuse.
        rsa = state["keys"]["RS256"]
        secret = json.dumps(rsa.as_dict(private=False), sort_keys=True).encode()
        key = OctKey.import_key(secret)
        return jwt.encode({"alg": "HS256", "kid": rsa.kid}, claims, key)
    keys = state["stranger"] if request.get("key") == "stranger" else state["keys"]
    key = keys[alg]
    return jwt.encode({"alg": alg, "kid": key.kid, "typ": "JWT"}, claims, key)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/.well-known/openid-configuration":
            issuer = state["issuer"]
            self.reply(200, json.dumps({"issuer": issuer, "jwks_uri": f"{issuer}/jwks"}))
        elif self.path == "/jwks":
            state["jwks_fetches"] += 1
            keys = [k.as_dict(private=False) for k in state["keys"].values()]
            self.reply(200, json.dumps({"keys": keys}))
        elif self.path == "/stats":
            self.reply(200, json.dumps({"jwks_fetches": state["jwks_fetches"]}))
        else:
            self.reply(404, "{}")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/mint":
            self.reply(200, mint(request), "text/plain")
        elif self.path == "/rotate":
            state["keys"] = new_keys()
            self.reply(200, "{}")
        else:
            self.reply(404, "{}")


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    state["issuer"] = f"http://127.0.0.1:{port}"
    print(f"PORT {port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
