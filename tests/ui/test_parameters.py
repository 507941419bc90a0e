"""Every parameter of every web view route, sent hostile values: a 4xx with a reason, never a 500.

The table below names each route's query, path and form parameters; a route the app serves
that the table does not name fails the test, so a new route cannot skip this walk. A value
wrong for its parameter (a huge, negative or non-numeric number, a NUL byte, a very long
string, a percent-escape that is not UTF-8) is a 400 naming the parameter, as an HTML page;
any other value is at least never a server error. (An empty number in a query is its
default, as an empty form field of a browser's GET form; an empty one in a POST form is a
400 too, "missing".)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from memctl.ui import Auth, create_app
from memory_bridge import load_settings

from .test_app import ORIGIN, csrf_of, doc_id

NUMBER = "number"
TEXT = "text"
# route -> (where, parameter, kind); the same route's other parameters get valid values.
PARAMETERS: dict[str, list[tuple[str, str, str]]] = {
    "/": [("query", "done", TEXT)],
    "/entries": [("query", "offset", NUMBER), ("query", "done", TEXT)],
    "/search": [("query", name, TEXT) for name in ("q", "type", "slot", "tag", "done")],
    "/knowledge": [("query", "slot", TEXT), ("query", "offset", NUMBER), ("query", "done", TEXT)],
    "/entry/{id:path}": [("path", "id", TEXT), ("query", "done", TEXT)],
    "/document/{id:path}": [("path", "id", TEXT), ("query", "done", TEXT)],
    "/lessons": [("query", "pattern", TEXT), ("query", "sort", TEXT), ("query", "done", TEXT)],
    "/capture": [("query", "done", TEXT)],
    "/status": [("query", "done", TEXT)],
    "/login": [("query", "code", TEXT)],
    "/logout": [("form", "csrf", TEXT)],
    "/static/{name}": [("path", "name", TEXT)],
    "/rollback": [
        ("form", "id", TEXT),
        ("form", "revision", NUMBER),
        ("form", "base_digest", TEXT),
        ("form", "base_revision", NUMBER),
    ],
    "/document-disable": [("form", "id", TEXT)],
    "/document-enable": [("form", "id", TEXT), ("form", "base_digest", TEXT)],
    "/document-delete": [("form", "id", TEXT), ("form", "confirm", TEXT)],
    "/deleted": [("query", "slot", TEXT), ("query", "done", TEXT)],
    "/document-rollback": [
        ("form", "slot", TEXT),
        ("form", "name", TEXT),
        ("form", "version", NUMBER),
        ("form", "expected_version", NUMBER),
    ],
    "/entry-restore": [
        ("form", "id", TEXT),
        ("form", "version", NUMBER),
        ("form", "expected_version", NUMBER),
    ],
}
BAD_UTF8 = "%FF%FEx%C3"  # sent as is: percent-escapes of bytes that are no UTF-8
# Wrong for any parameter of the kind; a text parameter takes any number as text.
WRONG = {
    NUMBER: [str(2**64), "9" * 400, "-1", "-0x10", "x", "1.5", "1e3", " 7", "٣", "a\x00b", BAD_UTF8],
    TEXT: ["a\x00b", "x" * 20_000, BAD_UTF8],
}
HARMLESS = {NUMBER: ["0", "7"], TEXT: [str(2**64), "-1", "<b>", "é", "%2F..%2F", " "]}


@pytest.fixture
def client(project: Path) -> Iterator[TestClient]:
    auth = Auth((project / ".memory" / "bridge.token").read_text().strip())
    app = create_app(load_settings(project=project), auth, cookie="memctl_ui_test")
    with TestClient(app, base_url=ORIGIN, follow_redirects=False, raise_server_exceptions=False) as client:
        assert client.get(f"/login?code={auth.login_code}").status_code == 303
        yield client


def test_the_table_names_every_route(project: Path) -> None:
    app = create_app(load_settings(project=project), Auth("t" * 32))
    assert {route.path for route in app.routes if isinstance(route, Route)} == set(PARAMETERS)


def _escaped(value: str) -> str:
    return value if value == BAD_UTF8 else quote(value, safe="")


def _valid(project: Path, client: TestClient) -> dict[str, dict[str, str]]:
    """A valid value of every parameter, per route."""
    document = doc_id(project, "deploy.md")
    csrf = csrf_of(client.get("/entries").text)
    return {
        "/entry/{id:path}": {"id": "release/process"},
        "/document/{id:path}": {"id": document},
        "/static/{name}": {"name": "ui.css"},
        "/logout": {"csrf": csrf},
        "/rollback": {
            "id": "release/process",
            "revision": "1",
            "base_digest": "0" * 64,
            "base_revision": "1",
            "csrf": csrf,
        },
        "/document-disable": {"id": document, "csrf": csrf},
        "/document-enable": {"id": document, "base_digest": "0" * 64, "csrf": csrf},
        "/document-delete": {"id": document, "confirm": "no", "csrf": csrf},
    }


def _send(client: TestClient, route: str, where: str, name: str, value: str, valid: dict[str, str]) -> str:
    """Send `value` as `name`, every other parameter valid; the response's status and text."""
    escaped = value if value == BAD_UTF8 else quote(value, safe="")
    path = route
    for key in ("id", "name"):
        given = escaped if (where, name) == ("path", key) else quote(valid.get(key, ""), safe="/")
        path = path.replace(f"{{{key}:path}}", given).replace(f"{{{key}}}", given)
    if where == "query":
        response = client.get(f"{path}?{name}={escaped}")
    elif where == "path":
        response = client.get(path)
    else:
        fields = {key: quote(given, safe="") for key, given in valid.items()}
        body = urlencode({**fields, name: escaped}, safe="%")
        response = client.post(
            path,
            content=body,
            headers={"content-type": "application/x-www-form-urlencoded", "origin": ORIGIN},
        )
    return f"{response.status_code} {response.text}"


def _walk(project: Path, client: TestClient, values: dict[str, list[str]]) -> Iterator[tuple[str, str, str]]:
    """(route and parameter, value, status and text) for every parameter and value."""
    valid = _valid(project, client)
    for route, parameters in PARAMETERS.items():
        for where, name, kind in parameters:
            for value in values[kind]:
                answer = _send(client, route, where, name, value, valid.get(route, {}))
                yield f"{route} {where} {name}", value[:40], answer


def test_a_wrong_value_is_a_400_page_naming_the_parameter(project: Path, client: TestClient) -> None:
    failures = []
    for where, value, answer in _walk(project, client, WRONG):
        status, _, text = answer.partition(" ")
        parameter = where.split()[-1]
        if where.startswith("/static/"):  # a file name: anything but ui.css and ui.js is not found
            ok = status == "404"
        else:
            ok = status == "400" and parameter in text and "<!doctype html>" in text
        if not ok:
            failures.append((where, value, answer[:200]))
    assert failures == []


def test_a_harmless_value_is_never_a_server_error(project: Path, client: TestClient) -> None:
    failures = [
        (where, value, answer[:200])
        for where, value, answer in _walk(project, client, HARMLESS)
        if not answer.startswith(("2", "3", "4"))
    ]
    assert failures == []


@pytest.mark.parametrize("route", ["/entries", "/search", "/knowledge", "/lessons"])
def test_a_query_with_too_many_fields_is_a_400(client: TestClient, route: str) -> None:
    many = client.get(f"{route}?{urlencode([('x', '1')] * 5000)}")
    assert many.status_code == 400 and "query" in many.text


@pytest.mark.parametrize("route", ["/entries", "/knowledge"])
def test_an_offset_beyond_64_bits_is_a_400_not_a_500(client: TestClient, route: str) -> None:
    """Issue 32, finding 7: the store's integer overflow answered 500."""
    answer = client.get(f"{route}?offset={2**64}")
    assert answer.status_code == 400 and "offset" in answer.text
