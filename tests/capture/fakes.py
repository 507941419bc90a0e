"""Scripted stand-ins for what cannot run here: the `claude` and `codex` CLIs and an
OpenAI-compatible server. Each records what it was given and answers from a script."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..bridges import bridge_env

_CLI = '''#!{python}
"""A fake {name}: records argv and stdin, answers the next scripted reply."""
import json, sys, time
from pathlib import Path

here = Path(__file__).resolve().parent
calls = here / "{name}.calls.jsonl"
index = len(calls.read_text().splitlines()) if calls.exists() else 0
replies = json.loads((here / "{name}.replies.json").read_text())
reply = replies[min(index, len(replies) - 1)]
prompt = sys.stdin.read()
with calls.open("a") as handle:
    handle.write(json.dumps({{"argv": sys.argv, "stdin": prompt}}) + "\\n")
if reply.get("hang"):
    time.sleep(3600)
if "exit" in reply:
    sys.stderr.write(reply.get("stderr", "failed"))
    sys.exit(reply["exit"])
text = reply["text"]
if "{name}" == "claude":
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "result": text,
                      "session_id": "fake", "num_turns": 1, "total_cost_usd": 0}}))
else:
    print(json.dumps({{"type": "thread.started", "thread_id": "fake"}}))
    print(json.dumps({{"type": "item.completed", "item": {{"id": "i0", "type": "reasoning", "text": "hm"}}}}))
    item = {{"id": "i1", "type": "agent_message", "text": text}}
    print(json.dumps({{"type": "item.completed", "item": item}}))
    print(json.dumps({{"type": "turn.completed", "usage": {{}}}}))
'''


@dataclass
class FakeCli:
    """A fake CLI in `bin_dir`; `script()` sets its replies, `calls()` reads what it got."""

    name: str
    bin_dir: Path

    def script(self, *replies: dict[str, Any]) -> None:
        (self.bin_dir / f"{self.name}.replies.json").write_text(json.dumps(list(replies)))
        (self.bin_dir / f"{self.name}.calls.jsonl").unlink(missing_ok=True)

    def calls(self) -> list[dict[str, Any]]:
        path = self.bin_dir / f"{self.name}.calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def install_fake(bin_dir: Path, name: str) -> FakeCli:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(_CLI.format(python=sys.executable, name=name))
    path.chmod(0o755)
    fake = FakeCli(name, bin_dir)
    fake.script({"text": '{"atoms": []}'})
    return fake


def atoms_reply(*atoms: dict[str, Any]) -> dict[str, Any]:
    return {"text": json.dumps({"atoms": list(atoms)})}


def capture_env(bin_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a client running hooks: the fakes first on PATH, memctl beside python."""
    env = bridge_env(**extra)
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("CLAUDE_PROJECT_DIR", None)
    return env


@dataclass
class FakeOpenAI:
    url: str
    requests: list[dict[str, Any]]
    replies: list[str]


_SHAPES = {
    # path -> how the API wraps the reply text
    "/v1/chat/completions": lambda text: {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]
    },
    "/v1/messages": lambda text: {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
    },
}


@contextmanager
def openai_server(*replies: str) -> Iterator[FakeOpenAI]:
    """A loopback LLM API answering `replies` in turn: OpenAI-compatible
    /v1/chat/completions and Anthropic's /v1/messages (any other path gets 404)."""
    state = FakeOpenAI("", [], list(replies))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append(
                {
                    "path": self.path,
                    "auth": self.headers.get("Authorization"),
                    "headers": headers,
                    "body": body,
                }
            )
            text = state.replies[min(len(state.requests) - 1, len(state.replies) - 1)]
            shape = _SHAPES.get(self.path)
            data = json.dumps(shape(text) if shape else {"error": "not found"}).encode()
            self.send_response(200 if shape else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
