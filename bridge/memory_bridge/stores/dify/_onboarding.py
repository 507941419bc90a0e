"""Headless Dify onboarding: from a fresh install to a dataset API key and memctl's slots.

Each step is idempotent, so a re-run after a partial failure finishes the job:
1. `GET /console/api/setup`; if not done: `POST /console/api/init` (when an init
   password is set) and `POST /console/api/setup` with the admin account;
2. log in (`POST /console/api/login`): cookies plus the `X-CSRF-Token` header on
   Dify >= 1.9, a Base64 password on >= 1.10, a bearer token in the body before 1.9;
3. choose the indexing technique unless given: `economy` when the workspace has no
   default text-embedding model (a fresh Dify), else `high_quality`;
4. reuse or create a dataset API key (`/console/api/datasets/api-keys`);
5. create the slots' datasets with the metadata schema (through the Knowledge API).
   If this fails, a key created in step 4 is revoked, so failed runs leak no keys
   (Dify allows ten per workspace).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from ..._errors import AccessDenied, InvalidInput
from ._client import version_tuple
from ._store import DifyKnowledgeStore

__all__ = ["OnboardingReport", "onboard"]

_BASE64_PASSWORD_SINCE = (1, 10, 0)


@dataclass
class OnboardingReport:
    setup: str = "already done"
    api_key: str = ""
    key_created: bool = False
    slots: dict[str, str] = field(default_factory=dict)  # slot -> dataset id
    created_slots: list[str] = field(default_factory=list)
    version: str | None = None
    technique: str = "high_quality"


def _check(response: httpx.Response, step: str) -> Any:
    if response.status_code < 400:
        return response.json() if response.content else None
    try:
        message = response.json().get("message") or response.text
    except ValueError:
        message = response.text
    text = f"Dify onboarding, {step}: {response.status_code} {message}"
    if response.status_code in (401, 403):
        raise AccessDenied(text, operation="onboard")
    raise InvalidInput("onboarding", text, operation="onboard")


async def _setup(
    console: httpx.AsyncClient, email: str, name: str, password: str, init_password: str | None
) -> str:
    state = _check(await console.get("/console/api/setup"), "read setup state")
    if state.get("step") == "finished":
        return "already done"
    if init_password:
        _check(await console.post("/console/api/init", json={"password": init_password}), "init password")
    body = {"email": email, "name": name, "password": password, "language": "en-US"}
    _check(await console.post("/console/api/setup", json=body), "create the admin account")
    return "done now"


async def _login(console: httpx.AsyncClient, email: str, password: str, version: str | None) -> None:
    parsed = version_tuple(version or "") or (9, 9, 9)
    sent = base64.b64encode(password.encode()).decode() if parsed >= _BASE64_PASSWORD_SINCE else password
    body = _check(
        await console.post(
            "/console/api/login", json={"email": email, "password": sent, "remember_me": True}
        ),
        "log in",
    )
    token = (body or {}).get("data", {}).get("access_token") if isinstance(body, dict) else None
    if token:  # before Dify 1.9: a bearer token in the body
        console.headers["Authorization"] = f"Bearer {token}"
    csrf = console.cookies.get("csrf_token") or console.cookies.get("__Host-csrf_token")
    if csrf:
        console.headers["X-CSRF-Token"] = csrf


async def _dataset_key(console: httpx.AsyncClient, existing: str | None) -> tuple[str, str | None]:
    """The key to use, and the id of a key created now (None when `existing` is reused)."""
    if existing:
        return existing, None
    created = _check(await console.post("/console/api/datasets/api-keys"), "create a dataset API key")
    return str(created["token"]), str(created["id"])


async def _technique(console: httpx.AsyncClient) -> str:
    """`economy` when the workspace has no default embedding model, else `high_quality`."""
    response = await console.get(
        "/console/api/workspaces/current/default-model", params={"model_type": "text-embedding"}
    )
    if response.status_code >= 400:  # an older Dify without this call: keep the default
        return "high_quality"
    return "high_quality" if (response.json() or {}).get("data") else "economy"


async def _create_slots(
    report: OnboardingReport,
    base_url: str,
    slots: Sequence[str],
    transport: httpx.AsyncBaseTransport | None,
) -> None:
    store = DifyKnowledgeStore(
        base_url + "/v1", report.api_key, technique=report.technique, transport=transport
    )
    try:
        for slot in slots:
            info, created = await store.create_slot(slot)
            report.slots[slot] = info.id
            if created:
                report.created_slots.append(slot)
    finally:
        await store.close()


async def onboard(
    base_url: str,
    *,
    email: str,
    password: str,
    name: str = "admin",
    init_password: str | None = None,
    api_key: str | None = None,
    slots: Sequence[str] = (),
    technique: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> OnboardingReport:
    """Bring a Dify instance (its origin, e.g. http://127.0.0.1) to a usable state for memctl."""
    report = OnboardingReport()
    origin = base_url.rstrip("/")
    async with httpx.AsyncClient(base_url=origin, transport=transport, timeout=30) as console:
        report.setup = await _setup(console, email, name, password, init_password)
        probe = await console.get("/console/api/setup")
        report.version = probe.headers.get("x-version")
        if api_key is None or technique is None:
            await _login(console, email, password, report.version)
        report.technique = technique or await _technique(console)
        report.api_key, key_id = await _dataset_key(console, api_key)
        report.key_created = key_id is not None
        try:
            await _create_slots(report, origin, slots, transport)
        except BaseException:
            if key_id is not None:  # nobody will ever see this key: give it back
                await console.delete(f"/console/api/datasets/api-keys/{key_id}")
            raise
    return report
