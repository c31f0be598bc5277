#!/usr/bin/env python3
"""An independent CLowl 0.2 client of the registry's POST /clowl.

Written from the spec (seeds/clowl-v0.2.txt) and docs/clowl.md, not from the
registry's code: standard library only, UUIDv7 built by hand per RFC 9562,
context hashes computed here from the content the caller says it published.

Usage: clowl_client.py BASE_URL OWNER_TOKEN READER_TOKEN TEXT_1_2_0 TEXT_1_3_0
  OWNER_TOKEN   a token with the `yank` scope of the owner of tool web_search
  READER_TOKEN  a live token of another account, without the `yank` scope
  TEXT_x_y_z    the container bytes of tool web_search@x.y.z, as text

Prints `ok: <check>` per passed check and `all exchanges passed` at the end;
exits 1 at the first failed check.
"""

import hashlib
import json
import os
import sys
import time
import urllib.request

BASE, OWNER, READER, TEXT_120, TEXT_130 = sys.argv[1:6]


def uuid7() -> str:
    """RFC 9562 section 5.7: 48-bit Unix ms, version 7, 12 random bits,
    variant 0b10, 62 random bits."""
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    rand_a = rand >> 68 & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    h = f"{value:032x}"
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def is_uuid7(text: str) -> bool:
    parts = text.split("-")
    if [len(p) for p in parts] != [8, 4, 4, 4, 12]:
        return False
    try:
        value = int("".join(parts), 16)
    except ValueError:
        return False
    return value >> 76 & 0xF == 7 and value >> 62 & 0b11 == 0b10


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def fail(what: str, detail) -> None:
    print(f"FAILED: {what}: {detail}")
    sys.exit(1)


def check(condition: bool, what: str, detail="") -> None:
    if not condition:
        fail(what, detail)


def message(p: str, t: str, d: dict, **extra) -> dict:
    m = {
        "clowl": "0.2",
        "mid": uuid7(),
        "ts": int(time.time()),
        "tid": "py-trace",
        "pid": None,
        "p": p,
        "from": "py-client",
        "to": "agentlang-registry",
        "cid": "py-" + t,
        "body": {"t": t, "d": d},
    }
    m.update(extra)
    return m


def post(msg: dict) -> dict:
    req = urllib.request.Request(
        BASE.rstrip("/") + "/clowl",
        data=json.dumps(msg).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=30) as res:
        check(res.status == 200, "every CLowl answer is HTTP 200", res.status)
        return json.load(res)


def get(path: str) -> dict:
    with urllib.request.urlopen(BASE.rstrip("/") + path, timeout=30) as res:
        return json.load(res)


def exchange(name: str, msg: dict, p: str, code: str = None) -> dict:
    """Sends `msg`, checks the answer threads to it and has performative `p`
    (and ERR code `code`), prints ok and returns the answer."""
    answer = post(msg)
    check(answer.get("clowl") == "0.2", name + ": version", answer)
    check(answer.get("p") == p, name + ": performative " + p, answer)
    check(answer.get("pid") == msg["mid"], name + ": pid is the request's mid", answer)
    check(answer.get("cid") == msg["cid"], name + ": cid kept", answer)
    check(answer.get("tid") == msg["tid"], name + ": tid kept", answer)
    check(answer.get("to") == msg["from"], name + ": answered to the sender", answer)
    check(is_uuid7(answer.get("mid", "")), name + ": the answer's mid is a UUIDv7", answer)
    check(abs(answer.get("ts", 0) - time.time()) < 30, name + ": ts is now", answer)
    if p == "ERR":
        d = answer["body"]["d"]
        check(answer["body"]["t"] == "error", name + ": error body", answer)
        check(d.get("code") == code, name + ": code " + str(code), answer)
        check(isinstance(d.get("msg"), str) and d["msg"], name + ": msg", answer)
        check(isinstance(d.get("retry"), bool), name + ": retry", answer)
    print("ok: " + name)
    return answer


# --- mid -------------------------------------------------------------------
for bad_mid in ["m004", "caps-001", "6f1c1d3e-0b4a-4c9e-8f00-000000000000"]:
    msg = message("REQ", "capabilities", {})
    msg["mid"] = bad_mid
    answer = exchange(f"mid {bad_mid} is refused", msg, "ERR", "E001")
    check(answer["body"]["d"]["msg"].startswith("mid:"), "E001 names mid", answer)

# --- status and read tasks without auth ------------------------------------
status = exchange("QRY status", message("QRY", "status", {}), "DONE")["body"]["d"]
check(status.get("status") in ("ok", "degraded"), "status is ok or degraded", status)
for field in ("database", "storage", "log"):
    check(field in status, "status reports " + field, status)
check(status["status"] == "ok" and status["database"] == "ok" and status["storage"] == "ok",
      "a healthy registry says so", status)
caps = exchange("REQ capabilities", message("REQ", "capabilities", {}), "CAPS")
check({"yank", "unyank", "status"} <= set(caps["body"]["d"]["supports"]), "CAPS lists tasks", caps)
found = exchange("REQ search", message("REQ", "search", {"q": "search", "kind": "tool"}), "DONE")
check(any(r["name"] == "web_search" for r in found["body"]["d"]["results"]), "search finds", found)

# --- auth ------------------------------------------------------------------
exchange("garbage auth is E002", message("REQ", "search", {"q": "x"}, auth="garbage-token"),
         "ERR", "E002")
exchange("garbage auth on a QRY is E002", message("QRY", "status", {}, auth="garbage-token"),
         "ERR", "E002")
exchange("a live token reads", message("REQ", "search", {"q": "x"}, auth=READER), "DONE")

# --- ctx -------------------------------------------------------------------
h120, h130 = sha256(TEXT_120), sha256(TEXT_130)
read = {"kind": "tool", "name": "web_search", "version": "1.2.0"}
exchange("ctx version ref with its hash",
         message("REQ", "read", read, ctx={"ref": "agentlang:tool/web_search@1.2.0",
                                             "inline": None, "hash": h120}), "DONE")
exchange("ctx own URL ref with its hash",
         message("REQ", "read", read, ctx={"ref": BASE.rstrip("/") + "/api/v1/tools/web_search/1.2.0",
                                             "inline": None, "hash": h120}), "DONE")
exchange("ctx package ref hashes its newest version",
         message("QRY", "read", read, ctx={"ref": "agentlang:tool/web_search", "hash": h130}), "DONE")
exchange("ctx hash mismatch is E016",
         message("REQ", "read", read, ctx={"ref": "agentlang:tool/web_search@1.2.0",
                                             "inline": "fallback", "hash": h130}), "ERR", "E016")
exchange("unreachable ref with inline null is E003",
         message("REQ", "read", read, ctx={"ref": "agentlang:tool/web_search@7.7.7",
                                             "inline": None, "hash": "sha256:" + "ab" * 32}),
         "ERR", "E003")
exchange("a foreign URL is never fetched: unreachable",
         message("REQ", "read", read, ctx={"ref": "https://example.com/notes.md", "inline": None}),
         "ERR", "E003")
exchange("unreachable ref with inline falls back",
         message("REQ", "read", read, ctx={"ref": "research/notes.md", "inline": "the gist",
                                             "hash": None}), "DONE")

# --- yank: REQ with an owner's token only ------------------------------------
target = {"kind": "tool", "name": "web_search", "version": "1.2.0", "reason": "py test"}
exchange("yank without auth is E002", message("REQ", "yank", target), "ERR", "E002")
exchange("yank with a token lacking the scope is E002",
         message("REQ", "yank", target, auth=READER), "ERR", "E002")
exchange("QRY yank never acts (E005)", message("QRY", "yank", target, auth=OWNER), "ERR", "E005")
check(get("/api/v1/tools/web_search/1.2.0")["yanked"] is False, "nothing yanked yet")
done = exchange("REQ yank with the owner's token", message("REQ", "yank", target, auth=OWNER), "DONE")
check(done["body"]["d"]["yanked"] is True, "DONE shows the version yanked", done)
check(get("/api/v1/tools/web_search/1.2.0")["yanked"] is True, "the HTTP API shows it yanked")
exchange("the hash still names the yanked version",
         message("REQ", "read", read, ctx={"ref": "agentlang:tool/web_search@1.2.0", "hash": h120}),
         "DONE")
unyank = {"kind": "tool", "name": "web_search", "version": "1.2.0"}
done = exchange("REQ unyank", message("REQ", "unyank", unyank, auth=OWNER), "DONE")
check(done["body"]["d"]["yanked"] is False, "DONE shows the version unyanked", done)
check(get("/api/v1/tools/web_search/1.2.0")["yanked"] is False, "the HTTP API shows it unyanked")

print("all exchanges passed")
