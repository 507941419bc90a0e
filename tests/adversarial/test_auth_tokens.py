"""Issue 13, finding 1: an empty or blank bearer token never switches auth on.

Every source of the token (the --token-file flag, a token file named by the environment,
both environment names, config.toml, and a compose file's unset `${VAR}`, which arrives as
a variable that is present but empty) is a start-up error naming that source, for the real
`memctl serve --http` process and for the container entry point `python -m memory_bridge`.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from memory_bridge import ConfigError, load_settings
from memory_bridge._tokens import token_source
from tests.bridges import INITIALIZE, MCP_HEADERS, bridge_env, free_port, http_bridge

BLANKS = ["", " ", "\t\n"]
START_TIMEOUT_SECONDS = 60  # a bridge that wrongly starts is stopped after this and the test fails


def _hermetic_env(home: Path, **extra: str) -> dict[str, str]:
    env = bridge_env(**extra)
    for name in ("AUTH_TOKEN", "TOKEN_FILE"):
        env.pop(name, None)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "config"), XDG_CACHE_HOME=str(home / "cache"))
    env["COLUMNS"] = "1000"  # error messages on one line
    return env


def _serve(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Start the HTTP bridge the way a user or a compose file does; it must refuse to start."""
    command = [sys.executable, "-m", "memctl", "serve", "--project", str(project), "--http"]
    command += ["--port", str(free_port()), *args]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=START_TIMEOUT_SECONDS, cwd=project
    )


def _private_file(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "project" / ".memory").mkdir(parents=True)
    return tmp_path / "project"


@pytest.mark.parametrize("blank", BLANKS)
@pytest.mark.parametrize("variable", ["MEMCTL_AUTH_TOKEN", "MEMORY_MCP_AUTH_TOKEN"])
def test_blank_token_in_the_environment_stops_serve(project: Path, variable: str, blank: str) -> None:
    done = _serve(project, _hermetic_env(project.parent, **{variable: blank}), "--host", "127.0.0.1")
    assert done.returncode == 2, done.stderr
    assert f"environment variable {variable}" in done.stderr
    assert "auth on" not in done.stderr


@pytest.mark.parametrize("blank", BLANKS)
def test_blank_token_in_config_toml_stops_serve(project: Path, blank: str) -> None:
    (project / ".memory" / "config.toml").write_text(f"auth_token = {blank!r}\n".replace("'", '"'))
    done = _serve(project, _hermetic_env(project.parent))
    assert done.returncode == 2, done.stderr
    assert "config.toml" in done.stderr and "auth_token" in done.stderr


@pytest.mark.parametrize("blank", BLANKS)
def test_blank_token_file_given_as_a_flag_stops_serve(project: Path, blank: str) -> None:
    token = _private_file(project.parent / "token", blank)
    done = _serve(project, _hermetic_env(project.parent), "--token-file", str(token))
    assert done.returncode == 2, done.stderr
    assert str(token) in done.stderr and "empty" in done.stderr


def test_blank_token_file_named_by_the_environment_stops_serve(project: Path) -> None:
    token = _private_file(project.parent / "token", "\n")
    done = _serve(project, _hermetic_env(project.parent, MEMCTL_TOKEN_FILE=str(token)))
    assert done.returncode == 2, done.stderr
    assert str(token) in done.stderr and "empty" in done.stderr


@pytest.mark.parametrize("variable", ["MEMCTL_TOKEN_FILE", "MEMCTL_AUTH_TOKEN"])
def test_compose_unset_variable_stops_the_container_entry_point(project: Path, variable: str) -> None:
    """`environment: {MEMCTL_AUTH_TOKEN: ${TOKEN}}` with TOKEN unset passes an empty value."""
    env = _hermetic_env(
        project.parent, **{variable: "", "MEMCTL_PROJECT": str(project), "MEMCTL_PORT": str(free_port())}
    )
    done = subprocess.run(
        [sys.executable, "-m", "memory_bridge", "--http"],
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
        cwd=project,
    )
    assert done.returncode == 2, done.stderr
    assert f"environment variable {variable}" in done.stderr


@pytest.mark.parametrize("blank", BLANKS)
def test_blank_token_given_directly_is_refused(project: Path, blank: str) -> None:
    with pytest.raises(ConfigError, match="auth_token flag is empty"):
        load_settings(project=project, auth_token=blank)


def test_a_blank_token_that_bypassed_validation_is_refused(project: Path) -> None:
    settings = load_settings(project=project)
    settings = settings.model_copy(
        update={"serve": settings.serve.model_copy(update={"auth_token": SecretStr("  ")})}
    )
    with pytest.raises(ConfigError, match="empty"):
        token_source(settings)


def _post_initialize(base_url: str, authorization: str) -> int:
    """POST initialize with this Authorization header byte for byte (httpx refuses a trailing blank)."""
    url = httpx.URL(base_url)
    connection = http.client.HTTPConnection(url.host, url.port, timeout=30)
    try:
        headers = {**MCP_HEADERS, "Authorization": authorization}
        connection.request("POST", "/mcp", body=json.dumps(INITIALIZE), headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_an_empty_bearer_is_refused_by_a_bridge_with_a_token(project: Path) -> None:
    env = {"HOME": str(project.parent), "XDG_CONFIG_HOME": str(project.parent / "config")}
    with http_bridge(project, MEMCTL_AUTH_TOKEN="real-token-value", **env) as bridge:
        for header in ("Bearer ", "Bearer", "", "Bearer  "):
            assert _post_initialize(bridge.base_url, header) == 401
        assert _post_initialize(bridge.base_url, "Bearer real-token-value") == 200


def test_the_bearer_scheme_is_case_insensitive_and_the_token_is_not(project: Path) -> None:
    """RFC 9110 11.1: `bearer`, `BEARER` and `Bearer` name one scheme (issue 32, finding 6)."""
    env = {"HOME": str(project.parent), "XDG_CONFIG_HOME": str(project.parent / "config")}
    with http_bridge(project, MEMCTL_AUTH_TOKEN="real-token-value", **env) as bridge:
        for scheme in ("bearer", "BEARER", "bEaReR"):
            assert _post_initialize(bridge.base_url, f"{scheme} real-token-value") == 200
        assert _post_initialize(bridge.base_url, "Bearer REAL-TOKEN-VALUE") == 401
        assert _post_initialize(bridge.base_url, "Basic real-token-value") == 401
