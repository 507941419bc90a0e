"""scan_documents and absorb_files: workspace files listed, or saved as knowledge documents.

The blocking file work (`_workspace`) runs in worker threads, each under its own deadline,
so a hung file system costs a caller a bounded wait, never the event loop. Private files
(`_intake`) are left out of a scan and refused by absorb, each with its reason, both under
the name asked for and where it really is (a link to `.git/config` is `.git/config`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread

from .._errors import StoreUnavailable
from ._glob import GlobSet
from ._intake import Refusal, refusals
from ._knowledge import KnowledgeContext, resolve_slot, save_to_dataset, slot_id
from ._private import PrivateRules, normalise
from ._redact import redact
from ._results import AbsorbedFile, AbsorbResult, RefusedFile, ScanResult
from ._results import ScannedFile as ScannedFileModel
from ._workspace import (
    DEFAULT_IGNORE,
    DEFAULT_INCLUDE,
    AbsorbRead,
    ScannedFile,
    read_workspace_file,
    real_relative,
    scan_workspace,
)

__all__ = ["READ_SECONDS", "SCAN_SECONDS", "absorb_files", "scan_documents"]

SCAN_SECONDS = 20.0  # a workspace scan gives up after this
READ_SECONDS = 10.0  # reading one file to absorb gives up after this


async def scan_documents(
    root: Path, include: Sequence[str] | None, ignore: Sequence[str] | None, *, allow: Sequence[str] = ()
) -> ScanResult:
    """Documentation files under `root`: `include` replaces the default includes, `ignore`
    adds to the default ignores; symlinks are skipped, private files (`allow` names the
    exceptions) listed apart as `refused`."""
    includes = tuple(include or DEFAULT_INCLUDE)
    ignores = DEFAULT_IGNORE + tuple(ignore or ())
    matchers = GlobSet(includes, field="include"), GlobSet(ignores, field="ignore")
    deadline = time.monotonic() + SCAN_SECONDS
    files = None
    with anyio.move_on_after(SCAN_SECONDS + 1):  # the scan stops itself; this covers a hung stat
        files = await anyio.to_thread.run_sync(
            scan_workspace, root, *matchers, deadline, abandon_on_cancel=True
        )
    if files is None:
        raise StoreUnavailable(
            "scan_documents: the file system did not answer in time", operation="scan_documents"
        )
    private = await refusals(root, (f.rel_path for f in files), PrivateRules(tuple(allow)))
    return ScanResult(
        root=str(root),
        include=list(includes),
        ignore=list(ignores),
        total=len(files) - len(private),
        files=[_scanned(f) for f in files if f.rel_path not in private],
        refused=[_refused(path, refusal) for path, refusal in sorted(private.items())],
    )


def _scanned(found: ScannedFile) -> ScannedFileModel:
    return ScannedFileModel(
        relPath=found.rel_path, docName=found.rel_path, size=found.size, mtime=found.mtime
    )


def _refused(path: str, refusal: Refusal) -> RefusedFile:
    return RefusedFile(relPath=path, refusal=refusal.kind, reason=refusal.reason)


def _where(root: Path, files: Sequence[str]) -> list[tuple[str, str | None]]:
    """Each request's path as named (`..` folded) and where it really is (None: unusable)."""
    named = [("" if "\0" in f else normalise(f), real_relative(root, f)) for f in files]
    return [(name, None if real is None else normalise(real)) for name, real in named]


async def _locate(root: Path, files: Sequence[str]) -> list[tuple[str, str | None]]:
    """`_where`, in a worker thread under the scan deadline."""
    with anyio.move_on_after(SCAN_SECONDS):
        return await anyio.to_thread.run_sync(_where, root, files, abandon_on_cancel=True)
    raise StoreUnavailable("absorb_files: the file system did not answer in time", operation="absorb_files")


async def _read(root: Path, requested: str, limit: int) -> AbsorbRead:
    """One file, read in a worker thread; a read that hangs is refused for that file."""
    with anyio.move_on_after(READ_SECONDS):
        return await anyio.to_thread.run_sync(
            read_workspace_file, root, requested, limit, abandon_on_cancel=True
        )
    return AbsorbRead(requested, error=f"reading it did not finish within {READ_SECONDS:g} s")


async def absorb_files(
    ctx: KnowledgeContext,
    root: Path,
    files: Sequence[str],
    *,
    dataset: str,
    dry_run: bool,
    max_file_bytes: int,
    allow: Sequence[str] = (),
) -> AbsorbResult:
    """Save each of `files` (relative to `root`) as a document named by its relative path;
    a file that is private (`allow` names the exceptions) or cannot be read is refused on
    its own, the others still go in."""
    slot = await resolve_slot(ctx.store, dataset)
    where = await _locate(root, files)
    private = await refusals(
        root, (real for _, real in where if real), PrivateRules(tuple(allow)), names=(n for n, _ in where)
    )
    results: list[AbsorbedFile] = []
    for requested, (named, real) in zip(files, where, strict=True):
        refusal = private.get(named) or (private.get(real) if real else None)
        if refusal is not None:
            results.append(AbsorbedFile(file=requested, ok=False, error=refusal.reason, refusal=refusal.kind))
            continue
        read = await _read(root, requested, max_file_bytes)
        if read.error is None and read.rel_path != real:
            read = AbsorbRead(requested, error="the path changed while it was being absorbed")
        if read.error is not None or read.text is None:
            results.append(AbsorbedFile(file=requested, ok=False, error=read.error))
        elif dry_run:
            results.append(
                AbsorbedFile(
                    file=requested, ok=True, dryRun=True, docName=redact(read.rel_path), size=read.size
                )
            )
        else:
            saved = await save_to_dataset(
                ctx, dataset=slot, name=read.rel_path, text=read.text, metadata={"atom_type": "reference"}
            )
            results.append(
                AbsorbedFile(
                    file=requested,
                    ok=True,
                    docName=saved.name,  # as stored: redacted
                    size=read.size,
                    documentId=saved.documentId,
                    created=saved.created,
                )
            )
    succeeded = sum(1 for r in results if r.ok)
    return AbsorbResult(
        datasetId=await slot_id(ctx.store, slot),
        datasetSlot=slot,
        total=len(results),
        succeeded=succeeded,
        failed=len(results) - succeeded,
        results=results,
    )
