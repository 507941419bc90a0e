"""YAML for tests, through ruamel.yaml's safe loader and dumper, as Ansible reads it (YAML 1.1)."""

from __future__ import annotations

import io
from typing import Any

from ruamel.yaml import YAML


def _yaml() -> YAML:
    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)  # Ansible reads YAML 1.1: `no` and `off` are written quoted
    yaml.default_flow_style = False
    return yaml


def load(text: str) -> Any:
    """The data of a YAML document."""
    return _yaml().load(text)


def dump(data: Any) -> str:
    """`data` as a YAML 1.1 document in block style."""
    stream = io.StringIO()
    _yaml().dump(data, stream)
    return stream.getvalue()
