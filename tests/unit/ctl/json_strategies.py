"""Hypothesis strategies for arbitrary JSON that users keep in their client files."""

from __future__ import annotations

from hypothesis import strategies as st

keys = st.text(max_size=6)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=10,
)
