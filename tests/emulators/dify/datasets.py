"""Knowledge bases: create (D2), list (D1), update (D4), delete (D5) (spec §3)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from .errors import DifyError, invalid_param
from .models import Dataset, new_id
from .payloads import page_params, parse_retrieval_model
from .views import dataset_view

if TYPE_CHECKING:
    from .state import DifyState

__all__ = ["NO_EMBEDDING_MODEL", "create_dataset", "delete_dataset", "list_datasets", "update_dataset"]

NO_EMBEDDING_MODEL = (
    "No Embedding Model available. Please configure a valid provider in the Settings -> Model Provider."
)
_NO_RERANK_MODEL = (
    "No Rerank Model available. Please configure a valid provider in the Settings -> Model Provider."
)
_TECHNIQUES = ("high_quality", "economy")
_PERMISSIONS = ("only_me", "all_team_members", "partial_members")
_PROVIDERS = ("vendor", "external")
_PAGE_CAP = 100


def _name(value: Any) -> str:
    if not isinstance(value, str) or not 1 <= len(value) <= 40:
        raise invalid_param("Name must be between 1 to 40 characters.")
    return value


def _description(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > 400:
        raise invalid_param("Description cannot exceed 400 characters.")
    return value


def _choice(value: Any, choices: tuple[str, ...], message: str) -> Any:
    if value is not None and value not in choices:
        raise invalid_param(message)
    return value


def resolve_embedding_model(state: DifyState, model: Any, provider: Any) -> tuple[str, str]:
    """The given model pair if the workspace offers it, else the default; 400 when there is none."""
    if model or provider:
        if (model, provider) not in state.embedding_models:
            raise invalid_param(NO_EMBEDDING_MODEL)
        return str(model), str(provider)
    if not state.embedding_models:
        raise invalid_param(NO_EMBEDDING_MODEL)
    return state.embedding_models[0]


def _retrieval_model(state: DifyState, raw: Any) -> dict[str, Any] | None:
    if raw is None:
        return None
    model = parse_retrieval_model(raw)
    rerank = model["reranking_model"]
    names = (rerank["reranking_model_name"], rerank["reranking_provider_name"])
    if all(names) and names not in state.rerank_models:
        raise invalid_param(_NO_RERANK_MODEL)
    return model


def create_dataset(state: DifyState, body: dict[str, Any], now: float) -> Dataset:
    name = _name(body.get("name"))
    description = _description(body.get("description"))
    technique = _choice(body.get("indexing_technique"), _TECHNIQUES, "Invalid indexing technique.")
    permission = _choice(body.get("permission"), _PERMISSIONS, "Invalid permission.") or "only_me"
    provider = _choice(body.get("provider"), _PROVIDERS, "Invalid provider.") or "vendor"
    retrieval = _retrieval_model(state, body.get("retrieval_model"))
    if state.dataset_named(name) is not None:
        raise DifyError(
            409, "dataset_name_duplicate", "The dataset name already exists. Please modify your dataset name."
        )
    model: tuple[str | None, str | None] = (None, None)
    if technique == "high_quality":
        model = resolve_embedding_model(
            state, body.get("embedding_model"), body.get("embedding_model_provider")
        )
    dataset = Dataset(
        id=new_id(),
        name=name,
        description=description,
        permission=permission,
        provider=provider,
        indexing_technique=technique,
        embedding_model=model[0],
        embedding_model_provider=model[1],
        retrieval_model=retrieval,
        created_at=now,
        updated_at=now,
        created_by=state.owner.id,
    )
    state.datasets[dataset.id] = dataset
    return dataset


def update_dataset(state: DifyState, dataset: Dataset, body: dict[str, Any], now: float) -> None:
    """D4: only the keys given change (validated before anything is written)."""
    changes: dict[str, Any] = {}
    if "name" in body:
        name = _name(body["name"])
        other = state.dataset_named(name)
        if other is not None and other.id != dataset.id:
            raise invalid_param("Dataset name already exists")
        changes["name"] = name
    if "description" in body:
        changes["description"] = _description(body["description"])
    if body.get("permission") is not None:
        changes["permission"] = _choice(body["permission"], _PERMISSIONS, "Invalid permission.")
    if "retrieval_model" in body:
        changes["retrieval_model"] = _retrieval_model(state, body["retrieval_model"])
    technique = _choice(body.get("indexing_technique"), _TECHNIQUES, "Invalid indexing technique.")
    technique = technique or dataset.indexing_technique
    if technique == "high_quality" and (
        "embedding_model" in body or "embedding_model_provider" in body or dataset.embedding_model is None
    ):
        model = body.get("embedding_model", dataset.embedding_model)
        provider = body.get("embedding_model_provider", dataset.embedding_model_provider)
        changes["embedding_model"], changes["embedding_model_provider"] = resolve_embedding_model(
            state, model, provider
        )
    changes["indexing_technique"] = technique
    if isinstance(body.get("partial_member_list"), list):
        changes["partial_member_list"] = [
            str(m.get("user_id")) for m in body["partial_member_list"] if isinstance(m, dict)
        ]
    for key, value in changes.items():
        setattr(dataset, key, value)
    dataset.updated_at = now


def delete_dataset(state: DifyState, dataset: Dataset) -> None:
    del state.datasets[dataset.id]


def list_datasets(state: DifyState, request: Request, now: float) -> dict[str, Any]:
    """D1: `keyword` (case-insensitive), `tag_ids` (no tags exist, so any filters everything out),
    newest first; `has_more` per version (spec §1.5)."""
    page, limit = page_params(request)
    keyword = (request.query_params.get("keyword") or "").lower()
    matching = [ds for ds in state.datasets.values() if keyword in ds.name.lower()]
    if request.query_params.getlist("tag_ids"):
        matching = []
    matching.sort(key=lambda ds: (-ds.created_at, ds.id))
    per_page = min(limit, _PAGE_CAP)
    data = matching[(page - 1) * per_page : page * per_page]
    total = len(matching)
    has_more = page * limit < total if state.quirks.datasets_has_more_by_total else len(data) == limit
    return {
        "data": [dataset_view(state, ds, now) for ds in data],
        "has_more": has_more,
        "limit": limit,
        "total": total,
        "page": page,
    }
