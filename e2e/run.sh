#!/usr/bin/env bash
# Browser test of the web page: starts `agora serve` on a temporary study file and a free
# loopback port, then runs e2e/vote.test.mjs (a facilitator and three participants voting
# in headless Chromium). Screenshots go to target/e2e/*.png. The server is always stopped.
#
#   bash e2e/run.sh                 # after `cargo build --release -p agora-cli` and `npm ci` in e2e/
#
# AGORA_BIN overrides the binary (default target/release/agora); CHROMIUM the browser
# (default /usr/bin/chromium: Debian's `apt-get install chromium`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
bin="${AGORA_BIN:-$root/target/release/agora}"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export AGORA_E2E_OUT="${AGORA_E2E_OUT:-$root/target/e2e}"

fail() { echo "e2e: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "$bin not found: build it with \`cargo build --release -p agora-cli\` (or set AGORA_BIN)"
[ -x "$CHROMIUM" ] || fail "$CHROMIUM not found: \`apt-get install -y chromium chromium-driver\` (or set CHROMIUM)"
command -v node >/dev/null || fail "node not found (Node.js 20 or newer)"
[ -d "$here/node_modules/playwright-core" ] || fail "playwright-core missing: run \`npm ci\` in e2e/"

work="$(mktemp -d "${TMPDIR:-/tmp}/agora-e2e.XXXXXX")"
server=""
cleanup() {
    if [ -n "$server" ] && kill -0 "$server" 2>/dev/null; then
        kill "$server" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$server" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$AGORA_E2E_OUT"
rm -f "$AGORA_E2E_OUT"/*.png
port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
admin="e2e-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
export AGORA_E2E_BASE="http://127.0.0.1:$port"
export AGORA_E2E_ADMIN="$admin"

start=$(date +%s)
"$bin" serve --db "$work/e2e.db" --addr "127.0.0.1:$port" --admin-token "$admin" >"$work/server.log" 2>&1 &
server=$!
echo "e2e: agora serve (pid $server) on $AGORA_E2E_BASE, study file $work/e2e.db"

status=0
(cd "$here" && node --test --test-reporter=spec vote.test.mjs) || status=$?
if [ "$status" -ne 0 ]; then
    echo "e2e: FAILED; the server's log:" >&2
    tail -n 40 "$work/server.log" >&2 || true
    exit "$status"
fi
echo "e2e: screenshots in $AGORA_E2E_OUT: $(cd "$AGORA_E2E_OUT" && ls -- *.png | tr '\n' ' ')"
echo "e2e: ok in $(( $(date +%s) - start )) s"
