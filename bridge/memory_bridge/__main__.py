"""`python -m memory_bridge [--http]`: the bridge without the memctl CLI (e.g. in a container)."""

from __future__ import annotations

import sys

from ._errors import ConfigError
from ._serve import run_bridge
from ._settings import load_settings


def main(argv: list[str]) -> int:
    try:
        settings = load_settings()
        run_bridge(settings, http="--http" in argv)
    except ConfigError as exc:
        print(f"memory_bridge: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
