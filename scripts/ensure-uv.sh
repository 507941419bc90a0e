#!/usr/bin/env bash
# Source me: puts `uv` on PATH, installing it from the Python package index if missing.
if ! command -v uv >/dev/null 2>&1; then
    export PATH="$HOME/.local/bin:$PATH"
fi
if ! command -v uv >/dev/null 2>&1; then
    echo "installing uv (the project's Python package manager)..." >&2
    python3 -m pip install --quiet uv 2>/dev/null \
        || python3 -m pip install --quiet --user --break-system-packages uv \
        || { echo "could not install uv: install it with pip, then re-run" >&2; exit 1; }
    hash -r
fi
