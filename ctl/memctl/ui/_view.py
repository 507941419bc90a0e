"""What a page handler gets (`View`) and how a page is rendered: `templates/ui/`, autoescaped."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from memory_bridge import InvalidInput, Settings
from memory_bridge.core import ItemStores

from .._timefmt import iso_time
from ..provision._templates import template_dir
from ._params import Values

__all__ = ["Handler", "View", "render"]


def _when(value: float | str | None) -> str:
    return iso_time(value) or "-"


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(template_dir() / "ui"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["q"] = lambda value: quote(str(value), safe="")
    environment.filters["query"] = lambda params: urlencode({k: v for k, v in params.items() if v})
    environment.filters["when"] = _when
    return environment


def render(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Template `ui/<name>` as a page."""
    return HTMLResponse(_environment().get_template(name).render(**context), status_code=status)


@dataclass
class View:
    """What every page handler gets: the stores, the settings, the request and its form."""

    settings: Settings
    request: Request
    csrf: str
    values: Values = field(default_factory=lambda: Values({}, {}))
    stores: ItemStores | None = None

    @property
    def items(self) -> ItemStores:
        assert self.stores is not None, "the stores open with the app's lifespan"
        return self.stores

    def page(self, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        done = self.values.texts.get("done", "")
        return render(name, status, csrf=self.csrf, done=done, nav=self.request.url.path, **context)

    def text(self, name: str) -> str:
        """A checked parameter of this route (`_params.ROUTES`), "" when it was not sent."""
        return self.values.texts[name]

    def number(self, name: str, default: int = 0) -> int:
        """A checked whole-number parameter, `default` when it was not sent or empty."""
        return self.values.numbers.get(name, default)

    def field(self, name: str) -> str:
        """A checked form field that must not be empty."""
        value = self.values.texts[name]
        if not value:
            raise InvalidInput(name, "is missing from the form")
        return value

    def field_number(self, name: str) -> int:
        """A checked whole-number form field that must not be empty."""
        self.field(name)
        return self.values.numbers[name]


Handler = Callable[[View], Awaitable[Response]]
