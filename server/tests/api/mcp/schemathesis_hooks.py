"""Schemathesis hooks for the MCP document's run (server/tests/api/mcp.rs,
loaded through SCHEMATHESIS_HOOKS).

The document says a `cursor` is opaque and must be one the API returned;
a generated string is not one, and the registry refuses it (400, which
its own OpenAPI document lists). So a generated cursor is swapped for one
the registry returned. And since a generated server name is never a
seeded one (every answer would be a 404), every other request is sent to
a seeded server, and a version to one of its versions or `latest`, so the
checks also judge real `ServerResponse`s. Nothing else is changed: every
other value is Schemathesis' own, and every answer is judged against the
MCP document as vendored.
"""

import json
import os
import urllib.parse
import urllib.request

import schemathesis

_SEEN = {}


def _get(path):
    with urllib.request.urlopen(os.environ["AGENTLANG_MCP_URL"] + path, timeout=30) as response:
        return json.load(response)


def _real():
    """A cursor the registry made, and the seeded (name, version) pairs."""
    if not _SEEN:
        page = _get("/v0.1/servers?limit=1")
        _SEEN["cursor"] = page["metadata"]["nextCursor"]
        everything = _get("/v0.1/servers?limit=100")
        _SEEN["versions"] = [
            (s["server"]["name"], s["server"]["version"]) for s in everything["servers"]
        ]
        _SEEN["turn"] = 0
    return _SEEN


@schemathesis.hook
def before_call(context, case, kwargs):
    real = _real()
    if case.query and case.query.get("cursor") not in (None, ""):
        case.query["cursor"] = real["cursor"]
    params = case.path_parameters
    if params and "serverName" in params:
        real["turn"] += 1
        if real["turn"] % 2 == 0:
            name, version = real["versions"][(real["turn"] // 2) % len(real["versions"])]
            # Path parameters reach the URL as they are here: encoded, as
            # the document says (`com.example%2Fmy-server`, `1.0.0%2B...`).
            params["serverName"] = urllib.parse.quote(name, safe="")
            if "version" in params:
                params["version"] = (
                    "latest" if real["turn"] % 4 == 0 else urllib.parse.quote(version, safe="")
                )
