"""Playbook events as JSON lines on a file descriptor, for `memctl`'s progress and summary."""

from __future__ import annotations

DOCUMENTATION = """
    name: events
    type: notification
    short_description: write playbook events as JSON lines for memctl
    description:
      - Writes one JSON object per line to the file descriptor named by C(MEMCTL_EVENTS_FD)
        (C(memctl) passes the write end of a pipe). Does nothing when it is not set.
      - Events are C(play), C(task), C(result) (with the host, status, changed flag, message,
        warnings and diff) and C(stats) (the recap per host).
      - Results of C(no_log) tasks arrive censored by Ansible and are written as they arrive.
    requirements:
      - MEMCTL_EVENTS_FD set in the environment
"""

import difflib
import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase


def _canonical(value: Any) -> str:
    """Text to compare and show: strings as they are, anything else as JSON with sorted keys."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, indent=2, default=str)
    return text if text.endswith("\n") or not text else text + "\n"


def _diff_text(result: dict[str, Any]) -> str | None:
    """A module's diff as text: its prepared unified diff, or a unified diff of before and
    after compared canonically (no text when they are the same)."""
    diffs = result.get("diff")
    if not diffs:
        return None
    parts = []
    for diff in diffs if isinstance(diffs, list) else [diffs]:
        if not isinstance(diff, dict):
            continue
        if diff.get("prepared"):
            parts.append(str(diff["prepared"]))
        elif "before" in diff or "after" in diff:
            before, after = _canonical(diff.get("before", "")), _canonical(diff.get("after", ""))
            header = diff.get("after_header") or diff.get("before_header") or ""
            lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), header, header)
            parts.append("".join(lines).rstrip("\n"))
    return "\n".join(part for part in parts if part) or None


_STANDARD_KEYS = frozenset({"changed", "diff", "failed", "invocation", "msg", "skipped", "warnings"})


def _failure(data: dict[str, Any]) -> str | None:
    """Why a task failed: its message, or the conditional that broke it; for a loop, each
    failed item's."""
    items = [item for item in data.get("results") or [] if isinstance(item, dict) and item.get("failed")]
    if items:
        return "; ".join(_failure(item) or "failed" for item in items)
    for key in ("msg", "changed_when_result", "failed_when_result", "module_stderr"):
        if data.get(key):
            return str(data[key]).strip()
    return None


def _report(action: str, data: dict[str, Any]) -> dict[str, Any] | None:
    """What one of memctl's own modules returned, for memctl's summary."""
    if not action.startswith("memctl.stack."):
        return None
    return {k: v for k, v in data.items() if k not in _STANDARD_KEYS and not k.startswith("_ansible")}


class CallbackModule(CallbackBase):  # type: ignore[misc]
    """Emit memctl's events; enabled by `memctl` through ANSIBLE_CALLBACKS_ENABLED."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "notification"
    CALLBACK_NAME = "memctl.stack.events"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        descriptor = os.environ.get("MEMCTL_EVENTS_FD")
        self._out = os.fdopen(int(descriptor), "w", buffering=1) if descriptor else None

    def _emit(self, event: str, **fields: Any) -> None:
        if self._out is not None:
            self._out.write(json.dumps({"event": event, **fields}, default=str) + "\n")

    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._emit("play", name=play.get_name())

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        self._emit("task", name=task.get_name())

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        self._emit("task", name=task.get_name(), handler=True)

    def _result(self, status: str, result: Any) -> None:
        data: dict[str, Any] = result.result
        self._emit(
            "result",
            host=result.host.get_name(),
            task=result.task.get_name(),
            status=status,
            changed=bool(data.get("changed", False)),
            msg=_failure(data) if status in ("failed", "unreachable") else None,
            stderr=(data.get("stderr") or None) if status == "failed" else None,
            warnings=data.get("warnings") or [],
            diff=_diff_text(data),
            report=_report(result.task.action, data),
        )

    def v2_runner_on_ok(self, result: Any) -> None:
        self._result("ok", result)

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._result("ignored" if ignore_errors else "failed", result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._result("skipped", result)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._result("unreachable", result)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        recap = {host: stats.summarize(host) for host in sorted(stats.processed)}
        self._emit("stats", hosts=recap)
        if self._out is not None:
            self._out.flush()
