"""How the adversarial layer judges a reply: it came, and an error says why."""

from __future__ import annotations

import re
from typing import Any

from mcp import MCPError

_BARE = re.compile(r"Error executing tool [\w-]+\s*")
BOUND_SECONDS = 60.0
"""The longest any call may take to be answered: far past any deadline of the bridge."""


def assert_has_reason(text: str) -> None:
    """An error a person can act on: never empty, never only the SDK's "Error executing tool X"."""
    assert text.strip(), "an empty error"
    assert not _BARE.fullmatch(text), f"an error without a reason: {text!r}"


def reply_text(outcome: Any) -> str:
    """The text of a tool result or of the JSON-RPC error that answered the call."""
    if isinstance(outcome, MCPError):
        return str(outcome.error.message)
    return "".join(getattr(block, "text", "") for block in outcome.content)


def assert_answered(outcome: Any) -> None:
    """A result, or an error (tool error or JSON-RPC error) with a reason."""
    if isinstance(outcome, MCPError) or outcome.is_error:
        assert_has_reason(reply_text(outcome))
