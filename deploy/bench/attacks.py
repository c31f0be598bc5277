#!/usr/bin/env python3
"""Hostile traffic against a release build, one attack class at a time.

For each attack it prints: requests sent, answers by status, the server's RSS
before / at its peak / after, and the p99 of an innocent client's /healthz
(wrk, 4 connections) during the attack against its quiet value. Targets
printed as met or not, per attack: RSS growth <= 64 MiB, innocent p99 <= 5x
quiet, zero 5xx. Not a test: figures are printed, never asserted.

    deploy/bench/attacks.py                       # builds nothing; uses target/release
    deploy/bench/attacks.py --only batch-zeros,pii-quadratic
    deploy/bench/attacks.py --backend postgres    # PostgreSQL + files
    deploy/bench/attacks.py --markdown FILE       # also write the table as markdown

The registry runs with its default settings (rate limits on) on a fresh data
folder; every attack gets a fresh server, so one attack's leftovers do not
count against the next. Standard library only, plus wrk (Debian) and the
release binaries `agentlang-registry` and `agentlang`.
"""

import argparse
import gzip
import http.client
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.parse
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIB = 1024 * 1024
# An attack that drives the server past this is stopped (the server killed),
# so the bench cannot take the machine down with it.
RSS_KILL_KIB = 4 * 1024 * 1024


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


def account_token(port, username="mallory", scopes=("publish",)):
    """An account and a token: what anyone can get on an open registry."""
    password = "password-" + username
    request(port, "POST", "/api/v1/accounts", json.dumps({"username": username, "password": password}),
            {"content-type": "application/json"})
    status, body = request(port, "POST", "/api/v1/tokens",
                           json.dumps({"username": username, "password": password, "name": "t", "scopes": list(scopes)}),
                           {"content-type": "application/json"})
    if status != 201:
        raise SystemExit(f"cannot get a token: {status} {body[:200]!r}")
    return json.loads(body)["token"]


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


class Innocent(threading.Thread):
    def __init__(self, url, seconds):
        super().__init__(daemon=True)
        self.url, self.seconds, self.p99 = url, seconds, None

    def run(self):
        self.p99 = wrk_p99(self.url, self.seconds)


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


def seed_tools(server, args, count=60):
    """Publishes `count` small tools with the real CLI (once per server)."""
    if getattr(server, "seeded", False):
        return
    server.seeded = True
    cli = CLI(args.cli, server)
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


class CLI:
    def __init__(self, binary, server):
        self.binary, self.server = binary, server
        self.config = os.path.join(server.dir, "cli-config")
        self.env = dict(os.environ, AGENTLANG_CONFIG_DIR=self.config, AGENTLANG_REGISTRY=server.url)

    def run(self, *argv, stdin=""):
        out = subprocess.run([self.binary, *argv], env=self.env, input=stdin, capture_output=True, text=True,
                             cwd=self.server.dir)
        if out.returncode != 0:
            raise SystemExit(f"agentlang {' '.join(argv)} failed: {out.stderr.strip()}")
        return out.stdout

    def sign_up(self, user):
        self.run("register", "--username", user, "--password-stdin", stdin="password-123\n")
        self.run("login", "--username", user, "--password-stdin", stdin="password-123\n")
        self.run("keygen")
        self.run("keys", "register", os.path.join(self.config, "signing.pem.pub"))


def publish_big_tools(server, args):
    """Four versions of a tool whose containers hold 16 MiB each."""
    cli = CLI(args.cli, server)
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


# name: (attack, what to set up first, outside the measured window)
ATTACKS = {
    "batch-zeros": (batch_zeros, zeros_body),
    "pii-quadratic": (pii_quadratic, None),
    "resolve-models": (resolve_models, None),
    "upload-kept-members": (upload_kept_members, None),
    "slow-bodies": (slow_bodies, None),
    "garbage-auth": (garbage_auth, None),
    "search-flood": (search_flood, seed_tools),
    "resolve-flood": (resolve_flood, None),
    "login-spray": (login_spray, None),
    "version-pages": (version_pages, publish_big_tools),
    "download-flood": (download_flood, lambda server, args: seed_tools(server, args, count=1)),
}


def run_attack(name, fn, prepare, args):
    server = Server(args.binary, args.backend, args.work)
    try:
        if prepare:
            prepare(server, args)
        quiet = wrk_p99(f"{server.url}/healthz", 3)
        time.sleep(0.5)
        before = rss_kib(server.proc.pid)
        sampler = Sampler(server)
        sampler.start()
        # The innocent client runs for the whole attack; attacks take 10-60 s.
        innocent = Innocent(f"{server.url}/healthz", args.innocent_seconds)
        innocent.start()
        started = time.time()
        sent, statuses, note = fn(server, args)
        took = time.time() - started
        innocent.join()
        time.sleep(2)
        sampler.stopped = True
        sampler.join()
        after = rss_kib(server.proc.pid) if server.alive() else 0
        if any(isinstance(s, int) and s >= 500 for s in statuses):
            for line in getattr(server, "warnings", []):
                log(f"{name}: server said: {line}")
        return {
            "attack": name, "sent": sent, "statuses": statuses, "note": note, "seconds": took,
            "rss_before": before, "rss_peak": max(sampler.peak, before), "rss_after": after,
            "killed": sampler.killed or not server.alive(), "quiet_p99": quiet, "attack_p99": innocent.p99,
        }
    finally:
        server.stop()


def verdicts(row):
    growth = (row["rss_peak"] - row["rss_before"]) / 1024
    five = sum(n for s, n in row["statuses"].items() if isinstance(s, int) and s >= 500)
    ratio = (row["attack_p99"] / row["quiet_p99"]) if row["attack_p99"] and row["quiet_p99"] else None
    return {
        "growth_mib": growth,
        "five_xx": five,
        "ratio": ratio,
        "rss_ok": growth <= 64 and not row["killed"],
        "p99_ok": ratio is not None and ratio <= 5,
        "five_ok": five == 0 and not row["killed"],
    }


def table(rows):
    head = ("| attack | sent | answers | RSS before / peak / after (MiB) | growth | "
            "innocent p99 quiet / attack (ms) | 5xx | met |")
    lines = [head, "|" + "---|" * 8]
    for row in rows:
        v = verdicts(row)
        answers = ", ".join(f"{s}: {n}" for s, n in sorted(row["statuses"].items(), key=lambda kv: str(kv[0])))
        fmt = lambda x: f"{x:.1f}" if x is not None else "none"
        met = " ".join([
            "RSS " + ("met" if v["rss_ok"] else "NOT met"),
            "p99 " + ("met" if v["p99_ok"] else "NOT met"),
            "5xx " + ("met" if v["five_ok"] else "NOT met"),
        ])
        killed = " (server killed past 4 GiB)" if row["killed"] else ""
        ratio_text = "" if v["ratio"] is None else f" ({v['ratio']:.1f}x)"
        lines.append(
            f"| {row['attack']} | {row['sent']} | {answers}{killed} | "
            f"{row['rss_before'] // 1024} / {row['rss_peak'] // 1024} / {row['rss_after'] // 1024} | "
            f"{v['growth_mib']:.0f} MiB | {fmt(row['quiet_p99'])} / {fmt(row['attack_p99'])}"
            f"{ratio_text} | "
            f"{v['five_xx']} | {met} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=os.path.join(ROOT, "target/release/agentlang-registry"))
    parser.add_argument("--cli", default=os.path.join(ROOT, "target/release/agentlang"))
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--only", default="", help="comma-separated attack names")
    parser.add_argument("--work", default="/tmp/agentlang-attacks")
    parser.add_argument("--innocent-seconds", type=int, default=20)
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("attacks: wrk is required (apt-get install wrk)")
    for binary in (args.binary, args.cli):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"attacks: {binary} is missing (cargo build --release -p agentlang-registry -p agentlang)")
    os.makedirs(args.work, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(ATTACKS)
    rows = []
    for name in names:
        fn, prepare = ATTACKS[name]
        log(f"{name}: {fn.__doc__.strip().splitlines()[0]}")
        row = run_attack(name, fn, prepare, args)
        v = verdicts(row)
        log(f"{name}: {row['sent']} sent, {dict(row['statuses'])}, RSS +{v['growth_mib']:.0f} MiB, "
            f"p99 {row['quiet_p99']} -> {row['attack_p99']} ms, {row['seconds']:.0f} s")
        rows.append(row)
    out = table(rows)
    header = (f"Attacks on {args.backend}, release build, default settings "
              f"({time.strftime('%Y-%m-%d')}, `deploy/bench/attacks.py --backend {args.backend}`)\n\n")
    print(header + out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(header + out + "\n")


if __name__ == "__main__":
    main()
