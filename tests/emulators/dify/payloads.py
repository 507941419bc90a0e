"""Request bodies and query strings: JSON decoding, pydantic-like coercion, retrieval models."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from .errors import bad_json, invalid_param, validation_error

__all__ = [
    "SEARCH_METHODS",
    "as_bool",
    "as_int",
    "default_retrieval_model",
    "json_body",
    "optional_str",
    "page_params",
    "parse_retrieval_model",
    "required_str",
]

SEARCH_METHODS = ("keyword_search", "semantic_search", "full_text_search", "hybrid_search")
_TRUE = ("true", "1", "yes", "on", "t", "y")
_FALSE = ("false", "0", "no", "off", "f", "n")


async def json_body(request: Request) -> dict[str, Any]:
    """The JSON object of the body ({} when empty); a non-JSON body is Werkzeug's 400."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise bad_json(str(exc)) from None
    if not isinstance(data, dict):
        raise invalid_param("Input should be a valid dictionary")
    return data


def required_str(body: dict[str, Any], key: str, model: str) -> str:
    value = body.get(key)
    if value is None:
        raise validation_error(model, key, "Field required [type=missing]")
    if not isinstance(value, str):
        raise validation_error(model, key, "Input should be a valid string [type=string_type]")
    return value


def optional_str(body: dict[str, Any], key: str, model: str) -> str | None:
    return None if body.get(key) is None else required_str(body, key, model)


def as_bool(value: Any, model: str, field: str) -> bool:
    """pydantic's lax bool: true/false, 0/1 and the usual strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
        return value.lower() in _TRUE
    raise validation_error(model, field, "Input should be a valid boolean [type=bool_type]")


def as_int(value: Any, model: str, field: str) -> int:
    """pydantic's lax int: ints, integral floats and digit strings."""
    if isinstance(value, bool):
        raise validation_error(model, field, "Input should be a valid integer [type=int_type]")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise validation_error(model, field, "Input should be a valid integer [type=int_type]")


def _as_float(value: Any, model: str, field: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise validation_error(model, field, "Input should be a valid number [type=float_type]") from None


def page_params(request: Request) -> tuple[int, int]:
    """`page` (default 1) and `limit` (default 20) as Flask's `type=int` reads them."""
    values = []
    for key, default in (("page", 1), ("limit", 20)):
        try:
            values.append(int(request.query_params.get(key, default)))
        except ValueError:
            values.append(default)
    return max(values[0], 1), max(values[1], 1)


def default_retrieval_model(top_k: int) -> dict[str, Any]:
    return {
        "search_method": "semantic_search",
        "reranking_enable": False,
        "reranking_mode": None,
        "reranking_model": {"reranking_provider_name": "", "reranking_model_name": ""},
        "weights": None,
        "top_k": top_k,
        "score_threshold_enabled": False,
        "score_threshold": None,
    }


def _weights(raw: Any, model: str) -> dict[str, Any] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise validation_error(model, "weights", "Input should be a valid dictionary")
    vector, keyword = raw.get("vector_setting"), raw.get("keyword_setting")
    if not isinstance(vector, dict) or "vector_weight" not in vector:
        raise validation_error(model, "weights.vector_setting.vector_weight", "Field required [type=missing]")
    if not isinstance(keyword, dict) or "keyword_weight" not in keyword:
        raise validation_error(
            model, "weights.keyword_setting.keyword_weight", "Field required [type=missing]"
        )
    weight_type = raw.get("weight_type")
    if weight_type not in (None, "semantic_first", "keyword_first", "customized"):
        raise validation_error(
            model,
            "weights.weight_type",
            "Input should be 'semantic_first', 'keyword_first' or 'customized' [type=literal_error]",
        )
    return {
        "weight_type": weight_type,
        "vector_setting": {
            "vector_weight": _as_float(
                vector["vector_weight"], model, "weights.vector_setting.vector_weight"
            ),
            "embedding_provider_name": str(vector.get("embedding_provider_name") or ""),
            "embedding_model_name": str(vector.get("embedding_model_name") or ""),
        },
        "keyword_setting": {
            "keyword_weight": _as_float(
                keyword["keyword_weight"], model, "weights.keyword_setting.keyword_weight"
            )
        },
    }


def parse_retrieval_model(raw: Any, model: str = "RetrievalModel") -> dict[str, Any]:
    """A validated, normalised `retrieval_model` (the four mandatory fields of spec §3.3 / §6.1)."""
    if not isinstance(raw, dict):
        raise validation_error(model, "retrieval_model", "Input should be a valid dictionary")
    for key in ("search_method", "reranking_enable", "top_k", "score_threshold_enabled"):
        if raw.get(key) is None:
            raise validation_error(model, key, "Field required [type=missing]")
    if raw["search_method"] not in SEARCH_METHODS:
        choices = "'keyword_search', 'semantic_search', 'full_text_search' or 'hybrid_search'"
        raise validation_error(model, "search_method", f"Input should be {choices} [type=enum]")
    mode = raw.get("reranking_mode")
    if mode not in (None, "reranking_model", "weighted_score"):
        raise validation_error(
            model,
            "reranking_mode",
            "Input should be 'reranking_model' or 'weighted_score' [type=literal_error]",
        )
    rerank = raw.get("reranking_model") or {}
    if not isinstance(rerank, dict):
        raise validation_error(model, "reranking_model", "Input should be a valid dictionary")
    threshold = raw.get("score_threshold")
    return {
        "search_method": raw["search_method"],
        "reranking_enable": as_bool(raw["reranking_enable"], model, "reranking_enable"),
        "reranking_mode": mode,
        "reranking_model": {
            "reranking_provider_name": str(rerank.get("reranking_provider_name") or ""),
            "reranking_model_name": str(rerank.get("reranking_model_name") or ""),
        },
        "weights": _weights(raw.get("weights"), model),
        "top_k": as_int(raw["top_k"], model, "top_k"),
        "score_threshold_enabled": as_bool(raw["score_threshold_enabled"], model, "score_threshold_enabled"),
        "score_threshold": None if threshold is None else _as_float(threshold, model, "score_threshold"),
    }
