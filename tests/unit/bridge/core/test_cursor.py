from __future__ import annotations

import pytest

from memory_bridge import InvalidInput
from memory_bridge.core._cursor import decode_cursor, encode_cursor


def test_a_cursor_round_trips_for_the_same_query() -> None:
    params = {"op": "search", "tags": ["a"]}
    assert decode_cursor(encode_cursor(40, params), params, operation="t") == 40
    assert decode_cursor(None, params, operation="t") == 0


@pytest.mark.parametrize("cursor", ["garbage", "e30", "!!!"])
def test_a_forged_cursor_names_the_field(cursor: str) -> None:
    with pytest.raises(InvalidInput, match=r"^cursor: "):
        decode_cursor(cursor, {"op": "search"}, operation="t")


def test_a_cursor_of_another_query_is_refused() -> None:
    cursor = encode_cursor(5, {"op": "search", "tags": ["a"]})
    with pytest.raises(InvalidInput, match="different query"):
        decode_cursor(cursor, {"op": "search", "tags": ["b"]}, operation="t")
