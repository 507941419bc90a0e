"""A workspace whose name holds URL syntax (`#`, `?`, `%`) keeps its memory inside it.

SQLite reads a `file:` URI up to its first `#` or `?` and decodes `%`: a read-only look at
`/src/c#sharp/.memory/entries.db` once opened (and created) `/src/c` instead, and `up`
never saw its own stores.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..provision.helpers import up_json


@pytest.mark.parametrize("name", ["c#sharp", "what?now", "100%25 done"])
def test_up_finds_its_stores_in_a_workspace_named_with_url_syntax(tmp_path: Path, name: str) -> None:
    parent = tmp_path / "src"
    workspace = parent / name
    workspace.mkdir(parents=True)
    up_json("--project", str(workspace), state=tmp_path / "state")
    again = up_json("--project", str(workspace), state=tmp_path / "state")
    assert again["changed"] == 0, again
    [project] = again["projects"]
    assert all(
        store["version"] and store["version"] == store["version_before"] for store in project["stores"]
    )
    assert sorted(path.name for path in parent.iterdir()) == [name]
