"""`memctl search|show|edit|forget|lessons`: a person's view of the project's memory.

Each command finds the project like the other read-only commands, opens both stores and
makes one call into `memory_bridge.core` (the functions behind the MCP tools), so what it
shows and writes is what an agent sees and writes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import click
from rich.table import Table
from rich.text import Text

from memory_bridge import (
    ConfigError,
    Conflict,
    InvalidInput,
    LinkRefused,
    MemctlError,
    Settings,
    write_atomically,
)
from memory_bridge.core import (
    EntryItem,
    Item,
    ItemSearchResult,
    ItemStores,
    SaveOutcome,
    content_digest,
    find_item,
    forget_item,
    item_versions,
    list_lessons,
    nothing_found,
    save_item,
    search_items,
)

from .._refs import short_ref
from .._timefmt import iso_time
from ..operations._lookup import item_stores
from ..provision._project import provisioned_settings
from ..transfer._markdown import parse_item, read_text, relative_path, render_item
from ._options import project_option
from ._output import console, emit_json, json_option
from ._tables import Column, fitted_table

T = TypeVar("T")


def _with_stores(settings: Settings, call: Callable[[ItemStores], Awaitable[T]], *, embed: bool = False) -> T:
    async def run() -> T:
        async with item_stores(settings, embed=embed) as stores:
            return await call(stores)

    return anyio.run(run)


_TIMES = ("created", "updated", "created_at", "updated_at", "last_recalled_at")


def _item_json(item: Item) -> dict[str, Any]:
    info = item.info()
    info.update({key: iso_time(info[key]) for key in _TIMES if key in info})
    payload = {"ref": item.ref, **info, "digest": content_digest(item.content()), "content": item.content()}
    return {**payload, "short_ref": short_ref(info)}


# -- search ----------------------------------------------------------------------------------


def _search_table(result: ItemSearchResult) -> Table:
    columns = (
        Column("score", whole=True),
        Column("ref"),
        Column("title / name", drop=2),
        Column("type", drop=1),
    )
    rows = [
        (
            f"{hit.score:.2f}" + (" (best effort)" if hit.best_effort else ""),
            Text(short_ref(hit.model_dump())),
            Text(hit.name),
            Text(hit.type),
        )
        for hit in result.hits
    ]
    return fitted_table(f"memctl search: {result.count} hit(s) for {result.query!r}", columns, rows)


@click.command()
@click.argument("query")
@click.option("--slot", "slots", multiple=True, help="Only documents of this knowledge slot (repeatable).")
@click.option("--type", "type_", help="Only entries of this type and documents of this atom type.")
@click.option("--tag", "tags", multiple=True, help="Only items carrying this tag (repeatable: all of them).")
@click.option("--limit", type=click.IntRange(1, 200), default=20, show_default=True, help="Most hits shown.")
@click.option(
    "--threshold",
    type=click.FloatRange(0.0, 1.0),
    help="Least relevance (0..1) a hit needs [default: setting search_score_threshold].",
)
@click.option("--best-effort", is_flag=True, help="Also show the closest hits under the threshold, marked.")
@project_option
@json_option
def search(
    query: str,
    slots: tuple[str, ...],
    type_: str | None,
    tags: tuple[str, ...],
    limit: int,
    threshold: float | None,
    best_effort: bool,
    project: Path | None,
    as_json: bool,
) -> None:
    """Search entries and knowledge documents together, best first.

    A hit's score is calibrated relevance, 0 to 1, the same scale for entries and
    documents and for every query (as search_memory scores). Hits under the threshold
    are not shown: when nothing is relevant enough the search says so. Documents are
    this project's (its scope). --slot searches only those slots.

    \b
    Example:
      memctl search "deploy blue green"
      memctl search timeout --type self-improvement-lesson --json
      memctl search "autoscaling" --best-effort
    """
    settings = provisioned_settings(project)
    result = _with_stores(
        settings,
        lambda s: search_items(
            s,
            query,
            slots=list(slots),
            type=type_,
            tags=list(tags),
            limit=limit,
            threshold=threshold,
            best_effort=best_effort,
        ),
        embed=True,
    )
    hint = (
        None
        if result.hits
        else nothing_found(result.threshold, what="entry or document", flag="--best-effort")
    )
    if as_json:
        found = result.model_dump()
        hits = [{**hit, "short_ref": short_ref(hit)} for hit in found["hits"]]
        emit_json({**found, "hits": hits, **({"hint": hint} if hint else {})})
        return
    console.print(_search_table(result) if hint is None else Text(hint))
    for note in result.degraded:
        console.print(Text(f"degraded: {note}"))


# -- show ------------------------------------------------------------------------------------


@click.command()
@click.argument("ref", metavar="ID|NAME")
@click.option(
    "--history",
    "history_limit",
    type=click.IntRange(0, 1000),
    default=10,
    show_default=True,
    help="How many of an entry's versions to show as diffs.",
)
@project_option
@json_option
def show(ref: str, history_limit: int, project: Path | None, as_json: bool) -> None:
    """Show one entry or document: its text, its metadata and, for an entry, its history.

    ID|NAME is `entry:ID`, `doc:ID`, `SLOT/NAME`, or a bare entry id, document id or
    document name (an error lists the choices when it names several items). Each entry
    version is shown as a unified diff from the one before. Reading an entry counts a hit,
    as memory_get does.

    \b
    Example:
      memctl show deploy.md
      memctl show entry:release/process --history 3 --json
    """
    settings = provisioned_settings(project)

    async def load(stores: ItemStores) -> tuple[Item, list[dict[str, Any]]]:
        item = await find_item(stores, ref)
        versions: list[dict[str, Any]] = []
        if isinstance(item, EntryItem) and history_limit:
            versions = [v.model_dump() for v in await item_versions(stores, item.entry.id, history_limit)]
        return item, [{**v, "updated": iso_time(v["updated"])} for v in versions]

    item, versions = _with_stores(settings, load)
    payload = _item_json(item)
    if isinstance(item, EntryItem):
        payload["history"] = versions
    if as_json:
        emit_json(payload)
        return
    details = {k: v for k, v in payload.items() if k not in ("content", "history", "ref", "short_ref")}
    details.update({k: v for k, v in payload["content"].items() if k != "text"})
    rows = []
    for key, value in details.items():
        if isinstance(value, dict):
            shown = ", ".join(f"{k}={v}" for k, v in value.items())
        else:
            shown = ", ".join(value) if isinstance(value, list) else "" if value is None else str(value)
        rows.append((Text(key, style="bold"), Text(shown)))
    console.print(
        fitted_table(payload["short_ref"], (Column("field", whole=True), Column("value")), rows, header=False)
    )
    console.print(Text(payload["content"]["text"]))
    for version in versions:
        console.rule(Text(f"revision {version['revision']}: {version['operation']} at {version['updated']}"))
        console.print(Text(version["diff"]))


# -- edit ------------------------------------------------------------------------------------


def _editor() -> list[str]:
    command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not command:
        raise ConfigError("set VISUAL or EDITOR to the editor to use (e.g. EDITOR=nano)")
    return shlex.split(command)


def _run_editor(editor: list[str], path: Path) -> None:
    try:
        done = subprocess.run([*editor, str(path)], check=False)
    except OSError as exc:
        raise ConfigError(
            f"cannot start the editor {editor[0]!r}: {exc.strerror}; your text is in {path}"
        ) from None
    if done.returncode != 0:
        raise MemctlError(
            f"the editor exited with status {done.returncode}: nothing saved; your text is in {path}"
        )


def _with_problem(problem: str, text: str) -> str:
    """`text` again, under `problem` and what to do about it as `#` lines."""
    lines = [
        "memctl did not save this edit:",
        *problem.splitlines(),
        "Fix it and save to try again; save it unchanged, or empty the file, to give up.",
        "(The # lines above the first --- are dropped.)",
    ]
    return "".join(f"# {line}\n" for line in lines) + text


def _without_problem(text: str) -> str:
    """`text` without the `#` lines above its front matter (an item file starts with ---)."""
    lines = text.splitlines(keepends=True)
    first = next((n for n, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return "".join(lines[first:])


def _save_edit(settings: Settings, item: Item, text: str, where: str) -> SaveOutcome:
    """Save the edited file's `text` over `item`; `InvalidInput` if the file or a field is wrong."""
    edited = parse_item(text, where)
    info = item.info()
    if edited.kind != info["kind"] or any(info[k] != v for k, v in edited.identity.items()):
        raise InvalidInput(where, f"the item's identity cannot change in an edit (it is {item.ref})")
    return _with_stores(
        settings,
        lambda s: save_item(
            s,
            item,
            edited.content,
            base_digest=content_digest(item.content()),
            base_revision=item.revision if isinstance(item, EntryItem) else None,
        ),
    )


@click.command()
@click.argument("ref", metavar="ID|NAME")
@project_option
@json_option
def edit(ref: str, project: Path | None, as_json: bool) -> None:
    """Edit one entry or document in $VISUAL or $EDITOR, saved with compare-and-set.

    The editor opens the item as markdown: front matter (title, type, tags, ... for an
    entry; enabled and metadata for a document) and the text below it. Saving unchanged
    text writes nothing. If the file is not valid (its YAML, or a field), the editor
    opens again with the problem as # lines above your text; saving it unchanged gives
    up (exit 7), emptying it gives up too (exit 1): nothing is written either way. If an
    agent changed the item while you were editing, nothing is written: the error (exit
    4) names what differs and the file your edit is kept in.

    \b
    Example:
      EDITOR=nano memctl edit entry:release/process
      memctl edit knowledge/deploy.md
    """
    settings = provisioned_settings(project)
    editor = _editor()
    item = _with_stores(settings, lambda s: find_item(s, ref))
    folder = Path(tempfile.mkdtemp(prefix="memctl-edit-"))  # 0700
    path = folder / relative_path(item).name
    write_atomically(path, render_item(item), mode=0o600)
    problem: InvalidInput | None = None
    tried = ""  # the text `problem` is about
    while True:
        _run_editor(editor, path)
        text = _without_problem(read_text(path))
        if not text.strip():
            shutil.rmtree(folder)
            raise MemctlError("edit given up: the file was left empty, so nothing was saved")
        if problem is not None and text == tried:
            raise InvalidInput(
                problem.field,
                f"{problem.problem}; the file was saved unchanged, so nothing was saved: "
                f"your text is kept in {path}",
            )
        try:
            outcome = _save_edit(settings, item, text, str(path))
            break
        except LinkRefused:
            raise
        except InvalidInput as exc:
            problem, tried = exc, text
            write_atomically(path, _with_problem(str(exc), text), mode=0o600)
    if outcome.status == "conflict":
        raise Conflict(
            f"{outcome.detail}; it now differs from your edit in: {', '.join(outcome.differs)}. "
            f"Nothing was written; your edit is kept in {path}",
            operation="edit",
        )
    shutil.rmtree(folder)
    if as_json:
        emit_json({"ref": item.ref, "status": outcome.status, "detail": outcome.detail})
    else:
        console.print(
            Text(f"{item.ref}: {outcome.status}" + (f" ({outcome.detail})" if outcome.detail else ""))
        )


# -- forget ----------------------------------------------------------------------------------


@click.command()
@click.argument("ref", metavar="ID|NAME")
@click.option("--disable", is_flag=True, help="Disable a document instead of deleting it (searches skip it).")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@project_option
@json_option
def forget(ref: str, disable: bool, yes: bool, project: Path | None, as_json: bool) -> None:
    """Delete an entry or a document, or disable a document, after confirmation.

    A deleted item keeps its history: `memctl history REF` shows it and `memctl rollback
    REF --to VERSION` brings it back. A disabled document stays but no search finds it.
    Without a terminal to ask on (or with --json), --yes is required.

    \b
    Example:
      memctl forget entry:old/secret
      memctl forget knowledge/stale.md --disable --yes --json
    """
    settings = provisioned_settings(project)
    item = _with_stores(settings, lambda s: find_item(s, ref))
    if disable and isinstance(item, EntryItem):
        raise InvalidInput("--disable", "entries cannot be disabled, only deleted")
    action = "disable" if disable else "delete"
    if not yes:
        if as_json or not sys.stdin.isatty():
            raise ConfigError(
                f"not confirmed: pass --yes to {action} {item.ref} without a terminal to ask on"
            )
        if not click.confirm(f"{action} {item.ref} ({item.label})?", default=False):
            raise ConfigError(f"not confirmed: {item.ref} was left as it is")
    done = _with_stores(settings, lambda s: forget_item(s, item, disable=disable))
    if as_json:
        emit_json(done.model_dump())
    else:
        console.print(Text(f"{short_ref(item.info())}: {done.action}"))


# -- lessons ---------------------------------------------------------------------------------


@click.command()
@click.option("--pattern", help="Only lessons whose error pattern contains this text.")
@click.option(
    "--sort",
    type=click.Choice(["recall", "recent"]),
    default="recall",
    show_default=True,
    help="recall: most recalled first; recent: last recalled (then updated) first.",
)
@project_option
@json_option
def lessons(
    pattern: str | None, sort: Literal["recall", "recent"], project: Path | None, as_json: bool
) -> None:
    """List this project's lessons (the self_improvement slot) by error pattern.

    Recalls count the searches that returned a lesson (at most one per debounce window,
    the bridge's recall_stamp_debounce_hours); last recalled is "-" (null in --json) for a
    lesson never recalled.

    \b
    Example:
      memctl lessons
      memctl lessons --pattern timeout --sort recent --json
    """
    settings = provisioned_settings(project)
    listed = _with_stores(settings, lambda s: list_lessons(s, pattern=pattern, sort=sort))
    found = [lesson.model_dump() for lesson in listed]
    for lesson in found:
        lesson["updated_at"] = iso_time(lesson["updated_at"])
        lesson["last_recalled"] = iso_time(lesson["last_recalled"])
        lesson["short_ref"] = short_ref({"slot": "self_improvement", **lesson})
    if as_json:
        emit_json({"count": len(found), "lessons": found})
        return
    columns = (
        Column("lesson"),
        Column("error pattern"),
        Column("module", drop=1),
        Column("recalls", whole=True),
        Column("last recalled", whole=True),
        Column("updated", whole=True, drop=2),
    )
    rows = [
        (
            Text(lesson["short_ref"] + ("" if lesson["enabled"] else " (disabled)")),
            Text(lesson["error_pattern"] or "-"),
            Text(lesson["project_module"] or "-"),
            str(lesson["recall_count"]),
            lesson["last_recalled"] or "-",
            lesson["updated_at"],
        )
        for lesson in found
    ]
    console.print(fitted_table(f"memctl lessons: {len(found)}", columns, rows))
