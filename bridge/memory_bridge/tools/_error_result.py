"""The tools' in-band error result: small on purpose, so listing the tools (which needs it)
does not load the result models."""

from __future__ import annotations

import json

from mcp.types import CallToolResult, TextContent

__all__ = ["error_result"]


def error_result(message: str) -> CallToolResult:
    """memory-mcp's in-band error object (compact JSON), flagged as an error result."""
    text = json.dumps({"error": message}, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
