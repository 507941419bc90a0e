"""The web view through HTTP (Starlette's TestClient): login, CSRF, escaping, errors, writes."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.testclient import TestClient

from memctl.ui import Auth, create_app
from memctl.ui._view import _environment, render
from memory_bridge import load_settings

from ..bridges import free_port
from ..day2.conftest import memctl
from ..day2.stores import documents, entry_records, set_marks, stamp_recall
from .browser import memctl_ui
from .conftest import HOSTILE, write_entry

ORIGIN = "http://127.0.0.1"


@pytest.fixture
def auth(project: Path) -> Auth:
    token = (project / ".memory" / "bridge.token").read_text().strip()
    return Auth(token)


@pytest.fixture
def anonymous(project: Path, auth: Auth) -> Iterator[TestClient]:
    app = create_app(load_settings(project=project), auth, cookie="memctl_ui_test")
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as client:
        yield client


@pytest.fixture
def client(anonymous: TestClient, auth: Auth) -> TestClient:
    assert anonymous.get(f"/login?code={auth.login_code}").status_code == 303
    return anonymous


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def doc_id(project: Path, name: str) -> str:
    shown = memctl("show", f"knowledge/{name}", "--project", str(project), "--json")
    assert shown.code == 0, shown.stderr
    return str(shown.json["document_id"])


def enabled(project: Path, name: str) -> bool:
    return documents(project)[("knowledge", name)][2]


# -- who may look ----------------------------------------------------------------------------


def test_pages_need_a_session(anonymous: TestClient, project: Path) -> None:
    for path in ("/", "/entries", "/entry/n-000", "/knowledge", "/lessons", "/capture", "/status"):
        answer = anonymous.get(path)
        assert answer.status_code == 303 and answer.headers["location"] == "/login", path
    posted = anonymous.post("/document-disable", data={"id": doc_id(project, "deploy.md"), "csrf": "x"})
    assert posted.status_code == 403
    assert enabled(project, "deploy.md")


def test_the_login_link_works_once_and_sets_a_strict_httponly_cookie(
    anonymous: TestClient, auth: Auth
) -> None:
    code = auth.login_code
    first = anonymous.get(f"/login?code={code}")
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert cookie.startswith("memctl_ui_test=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert anonymous.get("/entries").status_code == 200
    anonymous.cookies.clear()
    again = anonymous.get(f"/login?code={code}")
    assert again.status_code == 403 and "was used or has expired" in again.text
    assert anonymous.get("/entries").status_code == 303


def test_the_project_token_logs_in_and_a_wrong_one_does_not(anonymous: TestClient, project: Path) -> None:
    wrong = anonymous.post("/login", data={"token": "guess"}, headers={"origin": ORIGIN})
    assert wrong.status_code == 403 and "not the project token" in wrong.text
    assert "guess" not in wrong.text
    token = (project / ".memory" / "bridge.token").read_text().strip()
    elsewhere = anonymous.post("/login", data={"token": token}, headers={"origin": "http://evil.example"})
    assert elsewhere.status_code == 403
    right = anonymous.post("/login", data={"token": token}, headers={"origin": ORIGIN})
    assert right.status_code == 303 and token not in right.text
    assert anonymous.get("/entries").status_code == 200


def test_logout_ends_the_session(client: TestClient) -> None:
    page = client.get("/entries").text
    assert client.post("/logout", data={"csrf": "forged"}).status_code == 403
    assert client.get("/entries").status_code == 200
    assert client.post("/logout", data={"csrf": csrf_of(page)}).status_code == 303
    assert client.get("/entries").status_code == 303


def test_only_loopback_host_names_are_served(client: TestClient) -> None:
    assert client.get("/entries", headers={"host": "rebound.example"}).status_code == 400


def test_every_page_forbids_outside_resources(client: TestClient) -> None:
    for path in ("/entries", "/knowledge", "/lessons", "/capture", "/status", "/search?q=deploy"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert "default-src 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["server-timing"].startswith("app;dur=")
        assert not re.search(r"""(src|href|action)=["']?(https?:)?//""", answer.text), path


# -- CSRF ------------------------------------------------------------------------------------


def test_a_post_without_the_sessions_csrf_token_changes_nothing(client: TestClient, project: Path) -> None:
    target = doc_id(project, "deploy.md")
    page = client.get(f"/document/{target}").text
    for form, headers in (
        ({"id": target}, {}),
        ({"id": target, "csrf": "forged"}, {}),
        ({"id": target, "csrf": csrf_of(page)}, {"origin": "http://evil.example"}),
        ({"id": target, "csrf": csrf_of(page)}, {"origin": "null"}),
    ):
        answer = client.post("/document-disable", data=form, headers=headers)
        assert answer.status_code == 403 and "CSRF" in answer.text
    assert enabled(project, "deploy.md")
    done = client.post(
        "/document-disable", data={"id": target, "csrf": csrf_of(page)}, headers={"origin": ORIGIN}
    )
    assert done.status_code == 303
    assert not enabled(project, "deploy.md")


def test_a_form_must_be_urlencoded(client: TestClient, project: Path) -> None:
    page = client.get("/entries").text
    answer = client.post(
        "/rollback", content=json.dumps({"csrf": csrf_of(page)}), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 400 and "x-www-form-urlencoded" in answer.text


# -- escaping --------------------------------------------------------------------------------


def test_hostile_memory_text_is_shown_as_text(client: TestClient, project: Path) -> None:
    pages = [
        client.get("/entries").text,
        client.get("/entry/evil").text,
        client.get("/search?q=owned").text,
        client.get("/knowledge?slot=knowledge").text,
        client.get(f"/document/{doc_id(project, 'hostile.md')}").text,
        client.get("/search?q=" + HOSTILE).text,
    ]
    for page in pages:
        assert "<script>document" not in page and "<img src=x" not in page
        assert "&lt;script&gt;document.title=" in page or "&lt;script&gt;document" in page


def test_a_hostile_capture_log_is_shown_as_text(client: TestClient, project: Path) -> None:
    log = project / ".memory" / "capture" / "capture.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    events = [
        {
            "ts": "2026-12-01T10:00:00Z",
            "event": "flush",
            "outcome": "distilled",
            "atoms": 2,
            "delivered": ["deploy.md", HOSTILE],
        },
        {
            "ts": "2026-12-01T11:00:00Z",
            "event": "compile",
            "outcome": "compiled",
            "compiled": ["2026-12-01"],
            "counts": {"created": 3},
        },
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events) + "not json\n")
    page = client.get("/capture").text
    assert page.index("<td>compiled</td>") < page.index("<td>distilled</td>")  # newest first
    assert "deploy.md" in page and "created 3" in page
    assert "<script>document" not in page and "&lt;script&gt;" in page


# -- not found and bad input -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/entry/no-such-entry", 404, "no entry no-such-entry, live or deleted"),
        ("/document/no-such-doc", 404, "no document no-such-doc, live or deleted"),
        ("/knowledge?slot=nope", 404, "no knowledge slot"),
        ("/entries?offset=-3", 400, "offset"),
        ("/entries?offset=x", 400, "whole number"),
        ("/lessons?sort=sideways", 400, "recall or recent"),
    ],
)
def test_errors_are_pages_with_their_status(client: TestClient, path: str, status: int, says: str) -> None:
    answer = client.get(path)
    assert answer.status_code == status and says in answer.text
    assert "<!doctype html>" in answer.text


def test_an_unknown_path_is_404(client: TestClient) -> None:
    assert client.get("/nowhere").status_code == 404
    assert client.get("/static/../../../etc/passwd").status_code == 404
    assert client.get("/static/ui.css").headers["content-type"].startswith("text/css")


# -- reading ---------------------------------------------------------------------------------


def test_lists_search_and_pages(client: TestClient, project: Path) -> None:
    entries = client.get("/entries").text
    assert "release/process" in entries and "/entry/release%2Fprocess" in entries
    assert "n-001" not in entries  # deleted
    found = client.get("/search?q=deploy blue green").text
    assert 'href="/document/' in found and "knowledge/deploy.md" in found
    entry = client.get("/entry/release%2Fprocess").text
    assert "Tag, build, sign, publish." in entry and 'class="add">+Tag, build, sign, publish.' in entry
    lessons = client.get("/lessons").text
    assert lessons.index("oom-kill") < lessons.index("timeout") and "lesson-retry.md" in lessons
    only = client.get("/lessons?pattern=oom").text
    assert "lesson-oom.md" in only and "lesson-timeout.md" not in only
    status = client.get("/status").text
    assert "entries store" in status and "knowledge store" in status and "never" in status


# -- correcting ------------------------------------------------------------------------------


def rollback_form(page: str, revision: int) -> dict[str, str]:
    section = page[page.index(f'id="revision-{revision}"') :]
    fields = dict(re.findall(r'name="(\w+)" value="([^"]*)"', section[: section.index("</form>")]))
    assert fields["revision"] == str(revision)
    return fields


def test_roll_back_an_entry(client: TestClient, project: Path) -> None:
    page = client.get("/entry/release%2Fprocess").text
    done = client.post("/rollback", data=rollback_form(page, 1), headers={"origin": ORIGIN})
    assert done.status_code == 303 and "rolled+back+to+revision+1" in done.headers["location"]
    record = entry_records(project)["release/process"]
    assert record["entry"]["body"] == "Tag, build, publish." and record["revision"] == 3
    shown = client.get(done.headers["location"]).text
    assert "rolled back to revision 1: updated" in shown


def test_a_roll_back_never_overwrites_a_newer_write(client: TestClient, project: Path) -> None:
    page = client.get("/entry/release%2Fprocess").text
    write_entry(project, "release/process", title="Release process", body="An agent's newer text.")
    answer = client.post("/rollback", data=rollback_form(page, 1), headers={"origin": ORIGIN})
    assert answer.status_code == 409 and "Nothing was written" in answer.text
    assert entry_records(project)["release/process"]["entry"]["body"] == "An agent's newer text."


def test_a_document_page_shows_its_recalls_and_maintenance_marks(client: TestClient, project: Path) -> None:
    target = doc_id(project, "deploy.md")
    assert "0 time(s)" in client.get(f"/document/{target}").text
    stamp_recall(project, "knowledge", "deploy.md", 1_790_000_000.0)
    set_marks(project, "knowledge", "deploy.md", {"superseded_by": "deploy-v2.md"})
    page = client.get(f"/document/{target}").text
    assert re.search(r'id="recalled">1 time\(s\), last 2026-09-21', page)
    assert "superseded_by" in page and "deploy-v2.md" in page


def test_enable_and_delete_a_document(client: TestClient, project: Path) -> None:
    target = doc_id(project, "deploy.md")
    page = client.get(f"/document/{target}").text
    client.post("/document-disable", data={"id": target, "csrf": csrf_of(page)}, headers={"origin": ORIGIN})
    disabled = client.get(f"/document/{target}").text
    assert "no (searches skip it)" in disabled
    form = dict(
        re.findall(
            r'name="(\w+)" value="([^"]*)"',
            disabled[disabled.index('action="/document-enable"') :].split("</form>")[0],
        )
    )
    assert client.post("/document-enable", data=form, headers={"origin": ORIGIN}).status_code == 303
    assert enabled(project, "deploy.md")
    unconfirmed = client.post(
        "/document-delete", data={"id": target, "csrf": form["csrf"]}, headers={"origin": ORIGIN}
    )
    assert unconfirmed.status_code == 400 and "tick the box" in unconfirmed.text
    assert ("knowledge", "deploy.md") in documents(project)
    deleted = client.post(
        "/document-delete",
        data={"id": target, "csrf": form["csrf"], "confirm": "yes"},
        headers={"origin": ORIGIN},
    )
    assert deleted.status_code == 303 and deleted.headers["location"].startswith("/knowledge?slot=knowledge")
    assert ("knowledge", "deploy.md") not in documents(project)
    assert client.get(f"/document/{target}").status_code == 404


def test_a_deleted_entry_is_listed_and_its_old_link_offers_it_back(client: TestClient, project: Path) -> None:
    """Issue 33: a deleted entry's link said NotFound; it is a page with its history now."""
    assert memctl("forget", "entry:release/process", "--yes", "--project", str(project)).code == 0
    listed = client.get("/deleted").text
    assert 'href="/entry/release%2Fprocess"' in listed and "Release process" in listed
    old_link = client.get("/entry/release%2Fprocess")
    assert old_link.status_code == 404 and "This entry was deleted" in old_link.text
    section = old_link.text[old_link.text.index('id="version-1"') :]
    form = dict(re.findall(r'name="(\w+)" value="([^"]*)"', section[: section.index("</form>")]))
    assert (form["id"], form["version"]) == ("release/process", "1")
    done = client.post("/entry-restore", data=form, headers={"origin": ORIGIN})
    assert done.status_code == 303 and "it+was+deleted+and+is+back" in done.headers["location"]
    assert entry_records(project)["release/process"]["entry"]["body"] == "Tag, build, publish."
    assert client.get("/entry/release%2Fprocess").status_code == 200
    assert "release/process" not in client.get("/deleted").text
    again = client.post("/entry-restore", data=form, headers={"origin": ORIGIN})
    assert again.status_code == 409  # the form's version is no longer the newest: nothing written
    assert client.get("/entry/no-such-entry").status_code == 404


# -- the command -----------------------------------------------------------------------------


def test_ui_needs_the_project_token(project: Path) -> None:
    (project / ".memory" / "bridge.token").unlink()
    answer = memctl("ui", "--project", str(project), "--json")
    assert answer.code != 0
    assert "needs the project token" in json.loads(answer.stdout)["message"]


def test_ui_reports_a_port_in_use(project: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        answer = memctl("ui", "--project", str(project), "--port", str(port))
    assert answer.code != 0 and f"cannot listen on 127.0.0.1:{port}" in answer.stderr + answer.stdout


def test_every_page_template_parses() -> None:
    environment = _environment()
    names = [n for n in environment.list_templates() if n.endswith(".j2")]
    assert "base.html.j2" in names
    for name in names:
        environment.get_template(name)


def test_search_filters_by_slot_type_and_tag(client: TestClient) -> None:
    lessons = client.get("/search?q=retry+backoff+stream&slot=self_improvement").text
    assert "self_improvement/lesson-timeout.md" in lessons and "entry n-" not in lessons
    assert 'value="self_improvement" selected' in lessons
    typed = client.get("/search?q=deploy&type=reference").text
    assert "knowledge/deploy.md" not in typed
    assert "Nothing matched" in client.get("/search?q=learned&tag=nope").text
    assert client.get("/search?q=deploy&slot=nope").status_code == 400


def test_search_says_nothing_matched_and_offers_best_effort(client: TestClient) -> None:
    nothing = client.get("/search?q=zqxv+florp+blarg").text
    assert 'id="nothing-found"' in nothing and "Nothing matched" in nothing and "best effort" in nothing
    assert 'id="hits"' not in nothing
    guessed = client.get("/search?q=zqxv+florp+blarg&best_effort=1").text
    assert (
        'id="hits"' in guessed
        and "best effort</span>" in guessed
        and 'name="best_effort" value="1" checked' in guessed
    )


def test_memctl_ui_serves_on_loopback_with_a_one_time_link(project: Path) -> None:
    with memctl_ui(project) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=server.url) as browser:
            assert browser.get("/entries").status_code == 303
            first = browser.get(server.login_url)
            assert first.status_code == 303 and "HttpOnly" in first.headers["set-cookie"]
            assert "release/process" in browser.get("/entries").text
        with httpx.Client(base_url=server.url) as other:
            assert other.get(server.login_url).status_code == 403  # used up


def test_ui_reports_an_unreachable_store_before_serving(project: Path) -> None:
    (project / ".memory" / "config.toml").write_text(f'entry_store = "valkey://127.0.0.1:{free_port()}/0"\n')
    answer = memctl("ui", "--project", str(project), "--json")
    assert answer.code == 5, answer.stdout
    assert json.loads(answer.stdout)["error"] == "StoreUnavailable"


def test_the_login_link_expires_after_ten_minutes(
    anonymous: TestClient, auth: Auth, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = time.monotonic() + 601
    monkeypatch.setattr("memctl.ui._auth.time.monotonic", lambda: later)
    answer = anonymous.get(f"/login?code={auth.login_code}")
    assert answer.status_code == 403 and "expired" in answer.text


def test_memctl_ui_prints_where_to_log_in(project: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "memctl", "ui", "--project", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdout is not None
        try:
            first, second = process.stdout.readline(), process.stdout.readline()
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert first.startswith(f"memctl ui: {project} at http://127.0.0.1:")
    assert re.match(r"log in \(one-time link, 10 minutes\): http://127\.0\.0\.1:\d+/login\?code=\S+$", second)
    assert (project / ".memory" / "bridge.token").read_text().strip() not in first + second


def test_the_status_page_shows_the_maintenance_job_when_status_reports_it() -> None:
    """`status.components` reports no maintenance job yet; once it does, the page shows it."""
    report = {
        "stores": [],
        "capture": {"skipped": True, "last_compile": None, "last_compile_attempted": None},
        "maintenance": {
            "healthy": False,
            "last_success_at": "2026-12-01T03:00:00Z",
            "last_failure_at": None,
            "open_escalations": [
                {"signature": "<b>compile</b>", "opened_at": "2026-12-01", "failures": 3, "report": "r.md"}
            ],
        },
    }
    page = render("status.html.j2", csrf="x", done="", nav="/status", report=report, project="/p", scope="p")
    text = page.body.decode()
    assert "maintenance job" in text and "last success 2026-12-01T03:00:00+00:00, last failure never" in text
    assert "3 failures since 2026-12-01: r.md" in text and "&lt;b&gt;compile&lt;/b&gt;" in text
