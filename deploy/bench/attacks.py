#!/usr/bin/env python3
"""Hostile traffic against a release build, one attack class at a time.

For each attack it prints: requests sent, answers by status, the server's RSS
before / at its peak / after, the p99 of an innocent client's /healthz (wrk,
4 connections) during the attack (its quiet value for reference), and what
happened to an innocent account that publishes one new tool version and
makes one first-time resolve a few seconds into the attack. Targets, per
attack (issue 41): RSS growth <= 256 MiB, innocent /healthz p99 <= 100 ms,
zero 5xx, the innocent publish and resolve succeed; some attacks add checks
of their own (the log still serves, the victim can sign in). Not a test:
figures are printed, never asserted.

    deploy/bench/attacks.py                       # builds nothing; uses target/release
    deploy/bench/attacks.py --only batch-zeros,pii-quadratic
    deploy/bench/attacks.py --backend postgres    # PostgreSQL + files
    deploy/bench/attacks.py --markdown FILE       # also write the table as markdown

The registry runs with its default settings (rate limits on) on a fresh data
folder; every attack gets a fresh server, so one attack's leftovers do not
count against the next. Standard library only, plus wrk (Debian), openssl
(signs the containers the attacks build themselves, since the CLI refuses
most of them) and the release binaries `agentlang-registry` and `agentlang`.
Attackers connect from their own loopback addresses (127.0.x.y), as a
crowd of clients would; the innocent client from 127.0.9.9.
"""

import argparse
import base64
import gzip
import hashlib
import http.client
import io
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import tomllib
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1024 * 1024
# An attack that drives the server past this is stopped (the server killed),
# so the bench cannot take the machine down with it.
RSS_KILL_KIB = 4 * 1024 * 1024
# The targets.
RSS_GROWTH_MIB = 256
HEALTHZ_P99_MS = 100
# Where the innocent client connects from: no attacker's budget is its own.
INNOCENT_SOURCE = "127.0.9.9"
# The innocent acts this long after the attack is under way.
INNOCENT_DELAY_S = 3
PASSWORD = "password-123"


def log(msg):
    print(f"[attacks {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    """One agentlang-registry process on a fresh data folder."""

    def __init__(self, binary, backend, work, extra_env=None):
        self.dir = tempfile.mkdtemp(prefix="attack-", dir=work)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "AGENTLANG_REGISTRY_BIND": "127.0.0.1:0",
            "AGENTLANG_REGISTRY_DATA_DIR": os.path.join(self.dir, "data"),
            "AGENTLANG_REGISTRY_LOG": "warn,agentlang_registry=info",
        }
        self.database = None
        if backend == "postgres":
            admin = os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres")
            self.database = f"attack_{os.getpid()}_{random.randrange(1 << 30)}"
            self.admin = admin
            subprocess.run(["psql", "-q", admin, "-c", f'CREATE DATABASE "{self.database}"'], check=True)
            base = admin.rsplit("/", 1)[0]
            env["AGENTLANG_REGISTRY_DATABASE_URL"] = f"{base}/{self.database}"
        env.update(extra_env or {})
        self.proc = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = None
        # Set once the attack is under way; the innocent client waits for it.
        self.ready = threading.Event()
        # (name, met) of the attack's own checks.
        self.checks = []
        deadline = time.time() + 60
        for line in self.proc.stderr:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if time.time() > deadline:
                break
        if self.port is None:
            raise SystemExit("the registry did not start")
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(200):
            try:
                if request(self.port, "GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)

    def _drain(self):
        # The last warnings and errors, printed when an attack got a 5xx.
        self.warnings = []
        for line in self.proc.stderr:
            if "WARN" in line or "ERROR" in line:
                self.warnings = (self.warnings + [line.rstrip()])[-20:]

    def alive(self):
        return self.proc.poll() is None

    def check(self, name, met):
        self.checks.append((name, bool(met)))

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        if self.database:
            subprocess.run(["psql", "-q", self.admin, "-c", f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)'],
                           check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)


def request(port, method, path, body=None, headers=None, timeout=120, source=None):
    """One request on its own connection: (status, body bytes); status 0 when
    the connection failed or timed out."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        res = conn.getresponse()
        return res.status, res.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


def timed(fn, *args, **kwargs):
    """(fn's result, seconds it took)."""
    started = time.time()
    result = fn(*args, **kwargs)
    return result, time.time() - started


class Session:
    """One keep-alive connection from one address, opened again after a
    failure: for loops of many small requests."""

    def __init__(self, port, source=None, timeout=60):
        self.port, self.source, self.timeout, self.conn = port, source, timeout, None

    def request(self, method, path, body=None, headers=None):
        for _ in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(
                    "127.0.0.1", self.port, timeout=self.timeout,
                    source_address=(self.source, 0) if self.source else None)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                res = self.conn.getresponse()
                data = res.read()
                if (res.getheader("connection") or "").lower() == "close":
                    self.close()
                return res.status, data
            except (OSError, http.client.HTTPException):
                # A keep-alive connection the server closed: once more on a
                # new one.
                self.close()
        return 0, b""

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def json_headers(token=None):
    headers = {"content-type": "application/json"}
    if token:
        headers["authorization"] = f"Bearer {token}"
    return headers


def account_token(port, username="mallory", scopes=("publish",), source=None):
    """An account and a token: what anyone can get on an open registry."""
    password = "password-" + username
    request(port, "POST", "/api/v1/accounts", json.dumps({"username": username, "password": password}),
            json_headers(), source=source)
    return sign_in(port, username, password, scopes, source=source)["token"]


def sign_in(port, username, password, scopes=("publish",), source=None):
    """A new token: the API's answer (token, id, ...)."""
    status, body = request(port, "POST", "/api/v1/tokens",
                           json.dumps({"username": username, "password": password, "name": "t",
                                       "scopes": list(scopes)}),
                           json_headers(), source=source)
    if status != 201:
        raise SystemExit(f"cannot get a token for {username}: {status} {body[:200]!r}")
    return json.loads(body)


def checkpoint_size(port):
    """The log's size as its checkpoint states it (line 2 of the note)."""
    status, note = request(port, "GET", "/log/checkpoint", timeout=30)
    if status != 200:
        return None
    return int(note.split(b"\n")[1])


def median_ms(seconds):
    return statistics.median(seconds) * 1000 if seconds else None


# --------------------------------------------------------------------------
# containers built here: the CLI refuses to build most of what the attacks
# send (that is the point), so they are packed and signed as the container
# format says (docs/container.md), with openssl for Ed25519.

def openssl(*argv):
    return subprocess.run(["openssl", *argv], capture_output=True, check=True).stdout


class Key:
    """An Ed25519 signing key in a PEM file."""

    def __init__(self, folder):
        fd, self.path = tempfile.mkstemp(prefix="key-", suffix=".pem", dir=folder)
        os.close(fd)
        openssl("genpkey", "-algorithm", "ed25519", "-out", self.path)
        self.public_pem = openssl("pkey", "-in", self.path, "-pubout").decode()
        raw = openssl("pkey", "-in", self.path, "-pubout", "-outform", "DER")[-32:]
        self.key_id = hashlib.sha256(raw).hexdigest()

    def sign(self, message):
        with tempfile.NamedTemporaryFile(dir=os.path.dirname(self.path)) as f:
            f.write(message)
            f.flush()
            return openssl("pkeyutl", "-sign", "-inkey", self.path, "-rawin", "-in", f.name)


def container(kind, name, version, members, key):
    """A signed container of `members` (path: bytes), as `agentlang build`
    packs one: manifest.json (pretty JSON, files sorted), signature.sig over
    its exact bytes, ustar entries in path order, gzip."""
    files = [{"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
             for path, data in sorted(members.items())]
    manifest = {"format": "agentlang.container/1", "kind": kind, "name": name, "version": version,
                "created": "2026-01-01T00:00:00Z", "signer": key.key_id, "files": files}
    manifest_bytes = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()
    entries = dict(members, **{"manifest.json": manifest_bytes, "signature.sig": key.sign(manifest_bytes)})
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path in sorted(entries):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(entries[path]), 0o644, 0
            tar.addfile(info, io.BytesIO(entries[path]))
    return gzip.compress(raw.getvalue(), 9, mtime=0)


def tool_yaml(name, version, extra=""):
    return (f"name: {name}\nversion: {version}\ndescription: A small tool for the attack bench.\n"
            f"kind: builtin\nreadme: README.md\ninput_schema:\n  type: object\n{extra}")


class Publisher:
    """A throwaway account made over the API from its own address: account,
    token (publish, yank, keys, tokens) and a registered signing key."""

    def __init__(self, server, username, source):
        self.server, self.username, self.source = server, username, source
        self.password = "password-" + username
        self.token = account_token(server.port, username, ("publish", "yank", "keys", "tokens"), source=source)
        self.key = Key(server.dir)
        text = f"agentlang-key-registration:{username}:{self.key.key_id}"
        for _ in range(2):
            proof = base64.b64encode(self.key.sign(text.encode())).decode()
            status, body = request(server.port, "POST", "/api/v1/keys",
                                   json.dumps({"public_key_pem": self.key.public_pem, "proof": proof}),
                                   json_headers(self.token), source=source)
            # A refused proof names the text to sign (which may name the
            # registry's origin too): signed once more as told.
            told = re.search(r'sign the text "([^"]+)"', body.decode(errors="replace").replace('\\"', '"'))
            if status != 422 or not told:
                break
            text = told.group(1)
        if status != 201:
            raise SystemExit(f"cannot register {username}'s key: {status} {body[:300]!r}")

    def tool(self, name, version, extra=""):
        return container("tool", name, version,
                         {"tool.yaml": tool_yaml(name, version, extra).encode(), "README.md": b"# tool\n"},
                         self.key)

    def publish(self, body, timeout=120):
        """(status, body) of one upload."""
        headers = {"authorization": f"Bearer {self.token}", "content-type": "application/octet-stream"}
        return request(self.server.port, "POST", "/api/v1/publish", body, headers, timeout=timeout,
                       source=self.source)

    def publish_all(self, bodies):
        """Publishes each in turn; stops the bench at the first refusal
        (this is set-up, not the attack)."""
        for body in bodies:
            status, answer = self.publish(body)
            if status not in (200, 201):
                raise SystemExit(f"set-up publish by {self.username} refused: {status} {answer[:300]!r}")


class CLI:
    """The real `agentlang`, with a config folder of its own per user."""

    def __init__(self, binary, server, name):
        self.binary, self.server = binary, server
        self.config = os.path.join(server.dir, f"{name}-config")
        self.env = dict(os.environ, AGENTLANG_CONFIG_DIR=self.config, AGENTLANG_REGISTRY=server.url)

    def attempt(self, *argv, stdin=""):
        """(exit code, stdout, stderr)."""
        out = subprocess.run([self.binary, *argv], env=self.env, input=stdin, capture_output=True, text=True,
                             cwd=self.server.dir)
        return out.returncode, out.stdout, out.stderr

    def run(self, *argv, stdin=""):
        """Set-up only (never an attack's or the innocent's measured
        request): waits out the registry's rate limits as a 429 says."""
        for _ in range(120):
            code, out, err = self.attempt(*argv, stdin=stdin)
            if code == 0:
                return out
            wait = re.search(r"retry in (\d+) s \(429\)", err)
            if not wait:
                break
            time.sleep(int(wait.group(1)))
        raise SystemExit(f"agentlang {' '.join(argv)} failed: {err.strip()}")

    def sign_up(self, user):
        self.run("register", "--username", user, "--password-stdin", stdin=PASSWORD + "\n")
        self.run("login", "--username", user, "--password-stdin", stdin=PASSWORD + "\n")
        self.run("keygen")
        self.run("keys", "register", os.path.join(self.config, "signing.pem.pub"))

    def token(self):
        with open(os.path.join(self.config, "credentials.toml"), "rb") as f:
            registries = tomllib.load(f)["registries"]
        return next(iter(registries.values()))["token"]


def tool_dir(server, name, version="1.0.0"):
    d = os.path.join(server.dir, f"src-{name}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "tool.yaml"), "w") as f:
        f.write(tool_yaml(name, version))
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write(f"# {name}\n")
    return d


def seed_tools(server, args, count=60):
    """Publishes `count` small tools with the real CLI (once per server)."""
    if getattr(server, "seeded", False):
        return
    server.seeded = True
    cli = CLI(args.cli, server, "seeder")
    cli.sign_up("seeder")
    for i in range(count):
        d = os.path.join(server.dir, f"tool{i}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "tool.yaml"), "w") as f:
            f.write(f"name: tool{i}\nversion: 1.0.0\ndescription: Tool number {i} for the search flood.\n"
                    "kind: builtin\nreadme: README.md\ninput_schema:\n  type: object\n")
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(f"# tool{i}\n")
        cli.run("publish", d)


# --------------------------------------------------------------------------
# measuring

class Sampler(threading.Thread):
    """VmRSS every 50 ms; kills the server past RSS_KILL_KIB."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.peak, self.stopped, self.killed = server, 0, False, False

    def run(self):
        while not self.stopped and self.server.alive():
            rss = rss_kib(self.server.proc.pid)
            self.peak = max(self.peak, rss)
            if rss > RSS_KILL_KIB:
                self.killed = True
                self.server.proc.send_signal(signal.SIGKILL)
                return
            time.sleep(0.05)


def wrk_p99(url, seconds, extra=()):
    """The p99 latency (ms) of an innocent /healthz client: wrk, 1 thread, 4
    connections. None when wrk reports nothing."""
    out = subprocess.run(["wrk", "-t1", "-c4", f"-d{seconds}s", "--latency", "--timeout", "10s", *extra, url],
                         capture_output=True, text=True).stdout
    m = re.search(r"^\s*99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    if not m:
        return None
    value, unit = float(m.group(1)), m.group(2)
    return value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


class InnocentHealth(threading.Thread):
    """wrk on /healthz from the moment the attack is under way."""

    def __init__(self, server, seconds):
        super().__init__(daemon=True)
        self.server, self.seconds, self.p99 = server, seconds, None

    def run(self):
        self.server.ready.wait(180)
        self.p99 = wrk_p99(f"{self.server.url}/healthz", self.seconds)


class InnocentAccount(threading.Thread):
    """An account made before the attack with the real CLI (register, login,
    keygen, keys register), holding a published tool nobody has resolved
    (`innocent_seen`) and a built, unpublished one (`innocent_fresh`). A few
    seconds into the attack it publishes `innocent_fresh` and resolves
    `innocent_seen` for the first time, from its own address."""

    def __init__(self, server, args):
        super().__init__(daemon=True)
        self.server = server
        cli = CLI(args.cli, server, "innocent")
        cli.sign_up("innocent")
        cli.run("publish", tool_dir(server, "innocent_seen"))
        self.container_path = os.path.join(server.dir, "innocent_fresh.tool")
        cli.run("build", tool_dir(server, "innocent_fresh"), "--output", self.container_path)
        self.token = cli.token()
        self.publish = self.resolve = None

    def run(self):
        self.server.ready.wait(180)
        time.sleep(INNOCENT_DELAY_S)
        with open(self.container_path, "rb") as f:
            body = f.read()
        headers = {"authorization": f"Bearer {self.token}", "content-type": "application/octet-stream"}
        (status, _), took = timed(request, self.server.port, "POST", "/api/v1/publish", body, headers,
                                  timeout=90, source=INNOCENT_SOURCE)
        self.publish = (status, took)
        resolve = json.dumps({"tools": {"innocent_seen": "^1.0.0"}})
        (status, _), took = timed(request, self.server.port, "POST", "/api/v1/resolve", resolve, json_headers(),
                                  timeout=90, source=INNOCENT_SOURCE)
        self.resolve = (status, took)

    def succeeded(self):
        return (self.publish is not None and self.publish[0] in (200, 201)
                and self.resolve is not None and self.resolve[0] == 200)


def parallel(n, fn):
    """Runs fn(i) on n threads; returns their results."""
    results = [None] * n

    def run(i):
        results[i] = fn(i)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def wrk_statuses(url, seconds, conns, headers=(), lua=None):
    """Floods with wrk; (requests, Counter of statuses) from a Lua summary."""
    # wrk runs response() in each thread's own Lua state; done() gathers the
    # threads' tables.
    script = (lua or "") + """
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) statuses = {} end
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get("statuses")) do total[k] = (total[k] or 0) + v end
  end
  for k, v in pairs(total) do io.write(string.format("status %d %d\\n", k, v)) end
end
"""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
        path = f.name
    args = ["wrk", "-t2", f"-c{conns}", f"-d{seconds}s", "--timeout", "10s", "-s", path]
    for h in headers:
        args += ["-H", h]
    out = subprocess.run(args + [url], capture_output=True, text=True).stdout
    os.unlink(path)
    counts = Counter()
    for s, n in re.findall(r"^status (\d+) (\d+)$", out, re.M):
        counts[int(s)] += int(n)
    timeouts = re.search(r"timeout (\d+)", out)
    if timeouts and int(timeouts.group(1)):
        counts[0] += int(timeouts.group(1))
    return sum(counts.values()), counts


def in_rounds(args, round_fn):
    """Runs round_fn again and again for the innocent's window, so the
    innocent meets the attack however fast the server answers one round;
    the number of rounds."""
    end = time.time() + args.innocent_seconds
    rounds = 0
    while time.time() < end:
        round_fn()
        rounds += 1
    return rounds


def read_answers(socks, statuses):
    """What each held connection got: a status line, a close, or nothing
    yet ('still held'); closes them all."""
    for s in socks:
        if s is None:
            continue
        try:
            s.setblocking(False)
            data = s.recv(4096)
            m = re.match(rb"HTTP/1\.1 (\d+)", data)
            statuses[int(m.group(1)) if m else "closed"] += 1
        except BlockingIOError:
            statuses["still held"] += 1
        except OSError:
            statuses["closed"] += 1
        s.close()


# --------------------------------------------------------------------------
# the attacks: each returns (requests sent, Counter of statuses, note)

def zeros_body(server, args):
    """Builds the batch before the measured window: building it takes the
    bench's own CPU, which would count against the innocent client."""
    server.zeros = b"[" + b",".join([b"0"] * 5_200_000) + b"]"


def batch_zeros(server, args):
    """One anonymous MoltSpeak batch of 5.2 million items (10.4 MB)."""
    body = server.zeros
    results = parallel(2, lambda _: request(server.port, "POST", "/moltspeak/v0.1/batch", body,
                                           {"content-type": "application/json"}, timeout=90)[0])
    return len(results), Counter(results), f"{len(body) / 1e6:.1f} MB each, 2 at once"


def pii_quadratic(server, args):
    """MoltSpeak messages whose payload holds 144,000 email addresses (1 MB)."""
    text = " ".join(["a@b.cc"] * 144_000)
    message = {"v": "0.1", "id": "m1", "ts": int(time.time() * 1000), "op": "query",
               "from": {"agent": "x"}, "to": {"agent": "agentlang-registry"},
               "p": {"domain": "registry", "intent": "search", "params": {"q": text}}, "cls": "pub"}
    body = json.dumps(message).encode()
    results = parallel(4, lambda _: request(server.port, "POST", "/moltspeak/v0.1/message", body,
                                           {"content-type": "application/json"}, timeout=90)[0])
    return len(results), Counter(results), f"{len(body) / 1e6:.2f} MB each, 4 at once"


def resolve_models(server, args):
    """POST /api/v1/resolve naming 90,000 models (0.8 MB)."""
    body = json.dumps({"tools": {}, "models": [f"m{i}" for i in range(90_000)]}).encode()
    results = parallel(8, lambda _: request(server.port, "POST", "/api/v1/resolve", body,
                                           {"content-type": "application/json"}, timeout=90)[0])
    return len(results), Counter(results), f"{len(body) / 1e6:.2f} MB each, 8 at once"


def kept_members_container(members=200, member_bytes=MIB):
    """A container (never valid: no manifest) of top-level YAML members the
    reader keeps in memory, compressing at about 20:1 (a repeated block with
    a little noise every 256 bytes), so the 100:1 ratio limit does not stop
    it."""
    rng = random.Random(7)
    letters = bytes(range(97, 123)) * 10
    block = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz \n") for _ in range(20 * 1024))
    base = (block * (member_bytes // len(block) + 1))[:member_bytes]
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for i in range(members):
            data = bytearray(base)
            noise = rng.randbytes(8 * (member_bytes // 256 + 1)).translate(letters[:256])
            for j, k in enumerate(range(0, member_bytes, 256)):
                data[k:k + 8] = noise[8 * j:8 * j + 8]
            info = tarfile.TarInfo(f"m{i:04}.yaml")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(bytes(data)))
    return gzip.compress(raw.getvalue(), 6)


def upload_kept_members(server, args):
    """Publishes (any account's token) of containers holding 200 MiB of
    top-level YAML members, 8 at once."""
    token = account_token(server.port)
    body = kept_members_container()
    headers = {"authorization": f"Bearer {token}", "content-type": "application/octet-stream"}
    results = parallel(8, lambda _: request(server.port, "POST", "/api/v1/publish", body, headers, timeout=120)[0])
    return len(results), Counter(results), f"{len(body) / MIB:.1f} MiB compressed, 200 MiB kept each, 8 at once"


def slow_bodies(server, args):
    """Connections that declare a body and send one byte every 5 s: 150
    anonymous resolves and 50 publishes. Counts how many the server had
    closed after 45 s."""
    token = account_token(server.port)
    socks = []
    for i in range(200):
        s = socket.create_connection(("127.0.0.1", server.port))
        if i < 150:
            head = "POST /api/v1/resolve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        else:
            head = (f"POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                    "Content-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n")
        s.sendall(head.encode())
        s.setblocking(False)
        socks.append(s)
    statuses = Counter()
    closed = [False] * len(socks)
    end = time.time() + 45
    while time.time() < end:
        for i, s in enumerate(socks):
            if closed[i]:
                continue
            try:
                data = s.recv(4096)
                if data == b"":
                    closed[i] = True
                    statuses["closed"] += 1
                    continue
                m = re.match(rb"HTTP/1\.1 (\d+)", data)
                if m:
                    statuses[int(m.group(1))] += 1
                    closed[i] = True
                    continue
            except BlockingIOError:
                pass
            except OSError:
                closed[i] = True
                statuses["closed"] += 1
                continue
            try:
                s.send(b"{" if i < 150 else b"\x1f")
            except OSError:
                closed[i] = True
                statuses["closed"] += 1
        time.sleep(5)
    held = closed.count(False)
    for s in socks:
        s.close()
    statuses["still held"] += held
    return len(socks), statuses, "1 byte / 5 s; 'still held' = open after 45 s"


def garbage_auth(server, args):
    """GET /api/v1/models with a garbage bearer token, 10 s of wrk."""
    n, counts = wrk_statuses(f"{server.url}/api/v1/models", 10, 32, ["Authorization: Bearer garbage"])
    return n, counts, "wrk -c32 10 s"


def search_flood(server, args):
    """The catalog's and the API's search, 5 s of wrk each, anonymous."""
    n1, c1 = wrk_statuses(f"{server.url}/search?q=tool", 5, 32)
    n2, c2 = wrk_statuses(f"{server.url}/api/v1/search?q=tool", 5, 32)
    return n1 + n2, c1 + c2, "wrk -c32, 5 s /search + 5 s /api/v1/search"


def resolve_flood(server, args):
    """Distinct resolves of 200 unknown tool names each, 10 s of wrk."""
    lua = """
counter = 0
request = function()
  counter = counter + 1
  local tools = {}
  for i = 1, 200 do tools[#tools + 1] = string.format('"t%d_%d": null', counter, i) end
  local body = '{"tools": {' .. table.concat(tools, ",") .. '}}'
  return wrk.format("POST", "/api/v1/resolve", {["Content-Type"] = "application/json"}, body)
end
"""
    n, counts = wrk_statuses(f"{server.url}/api/v1/resolve", 10, 32, lua=lua)
    return n, counts, "wrk -c32 10 s, 200 unknown tools each"


def login_spray(server, args):
    """Token requests for random unknown usernames from 250 loopback
    addresses (127.0.1.x): each address within its own limit."""
    sources = [f"127.0.1.{i}" for i in range(1, 251)]
    end = time.time() + 10
    statuses = Counter()
    lock = threading.Lock()

    def worker(i):
        rng = random.Random(i)
        while time.time() < end:
            user = "u" + "".join(rng.choice("abcdefghijklmnop") for _ in range(12))
            body = json.dumps({"username": user, "password": "password-123", "name": "t", "scopes": []})
            status = request(server.port, "POST", "/api/v1/tokens", body,
                             {"content-type": "application/json"}, timeout=30,
                             source=sources[rng.randrange(len(sources))])[0]
            with lock:
                statuses[status] += 1

    parallel(16, worker)
    return sum(statuses.values()), statuses, "16 clients, 10 s, 250 source addresses"


def publish_big_tools(server, args):
    """Four versions of a tool whose containers hold 16 MiB each."""
    cli = CLI(args.cli, server, "bigpublisher")
    cli.sign_up("bigpublisher")
    d = os.path.join(server.dir, "bigtool")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("# bigtool\n")
    with open(os.path.join(d, "data.bin"), "wb") as f:
        f.write(os.urandom(16 * MIB))
    for i in range(4):
        with open(os.path.join(d, "tool.yaml"), "w") as f:
            f.write(f"name: bigtool\nversion: 1.0.{i}\ndescription: A big tool.\nkind: builtin\n"
                    "readme: README.md\ninput_schema:\n  type: object\n")
        cli.run("publish", d)


def version_pages(server, args):
    """First views of the pages of 4 tool versions whose containers hold
    16 MiB each (the page shows the container's metadata), 4 at once."""
    results = parallel(4, lambda i: request(server.port, "GET", f"/tools/bigtool/1.0.{i}", timeout=60)[0])
    return len(results), Counter(results), "4 versions of a 16 MiB container, first views"


def download_flood(server, args):
    """Downloads of one small tool, 10 s of wrk (each counted)."""
    n, counts = wrk_statuses(f"{server.url}/api/v1/tools/tool0/1.0.0/download", 10, 32)
    return n, counts, "wrk -c32 10 s"


def prepare_log_poison(server, args):
    server.poisoner = Publisher(server, "poisoner", "127.0.2.1")
    server.poison = server.poisoner.tool("x", "1.0.0+" + "a" * 70_000)


def log_poison(server, args):
    """Publishes x@1.0.0+<70,000 characters of build metadata> (a throwaway
    account), then reads the log's first entry bundle and runs `agentlang
    log verify`."""
    status, _ = server.poisoner.publish(server.poison)
    # The checkpoint moves within seconds of a change.
    time.sleep(4)
    size = checkpoint_size(server.port)
    tile = None
    if size:
        path = "entries/000" if size >= 256 else f"entries/000.p/{size}"
        tile = request(server.port, "GET", f"/log/tile/{path}", timeout=30)[0]
    code, _, err = CLI(args.cli, server, "auditor").attempt("log", "verify", "--registry", server.url)
    server.check("publish refused", 400 <= status < 500)
    server.check("log serves", tile == 200 and code == 0)
    verdict = "ok" if code == 0 else "FAILED: " + (err.strip().splitlines() or ["?"])[-1][:120]
    return 1, Counter([status]), (f"{len(server.poison)} B compressed; checkpoint size {size}, "
                                  f"first entry bundle {tile}, log verify {verdict}")


def batch_hold(server, args):
    """150 anonymous connections from one address, each sending a MoltSpeak
    batch body of 10 MiB - 1 byte and waiting without the last byte."""
    n, size = 150, 10 * MIB
    # The missing last byte would close the array.
    body = memoryview(b"[" + b" " * (size - 2))
    head = (f"POST /moltspeak/v0.1/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    socks = [None] * n
    sending = Counter()

    def send(i):
        try:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=20, source_address=("127.0.6.1", 0))
        except OSError:
            sending["connect failed"] += 1
            return
        socks[i] = s
        try:
            s.sendall(head)
            # A chunk that cannot leave within the timeout: the server
            # stopped reading (the timeout bounds a whole sendall).
            for at in range(0, len(body), MIB):
                s.sendall(body[at:at + MIB])
            sending["all but the last byte sent"] += 1
        except socket.timeout:
            sending["server stopped reading"] += 1
        except OSError:
            sending["closed while sending"] += 1

    parallel(n, send)
    server.ready.set()
    # Held past the innocent's window and past a 30 s idle deadline.
    time.sleep(max(args.innocent_seconds + INNOCENT_DELAY_S + 2, 35))
    statuses = Counter()
    read_answers(socks, statuses)
    return n, statuses, "10 MiB - 1 each, 150 from 127.0.6.1; " + ", ".join(f"{k}: {v}" for k, v in sending.items())


def replay_diagnostics(server, args):
    """32 parallel uploads to the catalog's replay page of an events file of
    bad lines, as large as the page takes (1 MiB of `{` lines), in rounds
    for the innocent's window."""
    events = b"{\n" * (MIB // 2)
    boundary = "attackboundary7d3f"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"events\"; filename=\"events.jsonl\"\r\n"
            "Content-Type: application/x-ndjson\r\n\r\n").encode() + events + f"\r\n--{boundary}--\r\n".encode()
    headers = {"content-type": f"multipart/form-data; boundary={boundary}"}
    statuses = Counter()
    rounds = in_rounds(args, lambda: statuses.update(
        parallel(32, lambda _: request(server.port, "POST", "/replay", body, headers, timeout=120)[0])))
    return sum(statuses.values()), statuses, (f"{len(events) // 2} bad lines ({len(events) / MIB:.0f} MiB) "
                                              f"each, 32 at once, {rounds} rounds in {args.innocent_seconds} s")


def snake_words(count):
    """`count` distinct snake_case words, shortest first (`a_a`, `a_b`, ...)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    words, length = [], 3
    while len(words) < count:
        # first letter, `_`, then letters and digits
        for first in alphabet[:26]:
            for n in range(36 ** (length - 2)):
                rest = ""
                for _ in range(length - 2):
                    n, d = divmod(n, 36)
                    rest += alphabet[d]
                words.append(f"{first}_{rest}")
                if len(words) == count:
                    return words
        length += 1
    return words


def prepare_quality_report(server, args):
    writer = Publisher(server, "wordsmith", "127.0.2.2")
    words = snake_words(110_000)
    lines = [" ".join(words[i:i + 16]) for i in range(0, len(words), 16)]
    prompt = ("version: 2\nrole: system\nsections:\n  - name: task\n    content: |\n"
              + "".join(f"      {line}\n" for line in lines))
    agent = ("name: wordy\nversion: 0.1.0\ntitle: Wordy\n"
             "description: Wordy answers questions about one subject, briefly and with sources.\n"
             "category: Productivity\nmodels:\n  claude-sonnet-4:\n    provider: anthropic\n")
    members = {"agent.yaml": agent.encode(), "prompt.yaml": prompt.encode(), "README.md": b"# Wordy\n"}
    server.wordy = (writer, container("agent", "wordy", "0.1.0", members, writer.key), len(prompt))


def quality_report(server, args):
    """Publishes an agent whose prompt names 110,000 distinct snake_case
    words (plaintext prompt), then 20 anonymous views of its page at once,
    in rounds for the innocent's window."""
    writer, body, prompt_bytes = server.wordy
    status, answer = writer.publish(body)
    statuses = Counter([status])
    if status not in (200, 201):
        log(f"quality-report: publish answered {status} {answer[:200]!r}")
    biggest = 0

    def views():
        nonlocal biggest
        pages = parallel(20, lambda _: request(server.port, "GET", "/agents/wordy", timeout=120))
        statuses.update(s for s, _ in pages)
        biggest = max([biggest] + [len(b) for _, b in pages])

    rounds = in_rounds(args, views)
    return sum(statuses.values()), statuses, (
        f"prompt {prompt_bytes / 1024:.0f} KiB ({len(body) / 1024:.0f} KiB container), publish {status}, "
        f"20 views at once, {rounds} rounds in {args.innocent_seconds} s, largest page {biggest / 1024:.0f} KiB")


def prepare_upload_slots(server, args):
    server.tricklers = [Publisher(server, f"trickler{i}", f"127.0.3.{i + 1}") for i in range(8)]


def upload_slots(server, args):
    """8 throwaway accounts (each its own address) x 4 uploads, each
    trickling one byte every 20 s (never 30 s silent) for 60 s."""
    socks = []
    for i, pub in enumerate(server.tricklers):
        body = pub.tool(f"trickle{i}", "1.0.0")
        head = (f"POST /api/v1/publish HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {pub.token}\r\n"
                f"Content-Type: application/octet-stream\r\nContent-Length: {len(body)}\r\n\r\n").encode()
        for _ in range(4):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10, source_address=(pub.source, 0))
            s.sendall(head + body[:1])
            socks.append((s, body))
    server.ready.set()
    sent_bytes = 1
    end = time.time() + 60
    while time.time() < end:
        time.sleep(min(20, max(0, end - time.time())))
        if time.time() >= end:
            break
        for s, body in socks:
            try:
                s.send(body[sent_bytes:sent_bytes + 1])
            except OSError:
                pass
        sent_bytes += 1
    statuses = Counter()
    read_answers([s for s, _ in socks], statuses)
    return len(socks), statuses, "8 accounts x 4, 1 byte / 20 s for 60 s"


def prepare_schema_regexes(server, args):
    server.regex_publishers = [Publisher(server, f"patterns{i}", f"127.0.7.{i + 1}") for i in range(8)]
    lines = "".join(f"    '^\\w{{1,24}}_{i:05d}$': {{type: string}}\n" for i in range(20_000))
    server.regex_tools = []
    for i, pub in enumerate(server.regex_publishers):
        name = f"patterns{i}"
        yaml = tool_yaml(name, "1.0.0").replace("  type: object\n", "  type: object\n  patternProperties:\n" + lines)
        server.regex_tools.append(container("tool", name, "1.0.0",
                                            {"tool.yaml": yaml.encode(), "README.md": b"# patterns\n"}, pub.key))
    server.regex_yaml_bytes = len(yaml)


def schema_regexes(server, args):
    """8 concurrent publishes (8 accounts) of a tool.yaml whose input schema
    holds 20,000 `patternProperties` regexes."""
    results = parallel(8, lambda i: server.regex_publishers[i].publish(server.regex_tools[i])[0])
    size = len(server.regex_tools[0])
    return len(results), Counter(results), (f"tool.yaml {server.regex_yaml_bytes / 1024:.0f} KiB "
                                            f"({size / 1024:.0f} KiB compressed), 8 at once")


PIGEON_HOLES = 9


def prepare_pigeonhole(server, args):
    """Holes first (pigeons depend on them), each publisher its share."""
    n = PIGEON_HOLES
    pubs = [Publisher(server, f"pigeons{i}", f"127.0.2.{11 + i}") for i in range(4)]
    holes = [[] for _ in pubs]
    for j in range(n):
        for p in range(n + 1):
            holes[j % 4].append(pubs[j % 4].tool(f"hole{j}", f"1.0.{p}"))
    parallel(4, lambda i: pubs[i].publish_all(holes[i]))
    pigeons = [[] for _ in pubs]
    for p in range(n + 1):
        for j in range(n):
            pigeons[p % 4].append(pubs[p % 4].tool(f"pigeon{p}", f"1.0.{j}",
                                                   f"dependencies:\n  hole{j}: \"=1.0.{p}\"\n"))
    parallel(4, lambda i: pubs[i].publish_all(pigeons[i]))


def pigeonhole(server, args):
    """Resolves needing all n+1 pigeons (each version of a pigeon needs a
    different one of n holes, each hole version names one pigeon), 6 a
    second from 3 addresses for 20 s; textually distinct requests, so no
    cache answers them."""
    n = PIGEON_HOLES
    rate, seconds = 6, 20
    sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    results = []
    lock = threading.Lock()

    def attack(k):
        body = json.dumps({"tools": {f"pigeon{p}": f">=1.0.0, <{2 + k}.0.0" for p in range(n + 1)}})
        status = request(server.port, "POST", "/api/v1/resolve", body, json_headers(), timeout=90,
                         source=sources[k % len(sources)])[0]
        with lock:
            results.append(status)

    innocent = []

    def innocent_resolves():
        # First-time, easy resolves (one pigeon each) from an innocent
        # address while the hard ones run.
        time.sleep(INNOCENT_DELAY_S)
        for p in range(n + 1):
            body = json.dumps({"tools": {f"pigeon{p}": None}})
            (status, _), took = timed(request, server.port, "POST", "/api/v1/resolve", body, json_headers(),
                                      timeout=90, source="127.0.9.8")
            innocent.append((status, took))
            time.sleep(1.5)

    threads = [threading.Thread(target=innocent_resolves, daemon=True)]
    threads[0].start()
    started = time.time()
    for k in range(rate * seconds):
        time.sleep(max(0, started + k / rate - time.time()))
        t = threading.Thread(target=attack, args=(k,), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    ok = [took for status, took in innocent if status == 200]
    med = median_ms([took for _, took in innocent])
    server.check("easy resolves fast", len(ok) == len(innocent) and med is not None and med <= HEALTHZ_P99_MS)
    return len(results), Counter(results), (
        f"{n + 1} pigeons x {n} versions + {n} holes x {n + 1} versions ({2 * n * (n + 1)} versions), "
        f"6/s from 3 addresses for 20 s; innocent one-pigeon resolves: "
        f"{Counter(s for s, _ in innocent)}, median {med:.0f} ms")


def open_files_worker(port, sources, count, path):
    """A child process (`--open-files-worker`) holding `count` slow-body
    connections: a process has its own open-files limit, so several of them
    can hold more connections than the server may open files."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 100000\r\n\r\n{").encode()
    socks, failures = [], 0
    for i in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2,
                                         source_address=(sources[i % len(sources)], 0))
            s.sendall(head)
            s.setblocking(False)
            socks.append(s)
        except OSError:
            # The server's accept queue is full: it has stopped accepting.
            failures += 1
            if failures >= 5:
                break
    print(json.dumps({"opened": len(socks), "failed": failures}), flush=True)
    # A byte now and then until told to stop (a line on stdin).
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
    while not stop.wait(10):
        for s in socks:
            try:
                s.send(b" ")
            except OSError:
                pass
    statuses = Counter()
    read_answers(socks, statuses)
    print(json.dumps({str(k): v for k, v in statuses.items()}), flush=True)


def open_files(server, args):
    """~20,000 slow-body connections (MoltSpeak messages that declare 100 kB
    and send a byte every 10 s) from 24 addresses, held by worker processes."""
    target = args.open_files
    sources = [f"127.0.0.{10 + i}" for i in range(24)]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    # Each worker stays well inside its own limit.
    per_worker = max(1000, min(8000, hard - 200))
    workers = []
    left = target
    while left > 0:
        n = min(per_worker, left)
        cmd = [sys.executable, os.path.abspath(__file__), "--open-files-worker",
               json.dumps({"port": server.port, "sources": sources, "count": n, "path": "/moltspeak/v0.1/message"})]
        workers.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        left -= n
    opened = failed = 0
    for w in workers:
        line = w.stdout.readline()
        report = json.loads(line) if line else {"opened": 0, "failed": 0}
        opened, failed = opened + report["opened"], failed + report["failed"]
    server.ready.set()
    limit = "?"
    try:
        with open(f"/proc/{server.proc.pid}/limits") as f:
            limit = re.search(r"Max open files\s+(\d+)", f.read()).group(1)
    except (OSError, AttributeError):
        pass
    time.sleep(args.innocent_seconds + INNOCENT_DELAY_S + 2)
    statuses = Counter()
    for w in workers:
        w.stdin.write("stop\n")
        w.stdin.flush()
        line = w.stdout.readline()
        w.wait()
        for k, v in (json.loads(line) if line else {}).items():
            statuses[int(k) if k.isdigit() else k] += v
    scaled = "" if opened >= 20_000 else " (scaled down from 20,000)"
    return opened, statuses, (f"{opened} connections opened{scaled} by {len(workers)} processes, "
                              f"{failed} failed to connect; server's open-files limit {limit}")


def lockout(server, args):
    """Wrong passwords for the innocent account from another address, 10 a
    minute (the first 10 at once); meanwhile its holder signs in, 3 times."""
    statuses = Counter()
    victim = []
    end = time.time() + 20

    def attacker():
        i = 0
        while time.time() < end:
            body = json.dumps({"username": "innocent", "password": f"wrong-guess-{i}", "name": "t", "scopes": []})
            statuses[request(server.port, "POST", "/api/v1/tokens", body, json_headers(), timeout=30,
                             source="127.0.5.1")[0]] += 1
            i += 1
            time.sleep(0.3 if i < 10 else 6)

    def holder():
        for _ in range(3):
            time.sleep(5)
            body = json.dumps({"username": "innocent", "password": PASSWORD, "name": "t", "scopes": []})
            (status, _), took = timed(request, server.port, "POST", "/api/v1/tokens", body, json_headers(),
                                      timeout=30, source=INNOCENT_SOURCE)
            victim.append((status, took))

    threads = [threading.Thread(target=attacker, daemon=True), threading.Thread(target=holder, daemon=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    server.check("holder signs in", victim and all(s == 201 for s, _ in victim))
    return sum(statuses.values()), statuses, (
        "from 127.0.5.1; the holder's sign-ins: " + ", ".join(f"{s} in {t * 1000:.0f} ms" for s, t in victim))


def password_queue(server, args):
    """Wrong passwords for random usernames from 120 addresses (240 at once,
    15 s); meanwhile the innocent account signs in 5 times."""
    sources = [f"127.0.1.{i}" for i in range(1, 121)]
    end = time.time() + 15
    statuses = Counter()
    lock = threading.Lock()
    signins = []

    def worker(i):
        rng = random.Random(i)
        while time.time() < end:
            user = "u" + "".join(rng.choice("abcdefghijklmnop") for _ in range(12))
            body = json.dumps({"username": user, "password": "password-wrong", "name": "t", "scopes": []})
            status = request(server.port, "POST", "/api/v1/tokens", body, json_headers(), timeout=30,
                             source=sources[i % len(sources)])[0]
            with lock:
                statuses[status] += 1

    def holder():
        for _ in range(5):
            time.sleep(2.5)
            body = json.dumps({"username": "innocent", "password": PASSWORD, "name": "t", "scopes": []})
            (status, _), took = timed(request, server.port, "POST", "/api/v1/tokens", body, json_headers(),
                                      timeout=30, source=INNOCENT_SOURCE)
            signins.append((status, took))

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    parallel(240, worker)
    t.join()
    server.check("holder signs in", signins and all(s == 201 for s, _ in signins))
    return sum(statuses.values()), statuses, (
        "240 clients on 120 addresses, 15 s; the holder's sign-ins: "
        + ", ".join(f"{s} in {t * 1000:.0f} ms" for s, t in signins))


def prepare_token_budgets(server, args):
    tokens = [account_token(server.port, "spender", ("tokens",), source="127.0.8.1")]
    tokens += [sign_in(server.port, "spender", "password-spender", ("tokens",), source="127.0.8.1")["token"]
               for _ in range(8)]
    revoked = sign_in(server.port, "spender", "password-spender", ("tokens",), source="127.0.8.1")
    status, body = request(server.port, "DELETE", f"/api/v1/tokens/{revoked['id']}", None,
                           json_headers(tokens[0]), source="127.0.8.1")
    if status not in (200, 204):
        raise SystemExit(f"cannot revoke a token: {status} {body[:200]!r}")
    server.budget_tokens, server.revoked_token = tokens[:9], revoked["token"]


def token_budgets(server, args):
    """9 tokens of one account searching at once for 10 s (each from its own
    address); then 200 requests for /api/v1/account with a revoked token."""
    statuses = Counter()
    lock = threading.Lock()
    end = time.time() + 10

    def searcher(i):
        session = Session(server.port, f"127.0.8.{i + 1}")
        while time.time() < end:
            status = session.request("GET", "/api/v1/search?q=tool", headers=json_headers(server.budget_tokens[i]))[0]
            with lock:
                statuses[status] += 1
        session.close()

    parallel(9, searcher)
    revoked = Counter()
    took = []
    session = Session(server.port, "127.0.8.20")
    for _ in range(200):
        # A route that needs a token: a public one reads a revoked token as
        # none and answers as to anyone.
        (status, _), t = timed(session.request, "GET", "/api/v1/account",
                               headers=json_headers(server.revoked_token))
        revoked[status] += 1
        took.append(t)
    session.close()
    # One budget: the expensive bucket's burst (120) and 10 s of refill.
    server.check("one budget", statuses[200] <= 120 + 20 + 10)
    server.check("revoked refused", not set(revoked) - {401, 429})
    return sum(statuses.values()) + 200, statuses + Counter({f"revoked {k}": v for k, v in revoked.items()}), (
        f"{statuses[200]} searches answered (one account budget: about 140 in 10 s); revoked token: "
        f"{dict(revoked)}, median {median_ms(took):.1f} ms")


def prepare_yank_loop(server, args):
    server.yanker = Publisher(server, "yanker", "127.0.8.30")
    server.yanker.publish_all([server.yanker.tool(name, "1.0.0") for name in ("yoyo", "bystander")])


def yank_loop(server, args):
    """Yank and unyank one version in a loop with one token for 10 s, while
    another package's page is read; log entries added and the page's time."""
    page = Session(server.port, "127.0.8.31")
    quiet = [timed(page.request, "GET", "/tools/bystander")[1] for _ in range(20)]
    before = checkpoint_size(server.port)
    statuses = Counter()
    end = time.time() + 10
    reads = []

    def reader():
        while time.time() < end:
            reads.append(timed(page.request, "GET", "/tools/bystander")[1])
            time.sleep(0.05)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    session = Session(server.port, server.yanker.source)
    headers = json_headers(server.yanker.token)
    while time.time() < end:
        statuses[session.request("POST", "/api/v1/tools/yoyo/1.0.0/yank", json.dumps({"reason": "loop"}),
                                 headers)[0]] += 1
        statuses[session.request("POST", "/api/v1/tools/yoyo/1.0.0/unyank", None, headers)[0]] += 1
    t.join()
    session.close()
    page.close()
    time.sleep(4)
    after = checkpoint_size(server.port)
    added = (after - before) if before is not None and after is not None else None
    return sum(statuses.values()), statuses, (
        f"log entries added: {added} ({added / 10:.0f}/s); bystander page median "
        f"{median_ms(quiet):.1f} ms quiet, {median_ms(reads):.1f} ms during the loop"
        if added is not None else "no checkpoint")


class Attack:
    """An attack, what it sets up outside the measured window, and whether
    it says itself when it is under way (`holds`: it opens what it holds
    first, and the innocent starts once it does)."""

    def __init__(self, fn, prepare=None, holds=False):
        self.fn, self.prepare, self.holds = fn, prepare, holds


ATTACKS = {
    "batch-zeros": Attack(batch_zeros, zeros_body),
    "pii-quadratic": Attack(pii_quadratic),
    "resolve-models": Attack(resolve_models),
    "upload-kept-members": Attack(upload_kept_members),
    "slow-bodies": Attack(slow_bodies),
    "garbage-auth": Attack(garbage_auth),
    "search-flood": Attack(search_flood, seed_tools),
    "resolve-flood": Attack(resolve_flood),
    "login-spray": Attack(login_spray),
    "version-pages": Attack(version_pages, publish_big_tools),
    "download-flood": Attack(download_flood, lambda server, args: seed_tools(server, args, count=1)),
    # Issue 41, "Hostile traffic, round two".
    "log-poison": Attack(log_poison, prepare_log_poison),
    "batch-hold": Attack(batch_hold, holds=True),
    "replay-diagnostics": Attack(replay_diagnostics),
    "quality-report": Attack(quality_report, prepare_quality_report),
    "upload-slots": Attack(upload_slots, prepare_upload_slots, holds=True),
    "schema-regexes": Attack(schema_regexes, prepare_schema_regexes),
    "pigeonhole": Attack(pigeonhole, prepare_pigeonhole),
    "open-files": Attack(open_files, holds=True),
    "lockout": Attack(lockout),
    "password-queue": Attack(password_queue),
    "token-budgets": Attack(token_budgets, prepare_token_budgets),
    "yank-loop": Attack(yank_loop, prepare_yank_loop),
}


def run_attack(name, attack, args):
    server = Server(args.binary, args.backend, args.work)
    try:
        innocent = InnocentAccount(server, args)
        if attack.prepare:
            attack.prepare(server, args)
        quiet = wrk_p99(f"{server.url}/healthz", 3)
        time.sleep(0.5)
        before = rss_kib(server.proc.pid)
        sampler = Sampler(server)
        sampler.start()
        # The innocent client runs from the moment the attack is under way
        # (its wrk for --innocent-seconds); attacks take 10-60 s.
        health = InnocentHealth(server, args.innocent_seconds)
        health.start()
        innocent.start()
        if not attack.holds:
            server.ready.set()
        started = time.time()
        try:
            sent, statuses, note = attack.fn(server, args)
        finally:
            server.ready.set()
        took = time.time() - started
        health.join()
        innocent.join()
        time.sleep(2)
        sampler.stopped = True
        sampler.join()
        after = rss_kib(server.proc.pid) if server.alive() else 0
        if any(isinstance(s, int) and s >= 500 for s in statuses):
            for line in getattr(server, "warnings", [])[-3:]:
                log(f"{name}: server said: {line[:400]}")
        return {
            "attack": name, "sent": sent, "statuses": statuses, "note": note, "seconds": took,
            "rss_before": before, "rss_peak": max(sampler.peak, before), "rss_after": after,
            "killed": sampler.killed or not server.alive(), "quiet_p99": quiet, "attack_p99": health.p99,
            "publish": innocent.publish, "resolve": innocent.resolve, "innocent_ok": innocent.succeeded(),
            "checks": server.checks,
        }
    finally:
        server.stop()


def failed_row(name, why):
    """A row for an attack the bench could not run (set-up refused, ...)."""
    return {
        "attack": name, "sent": 0, "statuses": Counter(), "note": f"bench error: {why}", "seconds": 0,
        "rss_before": 0, "rss_peak": 0, "rss_after": 0, "killed": False, "quiet_p99": None,
        "attack_p99": None, "publish": None, "resolve": None, "innocent_ok": False,
        "checks": [("ran", False)],
    }


def verdicts(row):
    growth = (row["rss_peak"] - row["rss_before"]) / 1024
    five = sum(n for s, n in row["statuses"].items() if isinstance(s, int) and s >= 500)
    return {
        "growth_mib": growth,
        "five_xx": five,
        "rss_ok": growth <= RSS_GROWTH_MIB and not row["killed"],
        "p99_ok": row["attack_p99"] is not None and row["attack_p99"] <= HEALTHZ_P99_MS,
        "five_ok": five == 0 and not row["killed"],
        "innocent_ok": row["innocent_ok"],
    }


def met_text(row, v):
    parts = [("RSS", v["rss_ok"]), ("p99", v["p99_ok"]), ("5xx", v["five_ok"]), ("innocent", v["innocent_ok"])]
    parts += row["checks"]
    return ", ".join(f"{name} " + ("met" if ok else "NOT met") for name, ok in parts)


def all_met(row):
    v = verdicts(row)
    return all(v[k] for k in ("rss_ok", "p99_ok", "five_ok", "innocent_ok")) and all(ok for _, ok in row["checks"])


def table(rows):
    head = ("| attack | sent | answers | RSS before / peak / after (MiB) | growth | "
            "/healthz p99 quiet / attack (ms) | innocent publish / resolve | 5xx | met | note |")
    lines = [head, "|" + "---|" * 10]
    for row in rows:
        v = verdicts(row)
        answers = ", ".join(f"{s}: {n}" for s, n in sorted(row["statuses"].items(), key=lambda kv: str(kv[0])))
        fmt = lambda x: f"{x:.1f}" if x is not None else "none"
        act = lambda a: "none" if a is None else f"{a[0] or 'no answer'} in {a[1] * 1000:.0f} ms"
        killed = " (server killed past 4 GiB)" if row["killed"] else ""
        lines.append(
            f"| {row['attack']} | {row['sent']} | {answers}{killed} | "
            f"{row['rss_before'] // 1024} / {row['rss_peak'] // 1024} / {row['rss_after'] // 1024} | "
            f"{v['growth_mib']:.0f} MiB | {fmt(row['quiet_p99'])} / {fmt(row['attack_p99'])} | "
            f"{act(row['publish'])} / {act(row['resolve'])} | {v['five_xx']} | {met_text(row, v)} | "
            f"{row['note']} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/release/agentlang-registry"))
    parser.add_argument("--cli", default=os.path.join(ROOT, "target/release/agentlang"))
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--only", default="", help="comma-separated attack names")
    parser.add_argument("--work", default="/tmp/agentlang-attacks")
    parser.add_argument("--innocent-seconds", type=int, default=20)
    parser.add_argument("--open-files", type=int, default=20_000, help="connections open-files holds")
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args()
    for tool in ("wrk", "openssl"):
        if not shutil.which(tool):
            raise SystemExit(f"attacks: {tool} is required (apt-get install {tool})")
    for binary in (args.binary, args.cli):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"attacks: {binary} is missing (cargo build --release -p agentlang-registry -p agentlang)")
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    unknown = [n for n in names if n not in ATTACKS]
    if unknown:
        raise SystemExit(f"attacks: no attack named {', '.join(unknown)}; known: {', '.join(ATTACKS)}")
    os.makedirs(args.work, exist_ok=True)
    # Servers inherit this; the open-files attack's workers raise their own.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    began = time.time()
    for name in names:
        attack = ATTACKS[name]
        log(f"{name}: {attack.fn.__doc__.strip().splitlines()[0]}")
        try:
            row = run_attack(name, attack, args)
        except (Exception, SystemExit) as e:
            log(f"{name}: the bench could not run it: {e}")
            row = failed_row(name, str(e)[:200])
        v = verdicts(row)
        log(f"{name}: {row['sent']} sent, {dict(row['statuses'])}, RSS +{v['growth_mib']:.0f} MiB, "
            f"p99 {row['quiet_p99']} -> {row['attack_p99']} ms, innocent {row['publish']} {row['resolve']}, "
            f"{row['seconds']:.0f} s; {met_text(row, v)}; {row['note']}")
        rows.append(row)
    out = table(rows)
    met = sum(1 for row in rows if all_met(row))
    header = (f"Attacks on {args.backend}, release build, default settings "
              f"({time.strftime('%Y-%m-%d')}, `deploy/bench/attacks.py --backend {args.backend}`, "
              f"{(time.time() - began) / 60:.0f} min): every target met by {met} of {len(rows)}\n\n")
    print(header + out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + out + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--open-files-worker":
        spec = json.loads(sys.argv[2])
        open_files_worker(spec["port"], spec["sources"], spec["count"], spec["path"])
    else:
        main()
