#!/usr/bin/env bash
# The registry's benchmark: seeds a realistic catalog on SQLite and on
# PostgreSQL, loads a release build with wrk on loopback, with nginx serving
# the same container files from disk as the static-file reference and
# Verdaccio alongside, measures what the transparency log costs a publish
# against the last revision without it, measures reads of a random package
# each request at two catalog sizes (small and large, each seeded afresh),
# prints one table of the figures with their targets and writes it to
# deploy/bench/RESULTS.md, keeping that file's hand-written "## Decisions"
# section (from the heading to the end) as it is.
#
#   deploy/bench/run.sh                 # everything (about 1.5 h on 2 cores)
#   BENCH_BACKENDS=sqlite deploy/bench/run.sh
#   BENCH_PARTS=scaling deploy/bench/run.sh          # the random reads only
#   BENCH_PARTS=scaling BENCH_SCALE_SIZES="300 3000" BENCH_DURATION=3s \
#     BENCH_BACKENDS=sqlite deploy/bench/run.sh      # a quick try of them
#
# Settings (environment):
#   BENCH_BACKENDS     "sqlite postgres" (default)
#   BENCH_PARTS        "all" (default), or some of: backend (the per-backend
#                      figures: seed, repeated-path reads, downloads, resolves,
#                      publishes, memory), logcost (the transparency log's
#                      cost, see BENCH_LOG_BASELINE), verdaccio (the reference),
#                      scaling (random-package reads at BENCH_SCALE_SIZES).
#                      The table leaves out the rows of the parts not run.
#   BENCH_POSTGRES_URL postgres://postgres@127.0.0.1:5432/postgres (an admin
#                      connection; databases bench_<pid>* are created and dropped)
#   BENCH_WORK         /tmp/agentlang-bench (data folders, logs, wrk scripts and
#                      outputs, Verdaccio, baseline build)
#   BENCH_DURATION     10s per wrk run;  BENCH_CONNECTIONS 64;  BENCH_THREADS 2
#   BENCH_RESOLVE_CONCURRENCY 16: requests in flight for the first-time resolves
#                      (at 64, Little's law alone puts p99 past 50 ms)
#   BENCH_RESOLVE_ROUNDS 5: passes of the first-time resolves whose median is
#                      reported (the core resolver's: two per warm pass)
#   BENCH_TOOLS 10000, BENCH_AGENTS 1000, BENCH_REAL 100 (tools whose 20
#                      versions are real signed containers)
#   BENCH_SCALE_SIZES  "1000 100000": the catalog sizes (tools, each 20
#                      versions) of the scaling part, small first, large last
#                      (at least 40 each, the seed's minimum). Each is seeded
#                      on a fresh database and data folder with
#                      `seed_catalog seed OUT --tools N --agents A --real 10`
#                      (A is BENCH_AGENTS, at most a tenth of the smallest
#                      size, the same at every size), timed; the server is
#                      started once to sequence the seeded log, then again
#                      for the figures: start-up to /readyz, idle RSS, and
#                      per read a wrk run of /healthz then one of the read
#                      with a random tool (agent, search word) per request:
#                      version record, package record, index entry, search,
#                      agent page; and the first-time resolve of every
#                      agent's request once. The large size's ratios to
#                      /healthz are compared with the small size's.
#   BENCH_SKIP_BUILD=1 use the existing release build
#   BENCH_PROFILE      release (default); "debug" only to try the script quickly
#   BENCH_BIG_MIB      50: size of each of the 16 concurrent uploads of the memory test
#   BENCH_LOG_BASELINE 2404024: the revision before the transparency log, built
#                      in a worktree under BENCH_WORK, to measure what the log
#                      costs a publish; "" skips that part
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
resolve_conc="${BENCH_RESOLVE_CONCURRENCY:-16}"
resolve_rounds="${BENCH_RESOLVE_ROUNDS:-5}"
log_baseline="${BENCH_LOG_BASELINE-2404024}"
scale_sizes="${BENCH_SCALE_SIZES-1000 100000}"
parts="${BENCH_PARTS:-all}"
[ "$parts" = all ] && parts="backend logcost verdaccio scaling"
for part in $parts; do
  case "$part" in
    backend | logcost | verdaccio | scaling) ;;
    *) echo "bench: BENCH_PARTS: unknown part '$part' (all, or some of: backend logcost verdaccio scaling)" >&2; exit 2 ;;
  esac
done
for size in $scale_sizes; do
  if ! [[ "$size" =~ ^[0-9]+$ && "$size" -ge 40 ]]; then
    echo "bench: BENCH_SCALE_SIZES: '$size' is not a number of tools of at least 40 (the seed's minimum)" >&2
    exit 2
  fi
done
# runs PART: whether PART of the benchmark is run.
runs() { [[ " $parts " == *" $1 "* ]]; }
runs logcost || log_baseline=""
mib=$((1024 * 1024))
mkdir -p "$work"

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- tools -------------------------------------------------------------------
needed=(wrk)
runs backend && needed+=(nginx)
for pkg in "${needed[@]}"; do
  if ! command -v "$pkg" >/dev/null; then
    log "installing $pkg"
    apt-get install -y -qq "$pkg" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null; }
  fi
done
needed=(curl jq python3)
runs verdaccio && needed+=(node npm)
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is required" >&2; exit 2; }
done

# --- build -------------------------------------------------------------------
if [ -n "$backends" ] && [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  log "cargo build --$profile (registry, agentlang, seed_catalog example)"
  (cd "$root" && cargo build $([ "$profile" = release ] && echo --release) -q -p agentlang-registry \
     --bin agentlang-registry && \
   cargo build $([ "$profile" = release ] && echo --release) -q -p agentlang-registry-testing \
     --example seed_catalog && \
   cargo build $([ "$profile" = release ] && echo --release) -q -p agentlang --bin agentlang)
fi
registry_bin="$root/target/$profile/agentlang-registry"
seed_bin="$root/target/$profile/examples/seed_catalog"
cli_bin="$root/target/$profile/agentlang"
if [ -n "$backends" ] && ! { [ -x "$registry_bin" ] && [ -x "$seed_bin" ] &&
  { ! runs backend && ! runs logcost || [ -x "$cli_bin" ]; }; }; then
  echo "bench: release build missing" >&2
  exit 2
fi
# The revision before the transparency log, for the log's cost: built once
# per revision in its own worktree and target folder.
baseline_bin=""
if [ -n "$backends" ] && [ -n "$log_baseline" ]; then
  baseline_rev="$(cd "$root" && git rev-parse --short "$log_baseline")"
  baseline_src="$work/baseline-$baseline_rev"
  baseline_bin="$work/baseline-target/$profile/agentlang-registry-$baseline_rev"
  if [ ! -x "$baseline_bin" ]; then
    log "building the baseline $baseline_rev (no transparency log) in $baseline_src"
    [ -d "$baseline_src" ] || (cd "$root" && git worktree add -f --detach "$baseline_src" "$baseline_rev" >/dev/null)
    (cd "$baseline_src" && CARGO_TARGET_DIR="$work/baseline-target" cargo build \
       $([ "$profile" = release ] && echo --release) -q -p agentlang-registry --bin agentlang-registry)
    cp "$work/baseline-target/$profile/agentlang-registry" "$baseline_bin"
    (cd "$root" && git worktree remove --force "$baseline_src" >/dev/null 2>&1) || true
  fi
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
  metric["$name.bytes_per_s"]="$(to_bytes "$(awk '/^Transfer\/sec/ {print $2}' <<<"$out")")"
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

# wrk prints 77.53MB, 3.19GB, 812.00KB (binary units): normalize to bytes.
to_bytes() {
  python3 - "${1:-0B}" <<'PY'
import re, sys
m = re.fullmatch(r"([\d.]+)([KMGT]?B)", sys.argv[1])
print(0 if not m else int(float(m.group(1)) * 1024 ** "BKMGT".index(m.group(2)[0])))
PY
}

rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# The private part of RSS: what the process holds, without the file pages
# it maps (SQLite's memory-mapped database is the kernel's file cache,
# shared by its connections and reclaimable, yet counted in VmRSS once per
# connection that touched it).
anon_kib() { awk '/^RssAnon/ {print $2}' "/proc/$1/status"; }
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
nginx_conf=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ -n "${verdaccio_pid:-}" ] && kill "$verdaccio_pid" 2>/dev/null || true
  [ -n "$nginx_conf" ] && nginx -c "$nginx_conf" -s stop 2>/dev/null || true
  if [ -n "$pg_db" ]; then
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

# Starts the registry (BIN, default the one built here) on PORT and sets
# startup_ms: from exec to the first 200 from /readyz (polled every 5 ms).
startup_ms=""
start_server() {
  local port="$1" bin="${2:-$registry_bin}"
  local t0 t1
  t0="$(date +%s%N)"
  AGENTLANG_REGISTRY_BIND="127.0.0.1:$port" "$bin" >>"$data/server.log" 2>&1 &
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

# A fresh metadata database for BACKEND: PostgreSQL gets a new database
# (AGENTLANG_REGISTRY_DATABASE_URL names it); SQLite uses the default file in
# the data folder.
fresh_database() {
  local backend="$1" suffix="${2:-}"
  unset AGENTLANG_REGISTRY_DATABASE_URL
  if [ "$backend" = postgres ]; then
    pg_db="bench_$$$suffix"
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null
    psql -q "$pg_admin" -c "CREATE DATABASE $pg_db" >/dev/null
    export AGENTLANG_REGISTRY_DATABASE_URL="${pg_admin%/*}/$pg_db"
  fi
}

drop_database() {
  if [ -n "$pg_db" ]; then
    psql -q "$pg_admin" -c "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null
    pg_db=""
  fi
}

# nginx serving DIR on PORT: the static-file reference for downloads
# (sendfile, no access log, keep-alive as wrk uses it).
start_nginx() {
  local dir="$1" port="$2" conf="$work/nginx/nginx.conf"
  mkdir -p "$work/nginx"
  cat >"$conf" <<NGINX
user $(id -un);
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  default_type application/gzip;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  server { listen 127.0.0.1:$port; root $dir; }
}
NGINX
  nginx -c "$conf"
  nginx_conf="$conf"
}

stop_nginx() {
  [ -n "$nginx_conf" ] && nginx -c "$nginx_conf" -s stop 2>/dev/null || true
  nginx_conf=""
  sleep 0.5
}

# Registers USER with a signing key through the API, with the real CLI
# (so it works against any revision that serves the v1 API); the key is
# DIR/signing.pem.
register_publisher() {
  local url="$1" dir="$2" user="$3"
  mkdir -p "$dir"
  echo "bench-password" | AGENTLANG_CONFIG_DIR="$dir" "$cli_bin" --registry "$url" register \
    --username "$user" --password-stdin >/dev/null
  AGENTLANG_CONFIG_DIR="$dir" "$cli_bin" keygen --output "$dir/signing.pem" >/dev/null
  AGENTLANG_CONFIG_DIR="$dir" "$cli_bin" --registry "$url" keys register "$dir/signing.pem.pub" >/dev/null
}

# wait_for_log URL N [SECONDS]: until the log's checkpoint covers N entries
# (at most SECONDS, 300 unless told).
wait_for_log() {
  local url="$1" want="$2" limit="${3:-300}" size=0
  for _ in $(seq 1 $((limit * 2))); do
    size="$(curl -s "$url/log/checkpoint" | sed -n 2p)"
    [ "${size:-0}" -ge "$want" ] && return 0
    sleep 0.5
  done
  log "the log's checkpoint covers ${size:-0} of $want entries after $limit s"
  return 1
}

# What the servers of this data folder log at info when a background job
# ends (the run's filter keeps it): the start-up audit of the log, and the
# pass storing every package's index entry and record (`app::stored_answers`).
audit_line='audited the transparency log'
pass_line='stored the answers of every package without them'

# How many lines matching PATTERN the servers of this data folder have
# logged: 0 before the first has started.
logged() {
  cat "$data/server.log" 2>/dev/null | grep -c "$1" || true
}

# wait_for_logged PATTERN COUNT SECONDS WHAT: until the server started last
# has logged its PATTERN line (more than COUNT logged; at most SECONDS).
wait_for_logged() {
  local pattern="$1" before="$2" limit="$3" what="$4"
  for _ in $(seq 1 $((limit * 20))); do
    [ "$(logged "$pattern")" -gt "$before" ] && return 0
    sleep 0.05
  done
  log "no end of $what after $limit s"
}

audits_logged() { logged "$audit_line"; }
passes_logged() { logged "$pass_line"; }
# wait_for_audit COUNT [SECONDS]: the start-up audit (at most 60 s unless told).
wait_for_audit() { wait_for_logged "$audit_line" "$1" "${2:-60}" "the start-up audit of the log"; }
# wait_for_pass COUNT [SECONDS]: the pass over the stored answers.
wait_for_pass() { wait_for_logged "$pass_line" "$1" "${2:-60}" "the start-up pass over the stored answers"; }

# The milliseconds and renderings of the last such pass, as "MS RENDERED".
last_pass() {
  grep "$pass_line" "$data/server.log" | tail -1 |
    sed -E 's/.*rendered=([0-9]+).*elapsed_ms=([0-9]+).*/\2 \1/'
}

# first_time_resolves NAME URL FILE: each request of FILE posted once; the
# pass's JSON line is added to the file NAME.passes under $data.
first_time_resolves() {
  local name="$1" url="$2" file="$3" out
  out="$("$seed_bin" resolve "$url" "$file" --concurrency "$resolve_conc")"
  log "$name: $out"
  printf '%s\n' "$out" >>"$data/$name.passes"
}

# core_resolver BACKEND: one pass of the core resolver over the first-time
# requests, in memory, added to solve.passes under $data.
core_resolver() {
  local out
  out="$("$seed_bin" solve "$data/out/resolve-many.json" --tools "$tools")"
  log "$1: core resolver $out"
  printf '%s\n' "$out" >>"$data/solve.passes"
}

# median_of FILE FIELD: the median of FIELD over FILE's JSON lines (the
# upper middle of an even count).
median_of() {
  jq -s "map(.$2) | sort | .[length / 2 | floor]" "$1"
}

# median_passes NAME: the median of NAME's passes (rps, p50 and p99 each
# their own median) and the statuses of all of them.
median_passes() {
  local name="$1" passes="$data/$1.passes"
  metric["$name.rps"]="$(median_of "$passes" rps)"
  metric["$name.p50"]="$(median_of "$passes" p50_ms)"
  metric["$name.p99"]="$(median_of "$passes" p99_ms)"
  metric["$name.statuses"]="$(jq -sc 'map(.statuses | to_entries) | add | group_by(.key)
    | map({key: .[0].key, value: (map(.value) | add)}) | from_entries' "$passes")"
}

# publish_run NAME URL KEY SIZE COUNT CONCURRENCY [ARGS...]: COUNT new tools
# of SIZE payload bytes, CONCURRENCY in flight.
publish_run() {
  local name="$1" url="$2" key="$3" size="$4" count="$5" conc="$6" out
  shift 6
  # Start on a settled disk: the previous run's dirty pages (512 MiB after
  # the 1 MiB runs), written back during this one, would compete with its
  # writes and PostgreSQL's WAL flushes, charging one run's cost to the next.
  sync
  out="$("$seed_bin" publish "$url" "$key" --size "$size" --count "$count" --concurrency "$conc" \
         --prefix "${name//./_}_" "$@")"
  log "$name: $out"
  metric["$name.mbps"]="$(jq -r .mb_per_s <<<"$out")"
  metric["$name.per_s"]="$(jq -r .publishes_per_s <<<"$out")"
  metric["$name.ceiling"]="$(jq -r .ceiling_mb_per_s <<<"$out")"
  metric["$name.floor"]="$(jq -r .verify_floor_mb_per_s <<<"$out")"
  metric["$name.statuses"]="$(jq -c .statuses <<<"$out")"
}

bench_backend() {
  local backend="$1"
  data="$work/$backend"
  rm -rf "$data"
  mkdir -p "$data/out"
  export AGENTLANG_REGISTRY_DATA_DIR="$data/registry"
  fresh_database "$backend"
  if [ "$backend" = postgres ]; then
    # Seeding only: commits need not wait for the WAL flush. Reset before
    # the server starts, so it measures with the default durability.
    psql -q "$pg_admin" -c "ALTER DATABASE $pg_db SET synchronous_commit = off" >/dev/null
  fi

  log "$backend: seeding $tools tools x 20 versions, $agents agents"
  local seed_json
  seed_json="$("$seed_bin" seed "$data/out" --tools "$tools" --agents "$agents" --real "$real" \
    --concurrency "$([ "$backend" = postgres ] && echo 16 || echo 4)")"
  log "$backend: seeded $seed_json"
  metric["$backend.seed_seconds"]="$(jq -r .seconds <<<"$seed_json")"
  metric["$backend.seed_versions"]="$(jq -r .tool_versions <<<"$seed_json")"
  metric["$backend.seed_edges"]="$(jq -r .dependency_edges <<<"$seed_json")"
  local log_entries
  log_entries="$(jq -r .log_entries <<<"$seed_json")"
  if [ "$backend" = postgres ]; then
    psql -q "$pg_admin" -c "ALTER DATABASE $pg_db RESET synchronous_commit" >/dev/null
    psql -q "${pg_admin%/*}/$pg_db" -c "VACUUM ANALYZE" >/dev/null
  else
    metric["$backend.db_mib"]="$(du -m "$data/registry/registry.db" | cut -f1)"
  fi
  # shellcheck disable=SC1091
  . "$data/out/targets.env"

  local port url t0 t1
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  start_server "$port"
  metric["$backend.startup_ms"]="$startup_ms"
  sleep 1
  metric["$backend.idle_rss_mib"]="$(($(rss_kib "$server_pid") / 1024))"
  log "$backend: ready in ${metric[$backend.startup_ms]} ms, idle RSS ${metric[$backend.idle_rss_mib]} MiB"
  t0="$(date +%s%N)"
  wait_for_log "$url" "$log_entries"
  metric["$backend.log_sequenced_s"]="$(python3 -c "print(round(($(date +%s%N) - $t0) / 1e9, 1))")"
  log "$backend: the checkpoint covers the $log_entries seeded entries after ${metric[$backend.log_sequenced_s]} s"

  # The download samples: a 1 KiB and a 1 MiB payload, published through the
  # API; nginx serves the very files the registry stores.
  local sample size record sha
  for sample in 1k 1m; do
    size=$([ "$sample" = 1k ] && echo 1024 || echo "$mib")
    "$seed_bin" publish "$url" "$BENCH_KEY" --size "$size" --count 1 --concurrency 1 \
      --prefix "dl${sample}_" >/dev/null
    record="$(curl -s "$url/api/v1/tools/dl${sample}_0/1.0.0")"
    sha="$(jq -r .sha256 <<<"$record")"
    metric["$backend.download_$sample.bytes"]="$(jq -r .size <<<"$record")"
    metric["$backend.download_$sample.path"]="/api/v1/tools/dl${sample}_0/1.0.0/download"
    metric["$backend.nginx_$sample.path"]="/blobs/sha256/${sha:0:2}/${sha:2:2}/$sha"
  done
  local nginx_port
  nginx_port="$(free_port)"
  start_nginx "$data/registry" "$nginx_port"

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
  local name path base
  for name in nginx_1k download_1k nginx_1m download_1m version package index agent_page search; do
    base="$url"
    case "$name" in
      nginx_*) base="http://127.0.0.1:$nginx_port"; path="${metric[$backend.$name.path]}" ;;
      download_*) path="${metric[$backend.$name.path]}" ;;
      version) path="$VERSION_PATH" ;;
      package) path="${VERSION_PATH%/*}" ;;
      index) path="$INDEX_PATH" ;;
      search) path="$SEARCH_PATH" ;;
      agent_page) path="$AGENT_PAGE_PATH" ;;
    esac
    metric["$backend.$name.status"]="$(status_of "$base$path")"
    if [ "${metric[$backend.$name.status]}" = 200 ]; then
      wrk_run "$backend.$name" "$base$path"
    else
      log "$backend: $path answers ${metric[$backend.$name.status]}; not measured"
    fi
  done
  stop_nginx
  if [ "$resolve_status" = 200 ]; then
    wrk_run "$backend.resolve" "$url/api/v1/resolve" "$lua"
  else
    log "$backend: resolve answers $resolve_status; not measured"
  fi

  # First-time resolves: each of 1,000 agents' requests once. Cold: on a
  # server started just now. Warm: on a server that has finished its
  # start-up audit of the log (a background job that takes up to a quarter
  # of a core for several seconds after a start; a warm replica is past
  # it) and then resolved 1,000 other agents (most index entries cached,
  # no resolution). The floor is the core resolver over the same requests,
  # in memory. A pass takes about half a second, so one pass is one noisy
  # sample of a shared machine (its speed was seen to drift by a third
  # within minutes): each figure is the median of $resolve_rounds passes,
  # and the core, about half a second too, is measured right before and
  # right after each warm pass, so a slow spell of the machine weighs on
  # both sides of the ratio.
  local round audits
  for round in $(seq 1 "$resolve_rounds"); do
    stop_server
    start_server "$port"
    first_time_resolves "$backend.resolve_cold" "$url" "$data/out/resolve-many.json"
    stop_server
    audits="$(audits_logged)"
    start_server "$port"
    wait_for_audit "$audits"
    "$seed_bin" resolve "$url" "$data/out/resolve-warm.json" --concurrency "$resolve_conc" >/dev/null
    core_resolver "$backend"
    first_time_resolves "$backend.resolve_warm" "$url" "$data/out/resolve-many.json"
    core_resolver "$backend"
  done
  metric["$backend.solve_median_ms"]="$(median_of "$data/solve.passes" median_ms)"
  median_passes "$backend.resolve_cold"
  median_passes "$backend.resolve_warm"

  # Publish: 1 MiB containers (throughput against the verify + write floor)
  # and 1 KiB ones (the fixed work per publish), one at a time and 16 in
  # flight.
  publish_run "$backend.publish1" "$url" "$BENCH_KEY" "$mib" 48 1 --ceiling-dir "$data/registry/ceiling"
  # 512 of them: at 16 in flight 128 took a third of a second, most of it
  # the first wave's start (new connections, folders, the allocator).
  publish_run "$backend.publish16" "$url" "$BENCH_KEY" "$mib" 512 16 --ceiling-dir "$data/registry/ceiling"
  publish_run "$backend.small1" "$url" "$BENCH_KEY" 1024 300 1
  publish_run "$backend.small16" "$url" "$BENCH_KEY" 1024 2000 16

  # The whole log audited by the CLI, as a user would the first time (the
  # key pinned, every bundle fetched, the tree rebuilt, the root compared):
  # at least the seeded entries, which the checkpoint covered above.
  local cfg="$data/cli-config" out
  rm -rf "$cfg"
  mkdir -p "$cfg"
  t0="$(date +%s%N)"
  out="$(AGENTLANG_CONFIG_DIR="$cfg" "$cli_bin" --registry "$url" --json log verify 2>&1)" || true
  t1="$(date +%s%N)"
  metric["$backend.log_verify_s"]="$(python3 -c "print(round(($t1 - $t0) / 1e9, 2))")"
  metric["$backend.log_verify_entries"]="$(jq -r '.size // empty' <<<"$out" 2>/dev/null || true)"
  metric["$backend.log_verify_out"]="$(jq -r '"verified \(.verified)"' <<<"$out" 2>/dev/null || tr '\n' ' ' <<<"$out" | cut -c1-300)"
  log "$backend: agentlang log verify: ${metric[$backend.log_verify_s]} s: $out"

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
  drop_database
  # The uploads above leave about 1 GB of blobs; keep only the logs.
  rm -rf "$data/registry"
}

# What the transparency log costs a publish: the same publishes, 16 in
# flight, against this build and against the last revision without the log
# (BENCH_LOG_BASELINE), each on a fresh registry, alternating three times so
# that a drift of the machine hits both alike (the median is reported).
bench_log_cost() {
  local backend="$1" round variant bin port url
  data="$work/logcost-$backend"
  for round in 1 2 3; do
    for variant in log nolog; do
      bin="$registry_bin"
      [ "$variant" = nolog ] && bin="$baseline_bin"
      rm -rf "$data"
      mkdir -p "$data"
      export AGENTLANG_REGISTRY_DATA_DIR="$data/registry"
      fresh_database "$backend" "_logcost"
      port="$(free_port)"
      url="http://127.0.0.1:$port"
      start_server "$port" "$bin"
      register_publisher "$url" "$data/publisher" bench
      publish_run "$backend.logcost.$variant.$round.small" "$url" "$data/publisher/signing.pem" 1024 3000 16
      publish_run "$backend.logcost.$variant.$round.big" "$url" "$data/publisher/signing.pem" "$mib" 384 16
      stop_server
      drop_database
    done
  done
  rm -rf "$data"
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
  (cd "$dir" && exec ./node_modules/.bin/verdaccio --config "$dir/config.yaml" --listen "127.0.0.1:$port" >"$dir/verdaccio.log" 2>&1) &
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

# --- random-package reads at two catalog sizes -------------------------------------
# A different package each request, drawn uniformly from the whole catalog:
# almost every read of a large catalog is its first for that package, so
# these measure the first read, not the caches the repeated-path rows
# above are answered from. Each read's wrk run follows a /healthz run on
# the same server, and its ratio is taken against that one; the large
# catalog's ratios are compared with the small one's.

# The seed's search words (WORDS in server/testing/examples/seed_catalog.rs).
scale_words=(search web fetch pdf email calendar github slack sql csv image audio video translate
  summarize code review deploy monitor weather finance crm invoice maps shell browser vector
  embedding scrape notify)

# random_lua FILE KIND TOOLS AGENTS: a wrk script asking for a random
# package each request, R uniform in [0, TOOLS) (agents: [0, AGENTS)):
# version (/api/v1/tools/toolR/1.0.0), package (/api/v1/tools/toolR), index
# (/api/v1/index/tools/toolR), search (?q=WORD+toolR, WORD one of the
# seed's words) or agent (/agents/agentR). Each thread seeds its own
# sequence with its number.
random_lua() {
  local file="$1" kind="$2" n="$3" agents_n="$4" path
  case "$kind" in
    version) path='"/api/v1/tools/tool" .. math.random(0, n - 1) .. "/1.0.0"' ;;
    package) path='"/api/v1/tools/tool" .. math.random(0, n - 1)' ;;
    index) path='"/api/v1/index/tools/tool" .. math.random(0, n - 1)' ;;
    search) path='"/api/v1/search?q=" .. words[math.random(1, #words)] .. "+tool" .. math.random(0, n - 1)' ;;
    agent) path='"/agents/agent" .. math.random(0, agents - 1)' ;;
    *) echo "bench: random_lua: unknown kind $kind" >&2; exit 2 ;;
  esac
  cat >"$file" <<LUA
-- Written by deploy/bench/run.sh: GET $kind, a random package each request.
local words = {$(printf '"%s", ' "${scale_words[@]}")}
local n, agents = $n, $agents_n
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end
function init(args)
  math.randomseed(os.time() % 1000000 * 64 + (thread_number or 0))
  for _ = 1, 8 do math.random() end
end
request = function()
  return wrk.format(nil, $path)
end
LUA
}

# The path random_lua's KIND asks for with R = the last tool (agent): the
# request checked to answer 200 before the kind is measured.
probe_path() {
  local kind="$1" n="$2" agents_n="$3"
  case "$kind" in
    version) echo "/api/v1/tools/tool$((n - 1))/1.0.0" ;;
    package) echo "/api/v1/tools/tool$((n - 1))" ;;
    index) echo "/api/v1/index/tools/tool$((n - 1))" ;;
    search) echo "/api/v1/search?q=${scale_words[-1]}+tool$((n - 1))" ;;
    agent) echo "/agents/agent$((agents_n - 1))" ;;
  esac
}

bench_scaling() {
  local backend="$1" size n_agents key seed_json port url t0 t1 audits passes ms rendered kind lua probe smallest
  # As many agents at every size (BENCH_AGENTS, at most a tenth of the
  # smallest catalog), so the first-time resolves and agent pages of the
  # sizes compare: a pass of the same number of requests, with the same
  # share of them in its first wave.
  smallest="$(tr ' ' '\n' <<<"$scale_sizes" | grep . | sort -n | head -1)"
  n_agents=$((agents < smallest / 10 ? agents : smallest / 10))
  [ "$n_agents" -ge 1 ] || n_agents=1
  for size in $scale_sizes; do
    key="$backend.scale.$size"
    data="$work/$backend-scale-$size"
    rm -rf "$data"
    mkdir -p "$data/out"
    export AGENTLANG_REGISTRY_DATA_DIR="$data/registry"
    fresh_database "$backend" "_scale$size"
    metric["$key.agents"]="$n_agents"

    # Timed from exec to exit. Real containers only for the first 10 tools
    # (nothing here downloads them); PostgreSQL overlaps the writes of 4
    # transactions, SQLite the seed's default 2.
    log "$backend: seeding $size tools x 20 versions, $n_agents agents (random reads)"
    t0="$(date +%s%N)"
    seed_json="$("$seed_bin" seed "$data/out" --tools "$size" --agents "$n_agents" --real 10 \
      --concurrency "$([ "$backend" = postgres ] && echo 4 || echo 2)")"
    t1="$(date +%s%N)"
    log "$backend: seeded $seed_json"
    metric["$key.seed_wall_s"]="$(python3 -c "print(round(($t1 - $t0) / 1e9, 2))")"
    metric["$key.seed_versions"]="$(jq -r .tool_versions <<<"$seed_json")"
    if [ "$backend" = postgres ]; then
      # As for the per-backend figures; timed apart from the seed.
      t0="$(date +%s%N)"
      psql -q "${pg_admin%/*}/$pg_db" -c "VACUUM ANALYZE" >/dev/null
      t1="$(date +%s%N)"
      metric["$key.vacuum_s"]="$(python3 -c "print(round(($t1 - $t0) / 1e9, 1))")"
    else
      metric["$key.db_mib"]="$(du -m "$data/registry/registry.db" | cut -f1)"
    fi

    # The first start sequences the seeded log (in the background); the
    # figures are those of the start after it, once its start-up audit of
    # the log (a background job) is done.
    port="$(free_port)"
    url="http://127.0.0.1:$port"
    passes="$(passes_logged)"
    start_server "$port"
    metric["$key.first_startup_ms"]="$startup_ms"
    t0="$(date +%s%N)"
    wait_for_log "$url" "$(jq -r .log_entries <<<"$seed_json")" 1800 || true
    metric["$key.log_sequenced_s"]="$(python3 -c "print(round(($(date +%s%N) - $t0) / 1e9, 1))")"
    # The seed stores no answers: this first start renders them all,
    # as a registry does once after the migration that added them.
    wait_for_pass "$passes" 1800
    read -r ms rendered <<<"$(last_pass)"
    metric["$key.documents_ms"]="$ms"
    metric["$key.documents_rendered"]="$rendered"
    stop_server
    audits="$(audits_logged)"
    passes="$(passes_logged)"
    start_server "$port"
    metric["$key.startup_ms"]="$startup_ms"
    sleep 2
    metric["$key.idle_rss_mib"]="$(($(rss_kib "$server_pid") / 1024))"
    metric["$key.idle_anon_mib"]="$(($(anon_kib "$server_pid") / 1024))"
    log "$backend, $size tools: ready in ${metric[$key.first_startup_ms]} ms after the seed," \
      "in $startup_ms ms once the log was sequenced (${metric[$key.log_sequenced_s]} s);" \
      "idle RSS ${metric[$key.idle_rss_mib]} MiB (private ${metric[$key.idle_anon_mib]} MiB)"
    wait_for_audit "$audits" 600
    wait_for_pass "$passes" 600

    # First-time resolves first, before the random reads fill the caches
    # they would share: each agent's request once.
    wrk_run "$key.resolve.healthz" "$url/healthz"
    first_time_resolves "$key.resolve" "$url" "$data/out/resolve-many.json"
    median_passes "$key.resolve"
    for kind in version package index search agent; do
      lua="$work/random-$kind-$size.lua"
      random_lua "$lua" "$kind" "$size" "$n_agents"
      probe="$(probe_path "$kind" "$size" "$n_agents")"
      metric["$key.$kind.status"]="$(status_of "$url$probe")"
      wrk_run "$key.$kind.healthz" "$url/healthz"
      if [ "${metric[$key.$kind.status]}" = 200 ]; then
        wrk_run "$key.$kind" "$url/" "$lua"
      else
        log "$backend: $probe answers ${metric[$key.$kind.status]}; random $kind reads not measured"
      fi
    done
    metric["$key.rss_after_mib"]="$(($(rss_kib "$server_pid") / 1024))"
    metric["$key.anon_after_mib"]="$(($(anon_kib "$server_pid") / 1024))"
    # At the larger sizes, the same reads confined to the smallest size's
    # number of tools: as the small catalog's reads are, every package is
    # cached after its first read. Beside the small catalog's figures
    # they tell what a larger catalog costs from what a cache miss costs.
    if [ "$size" != "$smallest" ]; then
      for kind in version package index search; do
        [ "${metric[$key.$kind.status]}" = 200 ] || continue
        lua="$work/random-$kind-$size-hot.lua"
        random_lua "$lua" "$kind" "$smallest" "$n_agents"
        wrk_run "$key.$kind.hot.healthz" "$url/healthz"
        wrk_run "$key.$kind.hot" "$url/" "$lua"
      done
    fi
    stop_server
    drop_database
    rm -rf "$data/registry"
  done
}

# --- run -----------------------------------------------------------------------------
# Every registry of the run: no rate limits (one client sends everything),
# warnings only, uploads up to 64 MiB.
export AGENTLANG_REGISTRY_JWT_SECRET="072062adf5db2e4772b96b2d8ebaaed3193e61e5abc23c58f8ece8fcad4ff991"
export AGENTLANG_REGISTRY_RATE_LIMITS=off
# Warnings only, and the end of each start-up audit of the log and of each
# pass over the stored answers (see wait_for_audit, wait_for_pass).
export AGENTLANG_REGISTRY_LOG=warn,agentlang_registry_app::tlog=info,agentlang_registry_app::stored_answers=info
export AGENTLANG_REGISTRY_MAX_UPLOAD_BYTES=$((64 * mib))
# One account publishes 16 at a time (the default allows 4 per account).
export AGENTLANG_REGISTRY_MAX_CONCURRENT_UPLOADS_PER_ACCOUNT=16
if runs backend; then
  for backend in $backends; do
    bench_backend "$backend"
  done
fi
if [ -n "$baseline_bin" ]; then
  for backend in $backends; do
    bench_log_cost "$backend"
  done
fi
runs verdaccio && bench_verdaccio
if runs scaling && [ -n "$scale_sizes" ]; then
  for backend in $backends; do
    bench_scaling "$backend"
  done
fi

# --- report ----------------------------------------------------------------------------
# RESULTS.md: a short header, one table (a row per measure: its target, and
# per backend the figure, its ratio and whether the target is met), then the
# Decisions section of the previous RESULTS.md, unchanged.
for k in "${!metric[@]}"; do printf '%s\t%s\n' "$k" "${metric[$k]}"; done >"$work/metrics.tsv"
python3 - "$work/metrics.tsv" "$bench_dir/RESULTS.md" "$backends" "$duration" "$conns" "$threads" "$tools" "$agents" "$real" \
  "$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)" "$resolve_conc" "${baseline_rev:-}" "$resolve_rounds" \
  "$scale_sizes" "$parts" <<'PY'
import os, platform, re, shlex, subprocess, sys, time
tsv, out, backends, duration, conns, threads, tools, agents, real, commit, resolve_conc, baseline, resolve_rounds, scale_sizes, parts = sys.argv[1:]
scale_sizes = scale_sizes.split()
parts = parts.split()
def runs(part): return part in parts
backends = backends.split()
m = dict(line.rstrip("\n").split("\t", 1) for line in open(tsv) if "\t" in line)
cores = os.cpu_count() or 1
big_mib = os.environ.get("BENCH_BIG_MIB", "50")
def f(key, default=None):
    v = m.get(key, default)
    try: return float(v)
    except (TypeError, ValueError): return None
def num(v, digits=0):
    return "n/a" if v is None else f"{v:,.{digits}f}"
def g(key): return m.get(key, "n/a")
def met(ok): return "met" if ok else "NOT met"
def share(a, b):
    return None if a is None or not b else a / b

# The hand-written Decisions section (from its heading to the end of the
# file) is kept as it is; everything above it is regenerated.
try:
    old = open(out).read()
except OSError:
    old = ""
at = re.search(r"^## Decisions\b", old, re.M)
if at:
    decisions = old[at.start():]
else:
    decisions = ("## Decisions\n\n"
                 "(Hand-written, kept by run.sh: each decision that stands, with the measured figure that justified it and how it was measured, in one line.)\n")

# The command line: the BENCH_* settings it was run with (a password in a
# database URL is not written down).
def redacted(value):
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", value)
settings = " ".join(f"{k}={shlex.quote(redacted(v))}" for k, v in sorted(os.environ.items()) if k.startswith("BENCH_"))
command = (settings + " " if settings else "") + "deploy/bench/run.sh"
try:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip() or "?"
except OSError:
    node = "?"

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
mem = next((int(l.split()[1]) // 1024 for l in open("/proc/meminfo") if l.startswith("MemTotal")), 0)
lines = []
lines.append("# Benchmark results\n")
lines.append("Written by `deploy/bench/run.sh` on each run: everything above \"Decisions\" is regenerated, the Decisions section is kept as written.\n")
lines.append(f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}, {os.environ.get('BENCH_PROFILE', 'release')} build")
lines.append(f"- machine: {cores} cores ({cpu}), {mem:,} MiB RAM, {platform.system()} {platform.release()}; wrk, nginx and the server share the cores, so absolute figures are lower than on separate machines: the targets are ratios measured side by side in this run")
lines.append(f"- command: `{command}` (backends: {' '.join(backends) or 'none'})")
if runs("backend"):
    lines.append(f"- figures: wrk -t{threads} -c{conns} -d{duration} --latency on loopback, one run per row after a 3 s warm-up; first-time resolves {resolve_conc} in flight, each figure the median of {resolve_rounds} passes on a fresh server (warm passes once its start-up audit of the log is done and 1,000 other agents are resolved); the core resolver's figure the median of its passes right before and right after each warm pass; publishes one run each" + (", the log's cost the median of three alternating rounds" if baseline else ""))
    lines.append(f"- catalog: {tools} tools x 20 versions ({num(f('sqlite.seed_edges') or f('postgres.seed_edges'))} dependency edges), {agents} agents; the first {real} tools' versions are real signed containers, the rest content-addressed placeholders (see server/testing/examples/seed_catalog.rs)")
if runs("scaling") and scale_sizes:
    # The agents the scaling part seeded (BENCH_AGENTS, capped by the smallest size).
    scale_agents = next((m[k] for b in backends for n in scale_sizes
                         if (k := f"{b}.scale.{n}.agents") in m), agents)
    lines.append(f"- random reads: catalogs of {' and '.join(f'{int(n):,}' for n in scale_sizes)} tools x 20 versions, each seeded on a fresh database with `seed_catalog seed OUT --tools N --agents A --real 10` (A = {scale_agents}: BENCH_AGENTS = {agents}, at most a tenth of the smallest N, the same at every size; --concurrency 4 on PostgreSQL), timed from exec to exit; the server started once to sequence the seeded log, then again for the figures (start-up, idle RSS 2 s after ready; the reads once its start-up audit of the log is done); each read a wrk -t{threads} -c{conns} -d{duration} --latency run after a 3 s warm-up, a package drawn at random per request (R uniform over the catalog; search: a random seed word + toolR), right after a /healthz run on the same server whose req/s its ratio is taken against; the first-time resolve every agent's request posted once, {resolve_conc} in flight, first on that server")
lines.append("- blobs on the local filesystem for both backends (PostgreSQL is the metadata backend measured); PostgreSQL 15 on the same machine; nginx serves the registry's own blob files as the static-file reference\n")

columns = backends or ["figure"]
lines.append("| measure | target | " + " | ".join(columns) + " |")
lines.append("|---|---|" + "---|" * len(columns))
targets_met = {b: [0, 0] for b in backends}
def row(label, target, fn, part="backend"):
    """A row of PART's figures (left out when PART was not run)."""
    if not backends or not runs(part):
        return
    cells = [fn(b) for b in backends]
    for b, cell in zip(backends, cells):
        targets_met[b][0] += len(re.findall(r"(?<!NOT )met\)", cell))
        targets_met[b][1] += len(re.findall(r"met\)", cell))
    lines.append(f"| {label} | {target} | " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")

# Checks of one figure against its target: the figure, then "(met)".
def ratio(a, b_, goal, of):
    r = share(a, b_)
    return f"{of} not measured" if r is None else f"{r:.3f} {of} ({met(r >= goal)})"
def at_most(value, goal, text):
    return f"{text} ({met(value <= goal)})" if value is not None else f"{text} (not measured)"

def wrk_cell(b, key, healthz=None, nginx=None, bytes_too=False, p99_goal=None):
    """A wrk row's figures; healthz and nginx: None (no ratio), 0 (the
    ratio, no target) or the target the ratio must reach."""
    rps = f(f"{b}.{key}.rps")
    if not rps:
        return f"not measured (status {m.get(f'{b}.{key}.status', '?')})"
    p99 = f(f"{b}.{key}.p99")
    p99_text = f"p99 {num(p99, 2)} ms"
    if p99_goal is not None:
        p99_text = at_most(p99, p99_goal, p99_text)
    cell = f"{num(rps)} req/s, p50 {num(f(f'{b}.{key}.p50'), 2)} ms, {p99_text}"
    if bytes_too:
        cell += f", {num((f(f'{b}.{key}.bytes_per_s') or 0) / 1e6)} MB/s"
    extras = []
    if healthz is not None:
        if healthz:
            extras.append(ratio(rps, f(f"{b}.healthz.rps"), healthz, "of /healthz"))
        else:
            extras.append(f"{num(share(rps, f(f'{b}.healthz.rps')), 3)} of /healthz")
    if nginx is not None:
        of, goal = nginx
        field = "bytes_per_s" if bytes_too else "rps"
        extras.append(ratio(f(f"{b}.{key}.{field}"), f(f"{b}.{of}.{field}"), goal, "of nginx"))
    if extras:
        cell += "; " + ", ".join(extras)
    if m.get(f"{b}.{key}.errors", "0") != "0":
        cell += f", {m[f'{b}.{key}.errors']} non-2xx"
    if m.get(f"{b}.{key}.timeouts", "0") not in ("0", ""):
        cell += f", {m[f'{b}.{key}.timeouts']} timeouts"
    return cell
def first_time(b, key, p99_goal, floor_goal=None):
    rps = f(f"{b}.{key}.rps")
    if rps is None:
        return "not measured"
    cell = f"{num(rps)} req/s, p50 {num(f(f'{b}.{key}.p50'), 2)} ms, " + at_most(f(f"{b}.{key}.p99"), p99_goal, f"p99 {num(f(f'{b}.{key}.p99'), 2)} ms")
    if floor_goal is not None:
        cell += "; " + ratio(rps, solver_floor(b), floor_goal, f"of {cores} cores / core median")
    return cell + f" {g(f'{b}.{key}.statuses')}"
def solver_floor(b):
    median = f(f"{b}.solve_median_ms")
    return None if not median else cores / (median / 1000)
def publish_mb(b, k, goal=None):
    r = share(f(f"{b}.{k}.mbps"), f(f"{b}.{k}.floor"))
    of_floor = f"{num(r, 2)} of it" if goal is None else ("not measured" if r is None else f"{r:.3f} of it, {met(r >= goal)}")
    return f"{num(f(f'{b}.{k}.mbps'), 1)} MB/s; verify + write floor {num(f(f'{b}.{k}.floor'))} MB/s ({of_floor}); SHA-256 + write ceiling {num(f(f'{b}.{k}.ceiling'))} MB/s {g(f'{b}.{k}.statuses')}"
def logcost(b, size):
    def median(variant):
        vals = sorted(x for x in (f(f"{b}.logcost.{variant}.{r}.{size}.per_s") for r in (1, 2, 3)) if x)
        return vals[len(vals) // 2] if vals else None
    return median("log"), median("nolog")
v = f("verdaccio.packument.rps")

row("seed (tool versions, seconds)", "", lambda b: f"{num(f(f'{b}.seed_versions'))} in {num(f(f'{b}.seed_seconds'), 1)} s")
row("start-up to /readyz, seeded", "<= 1 s", lambda b: at_most(f(f"{b}.startup_ms"), 1000, f"{g(f'{b}.startup_ms')} ms") + f"; after the run {g(f'{b}.restart_ms')} ms; the seeded log sequenced {g(f'{b}.log_sequenced_s')} s after")
row("idle RSS", "", lambda b: f"{g(f'{b}.idle_rss_mib')} MiB")
row("GET /healthz", "", lambda b: wrk_cell(b, "healthz"))
row("nginx: the 1 KiB container's file", "", lambda b: wrk_cell(b, "nginx_1k", bytes_too=True))
row("GET download, 1 KiB payload", ">= 0.5 x /healthz; >= 1.0 x nginx (req/s)", lambda b: f"{g(f'{b}.download_1k.bytes')} B: " + wrk_cell(b, "download_1k", healthz=0.5, nginx=("nginx_1k", 1.0)))
row("nginx: the 1 MiB container's file", "", lambda b: wrk_cell(b, "nginx_1m", bytes_too=True))
row("GET download, 1 MiB payload", ">= 0.8 x nginx (bytes/s)", lambda b: f"{g(f'{b}.download_1m.bytes')} B: " + wrk_cell(b, "download_1m", nginx=("nginx_1m", 0.8), bytes_too=True))
row("GET version record", ">= 0.5 x /healthz", lambda b: wrk_cell(b, "version", healthz=0.5))
row("GET package record (20 versions)", "", lambda b: wrk_cell(b, "package", healthz=0))
row("GET index (20 versions)", "", lambda b: wrk_cell(b, "index", healthz=0))
row("GET agent page (HTML)", ">= 0.5 x /healthz", lambda b: wrk_cell(b, "agent_page", healthz=0.5))
row("GET search", ">= 0.1 x /healthz; p99 <= 20 ms", lambda b: wrk_cell(b, "search", healthz=0.1, p99_goal=20))
row("POST resolve, one agent repeated", ">= 0.5 x /healthz; >= 10 x Verdaccio's packument GET", lambda b: wrk_cell(b, "resolve", healthz=0.5) + ("; " + ratio(f(f"{b}.resolve.rps"), v, 10, "x Verdaccio") if f(f"{b}.resolve.rps") else ""))
row("core resolver alone, the same 1,000 agents (median)", "", lambda b: f"{num(f(f'{b}.solve_median_ms'), 3)} ms: {cores} cores / median = {num(solver_floor(b))} resolves/s")
row("POST resolve, 1,000 distinct agents once each, cold start", "p99 <= 250 ms", lambda b: first_time(b, "resolve_cold", 250))
row("POST resolve, 1,000 distinct agents once each, after 1,000 others", f">= 0.5 x ({cores} cores / core median); p99 <= 50 ms", lambda b: first_time(b, "resolve_warm", 50, 0.5))
row("publish 1 MiB, 1 in flight", "", lambda b: publish_mb(b, "publish1"))
row("publish 1 MiB, 16 in flight", ">= 0.8 x verify + write floor", lambda b: publish_mb(b, "publish16", 0.8))
row("publish 1 KiB, 1 in flight", "", lambda b: f"{num(f(f'{b}.small1.per_s'))}/s ({num(1000 / (f(f'{b}.small1.per_s') or 1), 2)} ms each, round trip included) {g(f'{b}.small1.statuses')}")
row("publish 1 KiB, 16 in flight", ">= 1,000/s", lambda b: ("not measured" if f(f"{b}.small16.per_s") is None else f"{num(f(f'{b}.small16.per_s'))}/s ({met(f(f'{b}.small16.per_s') >= 1000)})") + f" {g(f'{b}.small16.statuses')}")
if baseline:
    for size, label in (("small", "3,000 x 1 KiB"), ("big", "384 x 1 MiB")):
        def cell(b, size=size):
            with_log, without = logcost(b, size)
            if not with_log or not without:
                return "not measured"
            return f"{num(with_log)}/s with, {num(without)}/s without: the log costs {100 * (1 - with_log / without):.1f}% ({met(1 - with_log / without <= 0.10)})"
        row(f"the transparency log's cost: {label} publishes, 16 in flight, against {baseline} (the revision before the log), a fresh registry each", "<= 10%", cell, "logcost")
row("agentlang log verify, the whole log (first use)", "", lambda b: f"{g(f'{b}.log_verify_s')} s for {num(f(f'{b}.log_verify_entries'))} entries ({m.get(f'{b}.log_verify_out', '')})")
row("RSS after the read and publish benchmarks (caches filled)", "", lambda b: f"{g(f'{b}.rss_after_reads_mib')} MiB")
row(f"16 x {big_mib} MiB uploads on a fresh server: RSS idle before / peak / 5 s after", "growth (peak over before) <= 64 MiB", lambda b: f"{g(f'{b}.rss_before_mib')} / {g(f'{b}.rss_peak_mib')} / {g(f'{b}.rss_after_idle_mib')} MiB (VmHWM {g(f'{b}.hwm_mib')}), " + ("growth not measured" if f(f"{b}.rss_growth_mib") is None else f"growth {g(f'{b}.rss_growth_mib')} MiB ({met(f(f'{b}.rss_growth_mib') <= 64)})") + f", {num(f(f'{b}.big.mbps'))} MB/s {g(f'{b}.big.statuses')}")
if runs("scaling") and scale_sizes:
    # The random-package reads: per read, a row per catalog size (small
    # first), each ratio against the /healthz run right before it on the
    # same server; at the large size the targets, and the ratio compared
    # with the small size's.
    small, large = scale_sizes[0], scale_sizes[-1]
    compare = len(scale_sizes) > 1
    def sk(b, size, name):
        return f"{b}.scale.{size}.{name}"
    def tools_label(size):
        return f"{int(size):,} tools"
    def read_share(b, size, kind):
        return share(f(sk(b, size, f"{kind}.rps")), f(sk(b, size, f"{kind}.healthz.rps")))
    for size in scale_sizes:
        def seed_cell(b, size=size):
            secs, versions = f(sk(b, size, "seed_wall_s")), f(sk(b, size, "seed_versions"))
            if not secs or not versions:
                return "not run"
            rate = versions / secs
            text = f"{num(versions)} versions, {g(sk(b, size, 'agents'))} agents: {num(secs, 1)} s = {num(rate)} versions/s"
            if size == large:
                text += "; 2,000,000 versions at that rate: " + at_most(2e6 / rate / 60, 15, f"{2e6 / rate / 60:.1f} min")
            if f(sk(b, size, "db_mib")) is not None:
                text += f"; database {g(sk(b, size, 'db_mib'))} MiB"
            if f(sk(b, size, "vacuum_s")) is not None:
                text += f"; then VACUUM ANALYZE {g(sk(b, size, 'vacuum_s'))} s (not counted)"
            return text
        row(f"seed_catalog seed, {tools_label(size)} x 20 versions (wall time)", "2,000,000 versions < 15 min (extrapolated)" if size == large else "", seed_cell, "scaling")
    for size in scale_sizes:
        def startup_cell(b, size=size):
            first, again = f(sk(b, size, "first_startup_ms")), f(sk(b, size, "startup_ms"))
            if first is None:
                return "not run"
            return (at_most(first, 1000, f"first start after the seed {g(sk(b, size, 'first_startup_ms'))} ms") + "; "
                    + at_most(again, 1000, f"once the seeded log was sequenced ({g(sk(b, size, 'log_sequenced_s'))} s) {g(sk(b, size, 'startup_ms'))} ms"))
        row(f"start-up to /readyz, {tools_label(size)}", "<= 1 s", startup_cell, "scaling")
    for size in scale_sizes:
        def documents_cell(b, size=size):
            ms = f(sk(b, size, "documents_ms"))
            if ms is None:
                return "not run"
            return (f"{int(f(sk(b, size, 'documents_rendered'))):,} index entries and package records rendered and stored in {ms / 1000:.1f} s"
                    " by the first start after the seed (in the background, while it answered)")
        row(f"answers stored after the seed, {tools_label(size)}", "", documents_cell, "scaling")
    for size in scale_sizes:
        def rss_cell(b, size=size):
            idle = f(sk(b, size, "idle_anon_mib"))
            if idle is None:
                return "not run"
            return (at_most(idle, 64, f"private idle {g(sk(b, size, 'idle_anon_mib'))} MiB (2 s after ready)")
                    + f", after the random reads {g(sk(b, size, 'anon_after_mib'))} MiB; VmRSS with SQLite's mapped file pages"
                    + f" {g(sk(b, size, 'idle_rss_mib'))} / {g(sk(b, size, 'rss_after_mib'))} MiB")
        row(f"RSS, {tools_label(size)}", "private (RssAnon) idle <= 64 MiB", rss_cell, "scaling")
    kinds = (("resolve", "first-time resolve"), ("version", "version record"), ("package", "package record"),
             ("index", "index entry"), ("search", "search"), ("agent", "agent page"))
    for size in scale_sizes:
        def healthz_cell(b, size=size):
            runs_ = sorted(x for x in (f(sk(b, size, f"{k}.healthz.rps")) for k, _ in kinds) if x)
            if not runs_:
                return "not run"
            p99s = sorted(x for x in (f(sk(b, size, f"{k}.healthz.p99")) for k, _ in kinds) if x is not None)
            return f"{num(runs_[len(runs_) // 2])} req/s median of {len(runs_)} runs, one right before each read below ({num(runs_[0])} to {num(runs_[-1])}); p99 up to {num(p99s[-1] if p99s else None, 2)} ms"
        row(f"GET /healthz beside the random reads, {tools_label(size)}", "", healthz_cell, "scaling")
    for kind, what in kinds:
        for size in scale_sizes:
            def cell(b, size=size, kind=kind):
                healthz = f(sk(b, size, f"{kind}.healthz.rps"))
                if kind == "resolve":
                    rps = f(sk(b, size, "resolve.rps"))
                    if rps is None:
                        return "not run"
                    text = f"{num(rps)} req/s, p50 {num(f(sk(b, size, 'resolve.p50')), 2)} ms, p99 {num(f(sk(b, size, 'resolve.p99')), 2)} ms {g(sk(b, size, 'resolve.statuses'))}"
                else:
                    if f(sk(b, size, f"{kind}.healthz.rps")) is None:
                        return "not run"
                    rps = f(sk(b, size, f"{kind}.rps"))
                    text = wrk_cell(b, f"scale.{size}.{kind}", p99_goal=20 if kind == "search" and size == large else None)
                r = share(rps, healthz)
                if r is None:
                    return text
                text += f"; /healthz right before {num(healthz)} req/s: "
                if size != large:
                    return text + f"{r:.3f} of it"
                text += ratio(rps, healthz, 0.5, "of it")
                if compare:
                    r_small = read_share(b, small, kind)
                    text += "; " + (f"the {int(small):,}-tool ratio not measured" if not r_small else
                                    f"{r / r_small:.3f} of the {int(small):,}-tool ratio ({met(r / r_small >= 0.8)})")
                return text
            target = ""
            if size == large:
                target = ">= 0.5 x /healthz" + (f"; >= 0.8 x the {int(small):,}-tool ratio" if compare else "") + ("; p99 <= 20 ms" if kind == "search" else "")
            label = {"resolve": f"first-time resolve, each agent's request once ({resolve_conc} in flight)",
                     "search": "random search (?q=WORD+toolR)"}.get(kind, f"random {what}")
            row(f"{label}, {tools_label(size)}", target, cell, "scaling")
    for kind, what in kinds:
        if kind in ("resolve", "agent") or not compare:
            continue
        def hot_cell(b, kind=kind):
            rps, healthz = f(sk(b, large, f"{kind}.hot.rps")), f(sk(b, large, f"{kind}.hot.healthz.rps"))
            r, r_small = share(rps, healthz), read_share(b, small, kind)
            if r is None:
                return "not run"
            text = wrk_cell(b, f"scale.{large}.{kind}.hot") + f"; /healthz right before {num(healthz)} req/s: {r:.3f} of it"
            if r_small:
                text += f"; {r / r_small:.3f} of the {int(small):,}-tool catalog's ratio"
            return text
        row(f"reference: random {what} among tools 0 to {int(small) - 1:,} of the {tools_label(large)} (each cached after its first read, as in the {int(small):,}-tool catalog)", "", hot_cell, "scaling")
verdaccio = f"{num(v)} req/s, p50 {num(f('verdaccio.packument.p50'), 2)} ms, p99 {num(f('verdaccio.packument.p99'), 2)} ms"
if runs("verdaccio") and backends: lines.append(f"| Verdaccio 6.8 (Node {node}), same wrk settings, GET of a {g('verdaccio.versions')}-version packument ({g('verdaccio.packument_bytes')} bytes) | reference | " + " | ".join([verdaccio] + ["(the same run)"] * (len(columns) - 1)) + " |")
if backends:
    lines.append("| targets met | | " + " | ".join(f"{targets_met[b][0]} of {targets_met[b][1]}" for b in backends) + " |")
table = "\n".join(lines) + "\n"
open(out, "w").write(table + "\n" + decisions)
print(table)
print("(the Decisions section of the previous RESULTS.md kept)" if at else "(no Decisions section found: a placeholder written)")
PY
log "wrote $bench_dir/RESULTS.md"
