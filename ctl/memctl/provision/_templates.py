"""memctl's Jinja2 templates: the top-level `templates/`, shared with the Ansible roles.

`render` treats a template as Ansible's `template` module does (blocks trim the newline
after them, a final newline is kept, `to_json` and `to_nice_json` as Ansible defines them),
so one file renders the same from either side; an undefined variable is an error, never an
empty string.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ._content import content_root

__all__ = ["render", "template_dir"]


def template_dir() -> Path:
    """The directory holding memctl's templates (in the installed package or this checkout)."""
    return content_root() / "templates"


def _to_json(value: Any, **options: Any) -> str:
    return json.dumps(value, **options)


def _to_nice_json(value: Any, indent: int = 4, sort_keys: bool = True, **options: Any) -> str:
    options.pop("separators", None)
    return json.dumps(value, indent=indent, sort_keys=sort_keys, separators=(",", ": "), **options)


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(template_dir()),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        autoescape=False,
    )
    environment.filters["to_json"] = _to_json
    environment.filters["to_nice_json"] = _to_nice_json
    return environment


def render(name: str, **variables: Any) -> str:
    """The text of template `name` (a path under `templates/`) rendered with `variables`."""
    return _environment().get_template(name).render(**variables)
