"""The manifest of an export folder: the files memctl wrote there, each with its item and bytes.

`DIR/.memctl-export.json` (0600, replaced whole, never written or read through a link) maps
each file's path in the folder to the item it holds (`ref`), the SHA-256 of the bytes memctl
wrote (`sha256`) and the item's content digest then (`digest`). With it, export removes only
its own unedited files of items gone since; import tells a file taken out of the folder from
one that was never there, and a new file from the file of a deleted item.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath

from memory_bridge import InvalidInput, write_atomically
from memory_bridge.core import Item, content_digest

from ._markdown import read_text

__all__ = ["MANIFEST", "Written", "read_manifest", "write_manifest", "written"]

MANIFEST = ".memctl-export.json"
_FORMAT = 1
_UNREADABLE = (
    "is not a manifest memctl can read ({}): remove it, and the next export writes a new one "
    "(removing no file an earlier export wrote)"
)


@dataclass(frozen=True)
class Written:
    """A file as memctl wrote it: its item, the SHA-256 of its bytes, the item's digest."""

    ref: str
    sha256: str
    digest: str


def written(item: Item, text: str) -> Written:
    """The record of `text`, the file just written for `item`."""
    return Written(item.ref, hashlib.sha256(text.encode("utf-8")).hexdigest(), content_digest(item.content()))


def _plain(path: str) -> bool:
    parts = PurePosixPath(path).parts
    return (
        bool(parts)
        and not path.startswith("/")
        and "\\" not in path
        and all(part not in ("", ".", "..") for part in parts)
        and path.endswith(".md")
    )


def _strings(record: Written) -> bool:
    return all(isinstance(value, str) for value in asdict(record).values())


def read_manifest(directory: Path) -> dict[str, Written] | None:
    """The files recorded in `directory`'s manifest by path; None when it has none (a folder
    exported before manifests, or never exported). An unreadable one is `InvalidInput`; a
    link in its place is `LinkRefused`."""
    try:
        text = read_text(directory / MANIFEST, root=directory)
    except FileNotFoundError:
        return None
    except (UnicodeDecodeError, IsADirectoryError):
        raise InvalidInput(MANIFEST, _UNREADABLE.format("not UTF-8 text in a file")) from None
    try:
        data = json.loads(text)
        if data["format"] != _FORMAT:
            raise InvalidInput(MANIFEST, _UNREADABLE.format(f"format {data['format']!r}, not {_FORMAT}"))
        files = {path: Written(**record) for path, record in data["files"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InvalidInput(MANIFEST, _UNREADABLE.format(f"{type(exc).__name__}: {exc}")) from None
    bad = next((p for p, w in files.items() if not _plain(p) or not _strings(w)), None)
    if bad is not None:
        raise InvalidInput(MANIFEST, _UNREADABLE.format(f"{bad!r} is not a file of an export"))
    return files


def write_manifest(directory: Path, files: dict[str, Written]) -> None:
    """Replace `directory`'s manifest with `files` (a link in its place is `LinkRefused`)."""
    data = {"format": _FORMAT, "files": {path: asdict(files[path]) for path in sorted(files)}}
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    write_atomically(directory / MANIFEST, text, mode=0o600, root=directory)
