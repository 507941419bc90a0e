"""A real Dify API for the `real_dify` tests (scripts/test starts 1.14.2 and 1.16.1 in CI).

`MEMCTL_TEST_DIFY_URL` is its origin (http://127.0.0.1:P) and `MEMCTL_TEST_DIFY_ADMIN`
the `admin.json` that `run-dify.sh start --admin` wrote (email and password). Tests
skip, naming the variable, when either is unset. A session shares one dataset API key
(Dify allows ten per workspace), revoked at the end; each test's datasets carry a
unique name prefix and are deleted afterwards.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

__all__ = [
    "RealDify",
    "console",
    "delete_datasets",
    "real_dify_release",
    "real_dify_target",
    "unique_prefix",
]


@dataclass(frozen=True)
class RealDify:
    url: str  # origin, without /v1
    email: str
    password: str
    api_key: str = ""


def real_dify_target() -> RealDify:
    """The server named by the environment, or a skip that says what is missing."""
    url = os.environ.get("MEMCTL_TEST_DIFY_URL", "")
    admin = os.environ.get("MEMCTL_TEST_DIFY_ADMIN", "")
    if not url or not admin:
        pytest.skip(
            "no real Dify: set MEMCTL_TEST_DIFY_URL and MEMCTL_TEST_DIFY_ADMIN "
            "(scripts/test starts ../shared/dify/run-dify.sh as root)"
        )
    account = json.loads(Path(admin).read_text())
    return RealDify(url.rstrip("/"), account["email"], account["password"])


def real_dify_release(url: str) -> str:
    """The release the server names (its X-Version header), or why it could not be read."""
    try:
        response = httpx.get(f"{url.rstrip('/')}/health", timeout=10)
    except httpx.HTTPError as exc:
        return f"unreachable ({exc.__class__.__name__})"
    return response.headers.get("x-version") or str(response.json().get("version") or "unknown")


@contextmanager
def console(target: RealDify) -> Iterator[httpx.Client]:
    """A logged-in console client (cookies plus the X-CSRF-Token header)."""
    with httpx.Client(base_url=target.url, timeout=30) as client:
        password = base64.b64encode(target.password.encode()).decode()
        client.post(
            "/console/api/login", json={"email": target.email, "password": password, "remember_me": True}
        ).raise_for_status()
        client.headers["X-CSRF-Token"] = client.cookies.get("csrf_token") or ""
        yield client


def unique_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}-"


def delete_datasets(target: RealDify, prefix: str) -> None:
    """Remove the datasets a test created (by their name prefix)."""
    headers = {"Authorization": f"Bearer {target.api_key}"}
    with httpx.Client(base_url=f"{target.url}/v1", headers=headers, timeout=30) as api:
        body = api.get("/datasets", params={"keyword": prefix, "limit": 100}).json()
        for dataset in body.get("data") or []:
            if str(dataset["name"]).startswith(prefix):
                api.delete(f"/datasets/{dataset['id']}")
