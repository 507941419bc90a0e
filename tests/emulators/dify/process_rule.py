"""Process rules (spec §4.2): request validation and the stored `{mode, rules}` form."""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from .errors import invalid_param

__all__ = ["AUTOMATIC_RULES", "ProcessRule", "parse_process_rule"]

AUTOMATIC_RULES: dict[str, Any] = {
    "pre_processing_rules": [
        {"id": "remove_extra_spaces", "enabled": True},
        {"id": "remove_urls_emails", "enabled": False},
    ],
    "segmentation": {"delimiter": "\n", "max_tokens": 500, "chunk_overlap": 50},
}
_MODES = ("automatic", "custom", "hierarchical")
_PRE_PROCESSING_IDS = ("remove_stopwords", "remove_extra_spaces", "remove_urls_emails")


@dataclass(frozen=True)
class ProcessRule:
    """A stored rule; `automatic` stores Dify's AUTOMATIC_RULES as its rules."""

    mode: str
    rules: dict[str, Any]
    id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def view(self) -> dict[str, Any]:
        return {"mode": self.mode, "rules": copy.deepcopy(self.rules)}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise invalid_param(message)


def _pre_processing(raw: Any) -> list[dict[str, Any]]:
    _require(raw is not None, "Process rule pre_processing_rules is required")
    _require(isinstance(raw, list), "Process rule pre_processing_rules is invalid")
    unique: dict[str, dict[str, Any]] = {}
    for item in raw:
        _require(isinstance(item, dict) and "id" in item, "Process rule pre_processing_rules id is required")
        _require(item["id"] in _PRE_PROCESSING_IDS, "Process rule pre_processing_rules id is invalid")
        _require("enabled" in item, "Process rule pre_processing_rules enabled is required")
        _require(isinstance(item["enabled"], bool), "Process rule pre_processing_rules enabled is invalid")
        unique[item["id"]] = {"id": item["id"], "enabled": item["enabled"]}
    return list(unique.values())


def _segmentation(raw: Any, *, needs_size: bool) -> dict[str, Any]:
    _require(raw is not None, "Process rule segmentation is required")
    _require(isinstance(raw, dict), "Process rule segmentation is invalid")
    if not needs_size:
        return dict(raw)
    _require(bool(raw.get("separator")), "Process rule segmentation separator is required")
    _require(isinstance(raw["separator"], str), "Process rule segmentation separator is invalid")
    _require(raw.get("max_tokens") is not None, "Process rule segmentation max_tokens is required")
    max_tokens = raw["max_tokens"]
    _require(
        isinstance(max_tokens, int) and not isinstance(max_tokens, bool),
        "Process rule segmentation max_tokens is invalid",
    )
    overlap = raw.get("chunk_overlap", 0)
    _require(
        isinstance(overlap, int) and not isinstance(overlap, bool), "Process rule chunk_overlap is invalid"
    )
    return {"separator": raw["separator"], "max_tokens": max_tokens, "chunk_overlap": overlap}


def parse_process_rule(raw: Any) -> ProcessRule:
    """Validate a request's `process_rule` (messages as Dify's `process_rule_args_validate`).

    Out-of-range `max_tokens` is deliberately accepted here: Dify fails it later, asynchronously.
    """
    _require(isinstance(raw, dict), "Process rule is invalid")
    mode = raw.get("mode")
    _require(bool(mode), "Process rule mode is required")
    _require(mode in _MODES, "Process rule mode is invalid")
    if mode == "automatic":
        return ProcessRule("automatic", copy.deepcopy(AUTOMATIC_RULES))
    rules = raw.get("rules")
    _require(rules is not None, "Process rule rules is required")
    _require(isinstance(rules, dict), "Process rule rules is invalid")
    parent_mode = rules.get("parent_mode", "paragraph") if mode == "hierarchical" else None
    _require(parent_mode in (None, "paragraph", "full-doc"), "Process rule parent_mode is invalid")
    stored: dict[str, Any] = {
        "pre_processing_rules": _pre_processing(rules.get("pre_processing_rules")),
        "segmentation": _segmentation(rules.get("segmentation"), needs_size=parent_mode != "full-doc"),
    }
    if mode == "hierarchical":
        stored["parent_mode"] = parent_mode
        stored["subchunk_segmentation"] = rules.get("subchunk_segmentation")
    return ProcessRule(str(mode), stored)
