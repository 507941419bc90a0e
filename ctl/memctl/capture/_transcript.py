"""Reading the turns of a session transcript, from a byte offset on.

Two formats, told apart line by line:

- Claude Code: `{"type": "user"|"assistant", "message": {"role", "content"}, ...}`;
  content is a string or blocks (`text` kept; `tool_use`, `tool_result`, `thinking`
  dropped). Compact summaries (`isCompactSummary`) and `summary` lines restate turns
  already in the file, so they are skipped; meta lines (`isMeta`) too.
- Codex: `{"type": "response_item", "payload": {"type": "message", "role", "content"}}`
  (or the bare payload in older files) with `input_text` / `output_text` blocks; the
  `<environment_context>` and `<user_instructions>` preambles and `event_msg` echoes
  are skipped.

Only whole lines (ending in a newline) are consumed, so a line still being written is
read next time. Unparseable lines are skipped and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TranscriptSlice", "Turn", "read_turns", "render_turns"]

_ROLES = {"user": "User", "assistant": "Assistant"}
_TEXT_BLOCKS = ("text", "input_text", "output_text")
_PREAMBLES = ("<environment_context>", "<user_instructions>", "<permissions instructions>")


@dataclass(frozen=True)
class Turn:
    role: str
    text: str


@dataclass
class TranscriptSlice:
    """The turns read, and the offset just past the last whole line read."""

    end: int
    turns: list[Turn] = field(default_factory=list)
    unparseable: int = 0


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in _TEXT_BLOCKS
        and isinstance(block.get("text"), str)
    ]
    return "\n\n".join(parts)


def _turn(line: dict[str, Any]) -> Turn | None:
    if line.get("type") == "response_item" and isinstance(line.get("payload"), dict):
        line = line["payload"]  # Codex's envelope
    if line.get("isCompactSummary") or line.get("isMeta") or line.get("isSidechain"):
        return None
    inner = line.get("message")
    message: dict[str, Any] = inner if isinstance(inner, dict) else line
    role = message.get("role") or line.get("type")
    if role not in _ROLES or (line.get("type") not in (None, "message", "user", "assistant")):
        return None
    text = _text(message.get("content")).strip()
    if not text or text.startswith(_PREAMBLES):
        return None
    return Turn(_ROLES[role], text)


def read_turns(path: Path, start: int = 0) -> TranscriptSlice:
    """The turns in `path` from byte `start`; raises OSError if it cannot be read."""
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read()
    whole = data[: data.rfind(b"\n") + 1]
    result = TranscriptSlice(end=start + len(whole))
    for raw in whole.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            result.unparseable += 1
            continue
        if isinstance(line, dict) and (turn := _turn(line)) is not None:
            result.turns.append(turn)
    return result


def render_turns(turns: list[Turn]) -> str:
    return "\n\n".join(f"### {turn.role}\n\n{turn.text}" for turn in turns)
