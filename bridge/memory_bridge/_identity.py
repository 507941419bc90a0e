"""Which project a command works on, and the name it keeps in knowledge memory.

A project is found as git finds a repository: the nearest directory at or above the
starting one that holds a `.memory/` directory. Its scope (the name written on every
knowledge document and used to filter searches) is pinned in `.memory/config.toml` the
first time memctl provisions or serves it, so renaming, moving, cloning or restoring the
directory elsewhere keeps every document findable.
"""

from __future__ import annotations

import logging
import sqlite3
import tomllib
from contextlib import closing
from pathlib import Path

from ._errors import ConfigError
from ._files import write_atomically
from ._settings import MEMORY_DIR, Settings, find_project

__all__ = ["CONFIG_FILE", "find_project", "pin_scope", "pinned_scope", "write_scope"]

CONFIG_FILE = "config.toml"
_log = logging.getLogger(__name__)


def _config(project: Path) -> Path:
    return project / MEMORY_DIR / CONFIG_FILE


def pinned_scope(project: Path) -> str | None:
    """The scope written in the project's config.toml, or None if none is pinned yet."""
    path = _config(project)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it ({exc})") from exc
    scope = document.get("scope")
    return scope if isinstance(scope, str) and scope else None


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or c == "\x7f" else c for c in escaped) + '"'


def write_scope(project: Path, scope: str) -> None:
    """Pin `scope` in the project's config.toml, keeping every other line as it was.

    An existing top-level `scope = ...` line is replaced; otherwise the key goes first in
    the file (top-level keys must precede tables). The file stays private (0600).
    """
    if not scope.strip():
        raise ConfigError("a project's scope cannot be empty")
    path = _config(project)
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    line = f"scope = {_toml_string(scope)}\n"
    lines = current.splitlines(keepends=True)
    top_level = next((i for i, text in enumerate(lines) if text.lstrip().startswith("[")), len(lines))
    existing = [i for i in range(top_level) if lines[i].split("=", 1)[0].strip() in ("scope", '"scope"')]
    if existing:
        lines[existing[0]] = line
    else:
        lines.insert(0, line)
    desired = "".join(lines)
    if tomllib.loads(desired).get("scope") != scope:  # e.g. `scope` also set by dotted keys
        raise ConfigError(f"{path}: could not set scope; edit the file and set scope = {_toml_string(scope)}")
    if desired != current:
        write_atomically(path, desired, mode=0o600)


def _stored_scope(settings: Settings) -> str | None:
    """The scope most documents of an existing embedded knowledge store carry."""
    if settings.stores.knowledge_store != "sqlite":
        return None
    path = settings.memory_dir / "knowledge.db"
    if not path.is_file():
        return None
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            row = db.execute(
                "SELECT scope FROM documents WHERE scope != '' GROUP BY scope ORDER BY count(*) DESC LIMIT 1"
            ).fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def pin_scope(settings: Settings) -> Settings:
    """The settings with the project's scope pinned, writing it to config.toml if needed.

    A scope given by flag, environment or config.toml is used as it is. Otherwise the
    scope the project's existing documents carry (a store made before scopes were pinned,
    perhaps in a directory since renamed) is adopted, else the directory's name.
    Nothing is written for a project without a `.memory/` directory, nor where the
    project cannot be written (a warning is logged).
    """
    if settings.stores.scope or not settings.memory_dir.is_dir():
        return settings
    scope = _stored_scope(settings) or settings.project_scope
    try:
        write_scope(settings.project, scope)
    except OSError as exc:  # a read-only project (a container's mount): serve it all the same
        _log.warning("could not pin scope %r in %s: %s", scope, settings.memory_dir, exc.strerror)
    return settings.model_copy(update={"stores": settings.stores.model_copy(update={"scope": scope})})
