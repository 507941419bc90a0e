"""The trust boundary between memctl and Ansible: what users supply reaches Ansible as data.

Ansible renders every string it loads from an inventory or from `--extra-vars` that holds
`{{ }}`, `{% %}` or `{# #}`: a project directory named `pj{{ lookup('pipe', 'id') }}` would
run a command. Every value memctl hands Ansible on someone else's behalf (workspace paths,
slugs, store URLs, client lists, an inventory's projects, command-line options) is marked
here with `as_data`, and `dump` writes each marked string as a YAML `!unsafe` scalar, which
Ansible passes to its modules as the literal text and never renders. Strings memctl writes
itself (`{{ ansible_playbook_python }}`) stay unmarked: they are memctl's own templates.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.representer import RoundTripRepresenter

__all__ = ["as_data", "dump"]


class _Data(str):
    """A string Ansible must take as it is."""


def as_data(value: Any) -> Any:
    """`value` with every string in it (at any depth, paths included) marked as data."""
    if isinstance(value, str | PurePath):
        # Ansible 2.19 loads an empty `!unsafe ""` as null; an empty string renders as itself
        return _Data(value) if str(value) else ""
    if isinstance(value, Mapping):
        # keys are names (hosts, fields), never rendered; plain `str` (Ansible's own tagged
        # strings, such as inventory host names, have no YAML form)
        return {str(key) if isinstance(key, str) else key: as_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [as_data(item) for item in value]
    return value


def _represent_data(representer: RoundTripRepresenter, value: _Data) -> Any:
    # Double quotes escape every character YAML cannot hold as it is (NUL, newlines, ...).
    return representer.represent_scalar("!unsafe", str(value), style='"')


def _yaml() -> YAML:
    yaml = YAML()
    yaml.width = 1 << 16  # a long path stays on its key's line
    yaml.representer.add_representer(_Data, _represent_data)
    return yaml


def dump(document: Any) -> str:
    """`document` as YAML for Ansible: strings marked by `as_data` as `!unsafe` scalars."""
    stream = io.StringIO()
    _yaml().dump(document, stream)
    return stream.getvalue()
