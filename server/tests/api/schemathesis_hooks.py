"""Schemathesis hooks for conformance.rs (loaded through SCHEMATHESIS_HOOKS).

The fuzzer's token comes from the API itself, and again after any 401: the
API lets a token revoke itself (DELETE /api/v1/tokens/{id}), and fuzzing
finds the id in GET /api/v1/tokens, after which every authenticated
operation would only ever be answered 401.
"""

import json
import os
import urllib.request

import schemathesis


@schemathesis.auth()
class RegistryToken:
    def get(self, case, context):
        body = json.dumps(
            {
                "username": os.environ["AGENTLANG_FUZZ_USERNAME"],
                "password": os.environ["AGENTLANG_FUZZ_PASSWORD"],
                "name": "schemathesis",
                "scopes": ["publish", "yank", "owners", "keys", "tokens", "grants", "admin"],
            }
        ).encode()
        request = urllib.request.Request(
            os.environ["AGENTLANG_FUZZ_URL"] + "/api/v1/tokens",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["token"]

    def set(self, case, data, context):
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {data}"
