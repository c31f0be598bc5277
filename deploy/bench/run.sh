#!/usr/bin/env bash
# The registry's benchmark: seeds a realistic catalog on SQLite and on
# PostgreSQL, loads a release build with wrk on loopback, runs Verdaccio side
# by side, prints a table and writes it to deploy/bench/RESULTS.md.
#
#   deploy/bench/run.sh                 # everything (about 20-30 min on 2 cores)
#   BENCH_BACKENDS=sqlite deploy/bench/run.sh
#
# Settings (environment):
#   BENCH_BACKENDS     "sqlite postgres" (default)
#   BENCH_POSTGRES_URL postgres://postgres@127.0.0.1:5432/postgres (an admin
#                      connection; a database bench_<pid> is created and dropped)
#   BENCH_WORK         /tmp/agentlang-bench (data folders, logs, Verdaccio)
#   BENCH_DURATION     10s per wrk run;  BENCH_CONNECTIONS 64;  BENCH_THREADS 2
#   BENCH_TOOLS 10000, BENCH_AGENTS 1000, BENCH_REAL 100 (tools whose 20
#                      versions are real signed containers)
#   BENCH_SKIP_BUILD=1 use the existing release build
#   BENCH_PROFILE      release (default); "debug" only to try the script quickly
#   BENCH_BIG_MIB      50: size of each of the 16 concurrent uploads of the memory test
#
# Client and server share the machine's cores, so absolute numbers are lower
# than on separate machines; ratios within one run are what the targets use.
# Not part of the test suite.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
bench_dir="$root/deploy/bench"
work="${BENCH_WORK:-/tmp/agentlang-bench}"
backends="${BENCH_BACKENDS-sqlite postgres}"
pg_admin="${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
duration="${BENCH_DURATION:-10s}"
conns="${BENCH_CONNECTIONS:-64}"
threads="${BENCH_THREADS:-2}"
tools="${BENCH_TOOLS:-10000}"
agents="${BENCH_AGENTS:-1000}"
real="${BENCH_REAL:-100}"
profile="${BENCH_PROFILE:-release}"
big_mib="${BENCH_BIG_MIB:-50}"
mib=$((1024 * 1024))
mkdir -p "$work"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- tools -------------------------------------------------------------------
if ! command -v wrk >/dev/null; then
  log "installing wrk"
  apt-get install -y -qq wrk >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
fi
for tool in curl jq python3 node npm; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 2; }
done

# --- build -------------------------------------------------------------------
if [ -n "$backends" ] && [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  log "cargo build --$profile (registry + seed_catalog example)"
  (cd "$root" && cargo build $([ "$profile" = release ] && echo --release) -q -p agentlang-registry \
     --bin agentlang-registry --example seed_catalog)
fi
registry_bin="$root/target/$profile/agentlang-registry"
seed_bin="$root/target/$profile/examples/seed_catalog"
if [ -n "$backends" ] && ! { [ -x "$registry_bin" ] && [ -x "$seed_bin" ]; }; then
  echo "bench: release build missing" >&2
  exit 2
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- measuring helpers ----------------------------------------------------------
rows=()     # markdown table rows
notes=()    # lines under the table
declare -A metric

# wrk_run NAME URL [LUA]: records req/s, p50, p99 (ms) and the error count.
wrk_run() {
  local name="$1" url="$2" lua="${3:-}" out
  # A 10 s timeout, so slow endpoints report their latency instead of
  # wrk's default 2 s cut-off (counted separately as timeouts).
  local args=(-t"$threads" -c"$conns" -d"$duration" --latency --timeout 10s)
  [ -n "$lua" ] && args+=(-s "$lua")
  # Warm-up (caches, connection pools, a JIT for Node) is not measured.
  wrk -t1 -c8 -d3s ${lua:+-s "$lua"} "$url" >/dev/null 2>&1 || true
  out="$(wrk "${args[@]}" "$url" 2>&1)"
  echo "$out" >"$work/wrk-$name.txt"
  local rps p50 p99 errors
  rps="$(awk '/^Requests\/sec/ {print $2}' <<<"$out")"
  p50="$(awk '$1=="50%" {print $2}' <<<"$out")"
  p99="$(awk '$1=="99%" {print $2}' <<<"$out")"
  errors="$(awk '/Non-2xx or 3xx responses/ {print $NF}' <<<"$out")"
  metric["$name.timeouts"]="$(awk '/Socket errors/ {print $NF}' <<<"$out")"
  metric["$name.rps"]="${rps:-0}"
  metric["$name.p50"]="$(to_ms "${p50:-0us}")"
  metric["$name.p99"]="$(to_ms "${p99:-0us}")"
  metric["$name.errors"]="${errors:-0}"
  log "$name: ${rps:-?} req/s, p50 ${p50:-?}, p99 ${p99:-?}, non-2xx ${errors:-0}"
}

# wrk prints 812.00us, 1.20ms, 1.05s: normalize to milliseconds.
to_ms() {
  python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", sys.argv[1])
if not m:
    print("?"); sys.exit()
v, unit = float(m.group(1)), m.group(2)
print(f"{v * {'us': 0.001, 'ms': 1, 's': 1000, 'm': 60000}[unit]:.2f}")
PY
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
hwm_kib() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }

# Samples VmRSS every 50 ms into FILE until the file STOP exists.
sample_rss() {
  local pid="$1" file="$2" stop="$3"
  : >"$file"
  while [ ! -e "$stop" ] && [ -e "/proc/$pid/status" ]; do
    rss_kib "$pid" >>"$file" 2>/dev/null || true
    sleep 0.05
  done
}

status_of() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# --- one backend ----------------------------------------------------------------
server_pid=""
pg_db=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${verdaccio_pid:-}" ] && kill "$verdaccio_pid" 2>/dev/null || true
  if [ -n "$pg_db" ]; then
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# Starts the registry on PORT and sets startup_ms: from exec to the first 200
# from /readyz (polled every 5 ms).
startup_ms=""
start_server() {
  local port="$1"
  local t0 t1
  t0="$(date +%s%N)"
  AGENTLANG_REGISTRY_BIND="127.0.0.1:$port" "$registry_bin" >>"$data/server.log" 2>&1 &
  server_pid=$!
  until [ "$(status_of "http://127.0.0.1:$port/readyz")" = 200 ]; do
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$data/server.log" >&2; exit 1; }
    sleep 0.005
  done
  t1="$(date +%s%N)"
  startup_ms=$(((t1 - t0) / 1000000))
}

stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

bench_backend() {
  local backend="$1"
  data="$work/$backend"
  rm -rf "$data"
  mkdir -p "$data/out"
  export AGENTLANG_REGISTRY_DATA_DIR="$data/registry"
  export AGENTLANG_REGISTRY_JWT_SECRET="072062adf5db2e4772b96b2d8ebaaed3193e61e5abc23c58f8ece8fcad4ff991"
  export AGENTLANG_REGISTRY_RATE_LIMITS=off
  export AGENTLANG_REGISTRY_LOG=warn
  export AGENTLANG_REGISTRY_MAX_UPLOAD_BYTES=$((64 * mib))
  unset AGENTLANG_REGISTRY_DATABASE_URL
  if [ "$backend" = postgres ]; then
    pg_db="bench_$$"
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null
    psql -q "$pg_admin" -c "CREATE DATABASE $pg_db" >/dev/null
    # Seeding only: commits need not wait for the WAL flush. Reset before
    # the server starts, so it measures with the default durability.
    psql -q "$pg_admin" -c "ALTER DATABASE $pg_db SET synchronous_commit = off" >/dev/null
    export AGENTLANG_REGISTRY_DATABASE_URL="${pg_admin%/*}/$pg_db"
  fi

  log "$backend: seeding $tools tools x 20 versions, $agents agents"
  local seed_json
  seed_json="$("$seed_bin" seed "$data/out" --tools "$tools" --agents "$agents" --real "$real" \
    --concurrency "$([ "$backend" = postgres ] && echo 16 || echo 4)")"
  log "$backend: seeded $seed_json"
  metric["$backend.seed_seconds"]="$(jq -r .seconds <<<"$seed_json")"
  metric["$backend.seed_versions"]="$(jq -r .tool_versions <<<"$seed_json")"
  metric["$backend.seed_edges"]="$(jq -r .dependency_edges <<<"$seed_json")"
  if [ "$backend" = postgres ]; then
    psql -q "$pg_admin" -c "ALTER DATABASE $pg_db RESET synchronous_commit" >/dev/null
    psql -q "${pg_admin%/*}/$pg_db" -c "VACUUM ANALYZE" >/dev/null
  else
    metric["$backend.db_mib"]="$(du -m "$data/registry/registry.db" | cut -f1)"
  fi
  # shellcheck disable=SC1091
  . "$data/out/targets.env"

  local port url
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  start_server "$port"
  metric["$backend.startup_ms"]="$startup_ms"
  sleep 1
  metric["$backend.idle_rss_mib"]="$(($(rss_kib "$server_pid") / 1024))"
  log "$backend: ready in ${metric[$backend.startup_ms]} ms, idle RSS ${metric[$backend.idle_rss_mib]} MiB"

  # Every target must answer 200 before it is measured.
  local lua="$work/resolve-$backend.lua"
  python3 - "$data/out/resolve.json" "$lua" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(
    'wrk.method = "POST"\n'
    f"wrk.body = {json.dumps(body)}\n"
    'wrk.headers["Content-Type"] = "application/json"\n'
    'wrk.headers["Accept"] = "application/json"\n'
)
PY
  local resolve_status
  resolve_status="$(status_of -X POST -H 'content-type: application/json' -H 'accept: application/json' \
    --data-binary @"$data/out/resolve.json" "$url/api/v1/resolve")"
  curl -s -H 'content-type: application/json' -H 'accept: application/json' \
    --data-binary @"$data/out/resolve.json" "$url/api/v1/resolve" >"$data/resolve-answer.json" || true
  metric["$backend.resolved_tools"]="$(jq -r '.tools | length' "$data/resolve-answer.json" 2>/dev/null || echo '?')"

  wrk_run "$backend.healthz" "$url/healthz"
  if [ "$resolve_status" = 200 ]; then
    wrk_run "$backend.resolve" "$url/api/v1/resolve" "$lua"
    # The same load, but each agent's request once: resolutions the cache
    # has not seen (the solver, and index reads where the cache misses).
    local many
    many="$("$seed_bin" resolve "$url" "$data/out/resolve-many.json" --concurrency "$conns")"
    log "$backend: distinct resolves $many"
    metric["$backend.resolve_distinct.rps"]="$(jq -r .rps <<<"$many")"
    metric["$backend.resolve_distinct.p50"]="$(jq -r .p50_ms <<<"$many")"
    metric["$backend.resolve_distinct.p99"]="$(jq -r .p99_ms <<<"$many")"
    metric["$backend.resolve_distinct.statuses"]="$(jq -c .statuses <<<"$many")"
  else
    log "$backend: resolve answers $resolve_status; not measured"
  fi
  local name path
  for name in version index download search agent_page; do
    case "$name" in
      version) path="$VERSION_PATH" ;;
      index) path="$INDEX_PATH" ;;
      download) path="$DOWNLOAD_PATH" ;;
      search) path="$SEARCH_PATH" ;;
      agent_page) path="$AGENT_PAGE_PATH" ;;
    esac
    metric["$backend.$name.status"]="$(status_of "$url$path")"
    if [ "${metric[$backend.$name.status]}" = 200 ]; then
      wrk_run "$backend.$name" "$url$path"
    else
      log "$backend: $path answers ${metric[$backend.$name.status]}; not measured"
    fi
  done

  # Publish: 1 MiB containers, one at a time and 16 in flight.
  local p1 p16
  p1="$("$seed_bin" publish "$url" "$BENCH_KEY" --size "$mib" --count 48 --concurrency 1 \
        --prefix "pub1_" --ceiling-dir "$data/registry/ceiling")"
  p16="$("$seed_bin" publish "$url" "$BENCH_KEY" --size "$mib" --count 128 --concurrency 16 \
        --prefix "pub16_" --ceiling-dir "$data/registry/ceiling")"
  log "$backend: publish x1 $p1"
  log "$backend: publish x16 $p16"
  metric["$backend.publish1.mbps"]="$(jq -r .mb_per_s <<<"$p1")"
  metric["$backend.publish1.ceiling"]="$(jq -r .ceiling_mb_per_s <<<"$p1")"
  metric["$backend.publish1.floor"]="$(jq -r .verify_floor_mb_per_s <<<"$p1")"
  metric["$backend.publish1.statuses"]="$(jq -c .statuses <<<"$p1")"
  metric["$backend.publish16.mbps"]="$(jq -r .mb_per_s <<<"$p16")"
  metric["$backend.publish16.ceiling"]="$(jq -r .ceiling_mb_per_s <<<"$p16")"
  metric["$backend.publish16.floor"]="$(jq -r .verify_floor_mb_per_s <<<"$p16")"
  metric["$backend.publish16.statuses"]="$(jq -c .statuses <<<"$p16")"

  # Memory: 16 concurrent 50 MiB uploads, sampled every 50 ms, on a freshly
  # started server, so the growth is what the uploads cost and not the
  # caches the read benchmarks above filled.
  local rss_after_reads
  rss_after_reads="$(rss_kib "$server_pid")"
  stop_server
  start_server "$port"
  sleep 2
  local before after_idle stop="$work/stop-sampler" samples="$work/rss-$backend.txt"
  before="$(rss_kib "$server_pid")"
  rm -f "$stop"
  sample_rss "$server_pid" "$samples" "$stop" &
  local sampler=$!
  local p50m
  p50m="$("$seed_bin" publish "$url" "$BENCH_KEY" --size $((big_mib * mib)) --count 16 --concurrency 16 \
          --prefix "big_")"
  touch "$stop"
  wait "$sampler" || true
  sleep 5
  after_idle="$(rss_kib "$server_pid")"
  local peak
  peak="$(sort -n "$samples" | tail -1)"
  metric["$backend.big.statuses"]="$(jq -c .statuses <<<"$p50m")"
  metric["$backend.big.mbps"]="$(jq -r .mb_per_s <<<"$p50m")"
  metric["$backend.rss_after_reads_mib"]="$((rss_after_reads / 1024))"
  metric["$backend.rss_before_mib"]="$((before / 1024))"
  metric["$backend.rss_peak_mib"]="$((peak / 1024))"
  metric["$backend.rss_growth_mib"]="$(((peak - before) / 1024))"
  metric["$backend.rss_after_idle_mib"]="$((after_idle / 1024))"
  metric["$backend.hwm_mib"]="$(($(hwm_kib "$server_pid") / 1024))"
  log "$backend: 16 x $big_mib MiB: RSS before $((before / 1024)) MiB, peak $((peak / 1024)) MiB, 5 s later $((after_idle / 1024)) MiB ${metric[$backend.big.statuses]}"

  # Start-up again, now that the catalog also holds the publishes above.
  stop_server
  start_server "$port"
  metric["$backend.restart_ms"]="$startup_ms"
  stop_server
  if [ "$backend" = postgres ]; then
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null
    pg_db=""
  fi
  # The uploads above leave about 1 GB of blobs; keep only the logs.
  rm -rf "$data/registry"
}

# --- Verdaccio ----------------------------------------------------------------------
verdaccio_pid=""
bench_verdaccio() {
  local dir="$work/verdaccio"
  mkdir -p "$dir"
  if [ ! -x "$dir/node_modules/.bin/verdaccio" ]; then
    log "installing Verdaccio 6.8 from npm"
    cat >"$dir/package.json" <<'EOF'
{"name": "agentlang-bench-verdaccio", "private": true, "version": "0.0.0",
 "dependencies": {"verdaccio": "6.8"},
 "overrides": {"verdaccio-audit": {"node-fetch": "2.7.0"}}}
EOF
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  fi
  rm -rf "$dir/storage"
  mkdir -p "$dir/storage"
  cat >"$dir/config.yaml" <<EOF
storage: $dir/storage
auth:
  htpasswd:
    file: $dir/htpasswd
    max_users: -1
uplinks: {}
packages:
  '**':
    access: \$all
    publish: \$all
middlewares: {}
web:
  enable: false
log: {type: stdout, format: pretty, level: error}
max_body_size: 10mb
EOF
  local port url
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  (cd "$dir" && ./node_modules/.bin/verdaccio --config "$dir/config.yaml" --listen "127.0.0.1:$port" >"$dir/verdaccio.log" 2>&1) &
  verdaccio_pid=$!
  until [ "$(status_of "$url/-/ping")" = 200 ]; do
    kill -0 "$verdaccio_pid" 2>/dev/null || { tail -20 "$dir/verdaccio.log" >&2; exit 1; }
    sleep 0.1
  done
  # The equivalent of one seeded tool: 20 versions (majors 1-4 x minors
  # 0-4), each with up to three dependencies and a small tarball, published
  # through npm's own publish request.
  python3 - "$url" <<'PY'
import base64, hashlib, io, json, sys, tarfile, urllib.request
url = sys.argv[1]
token = None
for i, (major, minor) in enumerate((M, m) for M in range(1, 5) for m in range(5)):
    version = f"{major}.{minor}.0"
    pkg = {"name": "tool0", "version": version,
           "description": "search and fetch for agents (tool 0)",
           "dependencies": {f"tool{2500 + (i * 7 + k) % 2500}": f"^{1 + k}" for k in range(i % 4)}}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in (("package/package.json", json.dumps(pkg).encode()),
                           ("package/README.md", b"# tool0\n" + b"x" * 600)):
            info = tarfile.TarInfo(name); info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tgz = buf.getvalue()
    body = {
        "_id": "tool0", "name": "tool0", "dist-tags": {"latest": version},
        "versions": {version: {**pkg, "_id": f"tool0@{version}", "dist": {
            "shasum": hashlib.sha1(tgz).hexdigest(),
            "tarball": f"{url}/tool0/-/tool0-{version}.tgz"}}},
        "_attachments": {f"tool0-{version}.tgz": {
            "content_type": "application/octet-stream",
            "data": base64.b64encode(tgz).decode(), "length": len(tgz)}},
    }
    req = urllib.request.Request(f"{url}/tool0", data=json.dumps(body).encode(), method="PUT",
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as res:
        assert res.status in (200, 201), res.status
PY
  metric["verdaccio.packument_bytes"]="$(curl -s "$url/tool0" | wc -c)"
  metric["verdaccio.versions"]="$(curl -s "$url/tool0" | jq '.versions | length')"
  wrk_run verdaccio.packument "$url/tool0"
  kill "$verdaccio_pid" 2>/dev/null || true
  wait "$verdaccio_pid" 2>/dev/null || true
  verdaccio_pid=""
}

# --- run -----------------------------------------------------------------------------
for backend in $backends; do
  bench_backend "$backend"
done
bench_verdaccio

# --- report ----------------------------------------------------------------------------
for k in "${!metric[@]}"; do printf '%s\t%s\n' "$k" "${metric[$k]}"; done >"$work/metrics.tsv"
python3 - "$work/metrics.tsv" "$bench_dir/RESULTS.md" "$backends" "$duration" "$conns" "$threads" "$tools" "$agents" "$real" \
  "$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)" <<'PY'
import json, os, platform, subprocess, sys, time
tsv, out, backends, duration, conns, threads, tools, agents, real, commit = sys.argv[1:]
m = dict(line.rstrip("\n").split("\t", 1) for line in open(tsv) if "\t" in line)
def f(key, default=None):
    v = m.get(key, default)
    try: return float(v)
    except (TypeError, ValueError): return None
def num(v, digits=0):
    return "n/a" if v is None else f"{v:,.{digits}f}"
def met(ok): return "met" if ok else "NOT met"

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
mem = next((int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
lines = []
lines.append("# Benchmark results\n")
lines.append(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}")
lines.append(f"- machine: {os.cpu_count()} cores ({cpu}), {mem:,} MiB RAM, {platform.system()} {platform.release()}; wrk and the server share the cores")
lines.append(f"- command: `deploy/bench/run.sh` (BENCH_BACKENDS=\"{backends}\"); wrk -t{threads} -c{conns} -d{duration} --latency on loopback; {os.environ.get('BENCH_PROFILE', 'release')} build")
lines.append(f"- catalog: {tools} tools x 20 versions ({num(f('sqlite.seed_edges') or f('postgres.seed_edges'))} dependency edges), {agents} agents; the first {real} tools' versions are real signed containers, the rest content-addressed placeholders (see server/examples/seed_catalog.rs)")
lines.append("- blobs on the local filesystem for both backends (PostgreSQL is the metadata backend measured); PostgreSQL 15 on the same machine\n")
lines.append("| measure | " + " | ".join(backends.split()) + " |")
lines.append("|---|" + "---|" * len(backends.split()))
def row(label, fn):
    lines.append(f"| {label} | " + " | ".join(fn(b) for b in backends.split()) + " |")
def rps_row(label, key):
    row(label, lambda b: (f"{num(f(f'{b}.{key}.rps'))} req/s, p50 {num(f(f'{b}.{key}.p50'),2)} ms, p99 {num(f(f'{b}.{key}.p99'),2)} ms"
                          + (f", {m.get(f'{b}.{key}.errors')} non-2xx" if m.get(f'{b}.{key}.errors', '0') != '0' else "")
                          + (f", {m.get(f'{b}.{key}.timeouts')} timeouts" if m.get(f'{b}.{key}.timeouts', '0') not in ('0', '') else ""))
                         if f(f"{b}.{key}.rps") else f"not measured (status {m.get(f'{b}.{key}.status', '?')})")
row("seed (tool versions, seconds)", lambda b: f"{num(f(f'{b}.seed_versions'))} in {num(f(f'{b}.seed_seconds'),1)} s")
row("start-up to /readyz, seeded (ms)", lambda b: f"{m.get(f'{b}.startup_ms')} ms (after the run: {m.get(f'{b}.restart_ms')} ms)")
row("idle RSS", lambda b: f"{m.get(f'{b}.idle_rss_mib')} MiB")
rps_row("GET /healthz", "healthz")
rps_row("POST /api/v1/resolve (10 tools, transitive; one agent, repeated)", "resolve")
row("POST /api/v1/resolve, 1,000 distinct agents once each (uncached)", lambda b: f"{num(f(f'{b}.resolve_distinct.rps'))} req/s, p50 {num(f(f'{b}.resolve_distinct.p50'),2)} ms, p99 {num(f(f'{b}.resolve_distinct.p99'),2)} ms {m.get(f'{b}.resolve_distinct.statuses')}" if f(f"{b}.resolve_distinct.rps") else "not measured")
row("resolve / healthz", lambda b: num((f(f'{b}.resolve.rps') or 0) / (f(f'{b}.healthz.rps') or 1), 3))
rps_row("GET version record", "version")
rps_row("GET index (20 versions)", "index")
rps_row("GET download (real container)", "download")
rps_row("GET search", "search")
rps_row("GET agent page (HTML)", "agent_page")
for k, label in (("publish1", "publish 1 MiB, 1 in flight"), ("publish16", "publish 1 MiB, 16 in flight")):
    row(label, lambda b, k=k: f"{num(f(f'{b}.{k}.mbps'),1)} MB/s of ceiling {num(f(f'{b}.{k}.ceiling'),0)} MB/s = {num((f(f'{b}.{k}.mbps') or 0)/(f(f'{b}.{k}.ceiling') or 1),2)}; verify + write floor {num(f(f'{b}.{k}.floor'),0)} MB/s {m.get(f'{b}.{k}.statuses')}")
row("RSS after the read and publish benchmarks (caches filled)", lambda b: f"{m.get(f'{b}.rss_after_reads_mib')} MiB")
row(f"16 x {os.environ.get('BENCH_BIG_MIB', '50')} MiB uploads on a fresh server: RSS idle before / peak / 5 s after", lambda b: f"{m.get(f'{b}.rss_before_mib')} / {m.get(f'{b}.rss_peak_mib')} / {m.get(f'{b}.rss_after_idle_mib')} MiB (VmHWM {m.get(f'{b}.hwm_mib')}), {num(f(f'{b}.big.mbps'),0)} MB/s {m.get(f'{b}.big.statuses')}")
v = f("verdaccio.packument.rps")
lines.append("")
lines.append(f"Verdaccio 6.8 (Node {subprocess.run(['node','--version'],capture_output=True,text=True).stdout.strip()}), same wrk settings, GET of a {m.get('verdaccio.versions')}-version packument ({m.get('verdaccio.packument_bytes')} bytes): {num(v)} req/s, p50 {num(f('verdaccio.packument.p50'),2)} ms, p99 {num(f('verdaccio.packument.p99'),2)} ms.\n")
lines.append("## Targets\n")
lines.append("| target | " + " | ".join(backends.split()) + " |")
lines.append("|---|" + "---|" * len(backends.split()))
def target(label, fn):
    lines.append(f"| {label} | " + " | ".join(fn(b) for b in backends.split()) + " |")
def ratio_check(a, b_, goal):
    if a is None or b_ is None or b_ == 0: return "not measured"
    r = a / b_
    return f"{r:.3f} ({met(r >= goal)})"
target("resolve >= 0.5 x /healthz", lambda b: ratio_check(f(f"{b}.resolve.rps"), f(f"{b}.healthz.rps"), 0.5))
target("publish (1 in flight) >= 0.5 x ceiling", lambda b: ratio_check(f(f"{b}.publish1.mbps"), f(f"{b}.publish1.ceiling"), 0.5))
target("publish (16 in flight) >= 0.5 x ceiling", lambda b: ratio_check(f(f"{b}.publish16.mbps"), f(f"{b}.publish16.ceiling"), 0.5))
target(f"RSS growth (peak over idle before) under 16 x {os.environ.get('BENCH_BIG_MIB', '50')} MiB <= 64 MiB", lambda b: f"{m.get(f'{b}.rss_growth_mib')} MiB ({met(f(f'{b}.rss_growth_mib', 1e9) <= 64)})")
target("start-up <= 1 s (seeded)", lambda b: f"{m.get(f'{b}.startup_ms')} ms ({met(f(f'{b}.startup_ms', 1e9) <= 1000)})")
target("resolve >= 10 x Verdaccio packument GET", lambda b: ratio_check(f(f"{b}.resolve.rps"), v, 10))
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
PY
log "wrote $bench_dir/RESULTS.md"
