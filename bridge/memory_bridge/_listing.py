"""The `tools/list` answer, cached on disk, so a cold start answers it without building the tools.

Building the tools (importing their modules, then the SDK's argument models and output
schemas) is most of what the bridge adds to the SDK's own start-up, and an agent spawns a
stdio bridge for every session. The answer depends only on the bridge's code, the SDK,
pydantic and the Python running them, so it is cached under a key hashed from exactly those:
every source file of the bridge byte for byte and each one's version. A changed file or an
upgraded dependency is a new key; a listing under another key is never read. Serving from
it relies on the SDK's private parts that `_sdk` adapts (tools added on the first call or
schema lookup, their arguments handled as listed); tests/unit/bridge/test_sdk.py checks
them against each SDK release.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pydantic
import pydantic_core
from mcp.types import Tool

from ._files import PRIVATE_FILE_MODE, private_dir, write_atomically

__all__ = ["listing_key", "read_listing", "write_listing"]

log = logging.getLogger("memctl.bridge")
_PACKAGE = Path(__file__).resolve().parent
_KEEP = 4  # listings kept in a cache directory: other installs or versions of memctl may share it


def _version(distribution: str) -> str:
    try:
        return version(distribution)
    except PackageNotFoundError:  # e.g. a later SDK that ships its types inside `mcp`
        return "-"


@functools.cache
def listing_key() -> str:
    """What the tools' listing is built from, hashed: the bridge's sources, the versions of
    memctl, the SDK, pydantic and Python, and whether Python strips docstrings (`-OO`)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (
        _version("memctl"),
        _version("mcp"),
        _version("mcp-types"),
        pydantic.VERSION,
        pydantic_core.__version__,
        sys.version,
        str(sys.flags.optimize),
    ):
        digest.update(part.encode() + b"\0")
    for path in sorted(_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _path(cache_dir: Path, key: str) -> Path:
    return cache_dir / f"tools-{key}.json"


def read_listing(cache_dir: Path, key: str) -> list[Tool] | None:
    """The listing cached under `key`, or None when there is none (or it cannot be read)."""
    try:
        items = json.loads(_path(cache_dir, key).read_bytes())
        return [Tool.model_validate(item) for item in items]
    except (OSError, ValueError, TypeError):  # missing, unreadable, or not a listing
        return None


def write_listing(cache_dir: Path, key: str, tools: list[Tool]) -> None:
    """Cache `tools` under `key` (a private file, replaced whole) and drop all but the newest
    few listings; a cache that cannot be written is only logged (the next start builds again)."""
    text = json.dumps([tool.model_dump(mode="json", by_alias=True) for tool in tools], separators=(",", ":"))
    try:
        private_dir(cache_dir)
        write_atomically(_path(cache_dir, key), text, mode=PRIVATE_FILE_MODE)
        listings = sorted(cache_dir.glob("tools-*.json"), key=lambda path: path.stat().st_mtime_ns)
        for stale in listings[:-_KEEP]:
            stale.unlink(missing_ok=True)
    except OSError as exc:
        log.info("cannot cache the tools' listing in %s (%s); each start builds it", cache_dir, exc)
