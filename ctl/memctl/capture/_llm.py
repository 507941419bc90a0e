"""LLM providers for capture: the `claude` and `codex` CLIs, the Anthropic API and any
OpenAI-compatible API (OpenAI, Ollama, LM Studio, vLLM) at a configurable base URL.

Prompts go to a CLI on stdin, never on its command line (where `ps` would show them).
`ask()` validates the answer against a pydantic model, with bounded retries: an
invalid answer is retried with a stricter reminder, an unreachable provider after a
short back-off; every attempt has a timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import BaseModel

from memory_bridge import ConfigError, MemctlError, Settings, read_token_file
from memory_bridge.core import redact

from .._errors import AnswerInvalid, ProviderUnavailable
from ._front import REENTRY_ENV
from ._schema import parse_answer

__all__ = ["Provider", "ask", "make_provider"]

STRICT = "\n\nIMPORTANT: respond with STRICT JSON only. No prose before or after. No markdown code fences."
_EXTRA_PATH = ("~/.local/bin", "/usr/local/bin", "/opt/homebrew/bin", "~/.npm-global/bin", "/snap/bin")
_DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-4o-mini"}
_DEFAULT_URLS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com/v1"}


class Provider(Protocol):
    @property
    def name(self) -> str: ...

    def complete(self, system: str, user: str, *, max_tokens: int, timeout: float) -> str:
        """The model's raw answer to one prompt."""


def _tail(text: str, limit: int = 200) -> str:
    return redact(" ".join(text.split()))[-limit:]


def _search_path() -> str:
    """PATH plus the usual install directories of the LLM CLIs (hook environments are often bare)."""
    parts = os.environ.get("PATH", "").split(os.pathsep)
    parts += [os.path.expanduser(p) for p in _EXTRA_PATH]
    return os.pathsep.join(dict.fromkeys(p for p in parts if p))


@dataclass(frozen=True)
class _Cli:
    """A CLI that reads its prompt on stdin and prints its answer."""

    name: str
    command: str
    model: str

    def _argv(self) -> list[str]:
        raise NotImplementedError

    def _answer(self, stdout: str) -> str:
        raise NotImplementedError

    def complete(self, system: str, user: str, *, max_tokens: int, timeout: float) -> str:
        path = _search_path()
        binary = shutil.which(self.command, path=path)
        if binary is None:
            raise ProviderUnavailable(f"{self.name}: command {self.command!r} not found on PATH")
        env = {**os.environ, "PATH": path, REENTRY_ENV: "1"}
        process = subprocess.Popen(
            [binary, *self._argv()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            text=True,
        )
        try:
            stdout, stderr = process.communicate(f"{system}\n\n---\n\n{user}", timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            raise ProviderUnavailable(f"{self.name}: no answer within {timeout:g} s (stopped it)") from None
        if process.returncode != 0:
            raise ProviderUnavailable(
                f"{self.name}: exited with code {process.returncode}: {_tail(stderr or stdout)}"
            )
        return self._answer(stdout)


def _stop(process: subprocess.Popen[str]) -> None:
    """SIGTERM the CLI's process group, SIGKILL it 2 s later."""
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.communicate(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class ClaudeCli(_Cli):
    """`claude -p --output-format json`, no tools and no MCP servers; reads `result`."""

    def _argv(self) -> list[str]:
        argv = ["-p", "--output-format", "json", "--max-turns", "1", "--strict-mcp-config"]
        argv += ["--mcp-config", '{"mcpServers":{}}', "--allowedTools", ""]
        return argv + (["--model", self.model] if self.model else [])

    def _answer(self, stdout: str) -> str:
        try:
            wrapper = json.loads(stdout)
        except ValueError:
            return stdout
        if not isinstance(wrapper, dict):
            return stdout
        if wrapper.get("is_error"):
            raise ProviderUnavailable(f"claude: {_tail(str(wrapper.get('result', 'error')))}")
        for key in ("result", "text"):
            if isinstance(wrapper.get(key), str):
                return str(wrapper[key])
        return stdout


@dataclass(frozen=True)
class CodexCli(_Cli):
    """`codex exec --json -`: the prompt on stdin, the last agent message from the event stream."""

    def _argv(self) -> list[str]:
        return ["exec", "--json", "--skip-git-repo-check", *(["-m", self.model] if self.model else []), "-"]

    def _answer(self, stdout: str) -> str:
        answer = None
        for line in stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            item = event.get("item") if isinstance(event, dict) else None
            if (
                isinstance(item, dict)
                and item.get("type") == "agent_message"
                and isinstance(item.get("text"), str)
            ):
                answer = item["text"]
        return stdout if answer is None else answer


@dataclass(frozen=True)
class _Http:
    name: str
    base_url: str
    model: str
    api_key: str = field(repr=False)

    def _post(self, path: str, headers: dict[str, str], body: dict[str, Any], timeout: float) -> Any:
        try:
            response = httpx.post(
                f"{self.base_url.rstrip('/')}{path}", headers=headers, json=body, timeout=timeout
            )
        except httpx.TimeoutException:
            raise ProviderUnavailable(f"{self.name}: no answer within {timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"{self.name}: {self.base_url} unreachable ({type(exc).__name__})"
            ) from None
        if response.status_code >= 400:
            raise ProviderUnavailable(f"{self.name}: HTTP {response.status_code}: {_tail(response.text)}")
        try:
            return response.json()
        except ValueError:
            raise ProviderUnavailable(f"{self.name}: the reply is not JSON") from None


class AnthropicApi(_Http):
    """POST {base}/v1/messages; the first text block of the reply."""

    def complete(self, system: str, user: str, *, max_tokens: int, timeout: float) -> str:
        headers = {"x-api-key": self.api_key, "anthropic-version": "2023-06-01"}
        body = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        reply = self._post("/v1/messages", headers, body, timeout)
        for block in reply.get("content", []) if isinstance(reply, dict) else []:
            if isinstance(block, dict) and block.get("type") == "text":
                return str(block.get("text", ""))
        raise ProviderUnavailable(f"{self.name}: the reply has no text block")


class OpenAICompatible(_Http):
    """POST {base}/chat/completions; `choices[0].message.content`."""

    def complete(self, system: str, user: str, *, max_tokens: int, timeout: float) -> str:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        }
        reply = self._post("/chat/completions", headers, body, timeout)
        try:
            return str(reply["choices"][0]["message"]["content"])
        except (KeyError, IndexError, TypeError):
            raise ProviderUnavailable(f"{self.name}: the reply has no choices[0].message.content") from None


def _api_key(settings: Settings) -> str:
    if settings.capture.api_key_file is not None:
        return (
            read_token_file(settings.capture.api_key_file)
            .get_secret_value()
            .replace("\r", "")
            .replace("\n", "")
        )
    key = settings.capture.api_key
    return "" if key is None else key.get_secret_value().replace("\r", "").replace("\n", "")


def make_provider(settings: Settings) -> Provider | None:
    """The provider the settings name, or None when capture_provider is `none`."""
    kind = settings.capture.provider
    if kind == "none":
        return None
    model = settings.capture.model
    if kind == "claude":
        return ClaudeCli("claude", settings.capture.command or "claude", model)
    if kind == "codex":
        return CodexCli("codex", settings.capture.command or "codex", model)
    key = _api_key(settings)
    if kind == "anthropic" and not key:
        raise ConfigError("capture_provider anthropic needs an API key: set capture_api_key_file")
    url = settings.capture.base_url or _DEFAULT_URLS[kind]
    cls = AnthropicApi if kind == "anthropic" else OpenAICompatible
    return cls(kind, url, model or _DEFAULT_MODELS[kind], key)


M = TypeVar("M", bound=BaseModel)


def ask(
    provider: Provider,
    system: str,
    user: str,
    model: type[M],
    *,
    timeout: float,
    retries: int,
    max_tokens: int,
    wrap: str | None = None,
) -> M:
    """Ask until the answer validates, at most 1 + `retries` times; raise the last failure."""
    error: MemctlError = ProviderUnavailable(f"{provider.name}: not asked")
    prompt = user
    for attempt in range(retries + 1):
        try:
            text = provider.complete(system, prompt, max_tokens=max_tokens, timeout=timeout)
            return parse_answer(text, model, wrap=wrap)
        except AnswerInvalid as exc:
            error, prompt = exc, user + STRICT
        except ProviderUnavailable as exc:
            error = exc
            if attempt < retries:
                time.sleep(min(2.0 * (attempt + 1), 8.0))
    raise error
