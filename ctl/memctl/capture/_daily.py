"""Daily documents: one per flush, holding the atoms it distilled, and their parser.

A daily is written once and never rewritten. Its atoms are plain markdown blocks that
survive a round trip through Dify (which may drop a heading's `### ` and collapse
indentation), so the parser accepts both forms.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

from ._paths import safe_id
from ._schema import Atom, AtomMetadata

__all__ = ["Daily", "parse_atoms", "render_daily"]

_ATOM_HEAD = re.compile(r"^(?:#{1,6} )?Atom · ", re.M)
_FIELD = re.compile(r"^- (\w+): ?(.*)$")


@dataclass(frozen=True)
class Daily:
    name: str
    text: str


def render_daily(atoms: list[Atom], *, event: str, session_id: str, workspace: str, now: float) -> Daily:
    millis = f"{int(now % 1 * 1000):03d}"
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{millis}Z"
    name = f"daily-{time.strftime('%Y-%m-%d-%H%M%S', time.gmtime(now))}{millis}-{safe_id(session_id)[:8]}.md"
    lines = [
        f"# Daily flush {event}",
        "",
        f"- captured_at_utc: {stamp}",
        f"- hook_event: {event}",
        f"- session_id: {session_id}",
        f"- workspace: {workspace}",
        f"- atom_count: {len(atoms)}",
        "",
    ]
    for atom in atoms:
        lines += [
            f"### Atom · {atom.type} · {atom.title}",
            f"- type: {atom.type}",
            f"- title: {atom.title}",
            f"- tags: [{', '.join(atom.tags)}]",
            f"- metadata: {json.dumps(atom.metadata.model_dump(), ensure_ascii=False)}",
        ]
        if atom.evidence:
            lines.append(f"- evidence: {json.dumps(atom.evidence, ensure_ascii=False)}")
        lines.append("- body: |")
        lines += [f"    {line}" if line else "" for line in atom.body.splitlines()]
        lines.append("")
    return Daily(name, "\n".join(lines))


def _atom(block: str) -> Atom | None:
    fields: dict[str, str] = {}
    body: list[str] = []
    in_body = False
    for line in block.splitlines()[1:]:
        if in_body and (line.startswith(" ") or not line.strip()):
            body.append(line[min(4, len(line) - len(line.lstrip(" "))) :])
            continue
        match = _FIELD.match(line)
        in_body = False
        if match is None:
            continue
        key, value = match.groups()
        if key == "body":
            in_body = value.strip() == "|"
            body = [] if in_body else [value]
        else:
            fields[key] = value.strip()
    try:
        metadata = json.loads(fields.get("metadata", "{}"))
        evidence = json.loads(fields["evidence"]) if "evidence" in fields else ""
    except ValueError:
        metadata, evidence = {}, fields.get("evidence", "")
    tags = fields.get("tags", "").strip("[]")
    text = "\n".join(body or []).strip()
    try:
        return Atom(
            type=fields.get("type", ""),
            title=fields.get("title", ""),
            body=text,
            tags=[t.strip() for t in tags.split(",")],
            metadata=AtomMetadata.model_validate(metadata if isinstance(metadata, dict) else {}),
            evidence=evidence if isinstance(evidence, str) else "",
        )
    except ValueError:
        return None


def parse_atoms(text: str) -> tuple[list[Atom], int]:
    """The atoms of a daily document, and how many blocks could not be read as one."""
    starts = [m.start() for m in _ATOM_HEAD.finditer(text)]
    atoms: list[Atom] = []
    broken = 0
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        atom = _atom(text[start:end])
        if atom is None:
            broken += 1
        else:
            atoms.append(atom)
    return atoms, broken
