#!/usr/bin/env bash
# Checks the deployment files as far as a machine without Docker allows:
#   - deploy/nginx.conf passes `nginx -t` (upstream names resolved to
#     127.0.0.1 in a copy, unless /etc/hosts already knows them);
#   - docker-compose.yml validates against the Compose specification's JSON
#     schema (shipped in the PyPI docker-compose 1.29.2 wheel, fetched once);
#   - deploy/registry.env sets only variables the registry or object_store
#     reads, and deploy/Dockerfile keeps its shape (multi-stage, non-root,
#     health check).
# The registry itself parses registry.env and registry.example.toml in
# `cargo test -p agentlang-registry --test replicas`.
# Not part of `cargo test`; needs nginx, python3 with PyYAML and jsonschema.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${AGENTLANG_CHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentlang-deploy-check}"
mkdir -p "$cache"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0
ok() { printf 'ok    %s\n' "$1"; }
fail() { printf 'FAIL  %s\n' "$1"; failures=$((failures + 1)); }

# --- nginx -------------------------------------------------------------------
command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install nginx)" >&2; exit 2; }
conf="$work/nginx.conf"
if getent hosts registry-1 >/dev/null && getent hosts registry-2 >/dev/null; then
  cp "$root/deploy/nginx.conf" "$conf"
else
  sed -E 's/server registry-[0-9]+:8080/server 127.0.0.1:8080/' "$root/deploy/nginx.conf" >"$conf"
fi
if nginx -t -q -p "$work" -c "$conf" -g "pid $work/nginx.pid; error_log stderr;" 2>"$work/nginx.err"; then
  ok "deploy/nginx.conf: nginx -t"
else
  cat "$work/nginx.err" >&2
  fail "deploy/nginx.conf: nginx -t"
fi

# --- docker-compose.yml against the Compose specification ---------------------
schema="$cache/compose_spec.json"
if [ ! -s "$schema" ]; then
  python3 -m pip download -q --no-deps --dest "$work/wheel" docker-compose==1.29.2
  python3 - "$work/wheel" "$schema" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/docker_compose-1.29.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    open(sys.argv[2], "wb").write(z.read("compose/config/compose_spec.json"))
PY
fi
if python3 - "$schema" "$root/docker-compose.yml" <<'PY'
import json, sys
import jsonschema, yaml
schema = json.load(open(sys.argv[1]))
doc = yaml.safe_load(open(sys.argv[2]))  # resolves the x-registry anchor and << merges
errors = list(jsonschema.Draft201909Validator(schema).iter_errors(doc))
for e in errors:
    print("  " + "/".join(map(str, e.path)) + ": " + e.message, file=sys.stderr)
services = doc.get("services", {})
replicas = [n for n in services if n.startswith("registry-")]
problems = []
if len(replicas) < 2:
    problems.append("fewer than two registry replicas")
for needed in ("postgres", "minio", "nginx"):
    if needed not in services:
        problems.append(f"no {needed} service")
for p in problems:
    print("  " + p, file=sys.stderr)
sys.exit(1 if errors or problems else 0)
PY
then
  ok "docker-compose.yml: Compose specification schema, postgres + minio + nginx + >= 2 replicas"
else
  fail "docker-compose.yml: Compose specification schema"
fi

# Every upstream server in nginx.conf is a compose service, and back.
upstreams="$(grep -oE 'server registry-[0-9]+:8080' "$root/deploy/nginx.conf" | awk '{print $2}' | cut -d: -f1 | sort)"
services="$(grep -oE '^  registry-[0-9]+:' "$root/docker-compose.yml" | tr -d ' :' | sort)"
if [ "$upstreams" = "$services" ]; then
  ok "nginx upstream lists exactly the compose replicas ($(echo $services))"
else
  fail "nginx upstream ($(echo $upstreams)) differs from compose replicas ($(echo $services))"
fi

# --- registry.env -------------------------------------------------------------
known='^(AGENTLANG_REGISTRY_(CONFIG|BIND|PUBLIC_URL|DATA_DIR|DATABASE_URL|STORAGE_URL|MAX_UPLOAD_BYTES|REGISTRATION|RATE_LIMITS|TRUSTED_PROXIES|JWT_SECRET|ADMINS|WORKERS|LOG|TLOG_KEY|TLOG_KEY_FILE|TLOG_ORIGIN|TLOG_WITNESSES|SWEEP_INTERVAL_SECS|SWEEP_GRACE_SECS|RESOLVE_TIMEOUT_MS|DOWNLOAD_REDIRECT_SECS|BLOB_CACHE_MIB|FRESHNESS_WINDOW_MS|BODY_IDLE_TIMEOUT_SECS|UPLOAD_TIMEOUT_SECS|REQUEST_TIMEOUT_SECS|MAX_CONCURRENT_UPLOADS|MAX_CONCURRENT_UPLOADS_PER_ACCOUNT|DATABASE_TIMEOUT_SECS|STORAGE_TIMEOUT_SECS)|AWS_(ENDPOINT|ALLOW_HTTP|REGION|ACCESS_KEY_ID|SECRET_ACCESS_KEY|SESSION_TOKEN))$'
unknown="$(grep -vE '^\s*(#|$)' "$root/deploy/registry.env" | cut -d= -f1 | grep -vE "$known" || true)"
if [ -z "$unknown" ]; then
  ok "deploy/registry.env: only variables the registry reads"
else
  fail "deploy/registry.env: unknown variables: $(echo $unknown)"
fi

# --- Dockerfile shape -----------------------------------------------------------
df="$root/deploy/Dockerfile"
if [ "$(grep -cE '^FROM ' "$df")" -ge 2 ] && grep -qE '^USER ' "$df" \
   && ! grep -qE '^USER (root|0)(:|\s|$)' "$df" \
   && grep -qE '^HEALTHCHECK ' "$df" && grep -qE '^COPY --from=build ' "$df"; then
  ok "deploy/Dockerfile: multi-stage, non-root user, health check"
else
  fail "deploy/Dockerfile: expected multi-stage, a non-root USER and a HEALTHCHECK"
fi
if command -v hadolint >/dev/null; then
  if hadolint "$df"; then ok "deploy/Dockerfile: hadolint"; else fail "deploy/Dockerfile: hadolint"; fi
fi

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "all deployment checks passed"
