"""Metadata fields and document values (spec §5): values keyed by field *name*, bindings by id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DifyError, invalid_param, validation_error
from .lifecycle import progress
from .models import Dataset, Document, MetadataField, new_id
from .payloads import as_bool
from .views import BUILT_IN_FIELDS

if TYPE_CHECKING:
    from .state import DifyState

__all__ = ["create_field", "delete_field", "list_fields", "rename_field", "set_built_in", "write_values"]

_BUILT_IN_NAMES = tuple(name for name, _ in BUILT_IN_FIELDS)
_TYPES = ("string", "number", "time")
_MODEL = "MetadataOperationData"


def _check_name(dataset: Dataset, name: Any, *, exclude: str | None = None) -> str:
    if not isinstance(name, str):
        raise validation_error("MetadataArgs", "name", "Input should be a valid string [type=string_type]")
    if len(name) > 255:
        raise invalid_param("Metadata name cannot exceed 255 characters.")
    if any(f.name == name and f.id != exclude for f in dataset.fields.values()):
        raise invalid_param("Metadata name already exists.")
    if name in _BUILT_IN_NAMES:
        raise invalid_param("Metadata name already exists in Built-in fields.")
    return name


def _bound(dataset: Dataset, field_id: str) -> list[Document]:
    return [doc for doc in dataset.documents.values() if field_id in doc.bindings]


def list_fields(dataset: Dataset) -> dict[str, Any]:
    """M1: custom fields with the number of documents bound to each."""
    return {
        "doc_metadata": [
            {"id": f.id, "name": f.name, "type": f.type, "count": len(_bound(dataset, f.id))}
            for f in dataset.fields.values()
        ],
        "built_in_field_enabled": dataset.built_in_field_enabled,
    }


def create_field(dataset: Dataset, body: dict[str, Any]) -> MetadataField:
    if body.get("type") not in _TYPES:
        raise validation_error("MetadataArgs", "type", "Input should be 'string', 'number' or 'time'")
    field = MetadataField(new_id(), _check_name(dataset, body.get("name")), str(body["type"]))
    dataset.fields[field.id] = field
    return field


def _field(state: DifyState, dataset: Dataset, field_id: str) -> MetadataField | None:
    """The field, or None where old builds swallowed the failure; 1.14+ says so."""
    field = dataset.fields.get(field_id)
    if field is None and not state.quirks.metadata_errors_swallowed:
        raise invalid_param("Metadata not found.")
    return field


def rename_field(state: DifyState, dataset: Dataset, field_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """M3: the key is renamed in every bound document."""
    field = _field(state, dataset, field_id)
    if field is None:
        return {"id": None, "name": None, "type": None}
    name = _check_name(dataset, body.get("name"), exclude=field.id)
    for doc in _bound(dataset, field.id):
        if doc.metadata and field.name in doc.metadata:
            doc.metadata[name] = doc.metadata.pop(field.name)
    field.name = name
    return {"id": field.id, "name": field.name, "type": field.type}


def delete_field(state: DifyState, dataset: Dataset, field_id: str) -> None:
    """M4: the key and the bindings go."""
    field = _field(state, dataset, field_id)
    if field is None:
        return
    for doc in _bound(dataset, field.id):
        if doc.metadata:
            doc.metadata.pop(field.name, None)
        doc.bindings.remove(field.id)
    del dataset.fields[field.id]


def _built_in_values(state: DifyState, doc: Document) -> dict[str, Any]:
    """Built-ins as enabling (or a metadata write) stores them: float seconds, `file_upload`."""
    return {
        "document_name": doc.name,
        "uploader": state.owner.name,
        "upload_date": doc.created_at,
        "last_update_date": doc.updated_at,
        "source": "file_upload",
    }


def set_built_in(state: DifyState, dataset: Dataset, enable: bool, now: float) -> None:
    """M6: (idempotent) write or remove the five built-in keys on completed, enabled, unarchived documents."""
    if dataset.built_in_field_enabled == enable:
        return
    for doc in dataset.documents.values():
        if progress(doc, now).status != "completed" or not doc.enabled or doc.archived:
            continue
        values = dict(doc.metadata or {})
        if enable:
            values.update(_built_in_values(state, doc))
        else:
            for name in _BUILT_IN_NAMES:
                values.pop(name, None)
        doc.metadata = values
    dataset.built_in_field_enabled = enable


def _operations(body: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], bool]]:
    ops = body.get("operation_data")
    if not isinstance(ops, list):
        raise validation_error(_MODEL, "operation_data", "Field required [type=missing]")
    parsed = []
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or not isinstance(op.get("document_id"), str):
            raise validation_error(_MODEL, f"operation_data.{i}.document_id", "Field required [type=missing]")
        items = op.get("metadata_list")
        if not isinstance(items, list):
            raise validation_error(
                _MODEL, f"operation_data.{i}.metadata_list", "Field required [type=missing]"
            )
        for j, item in enumerate(items):
            where = f"operation_data.{i}.metadata_list.{j}"
            if (
                not isinstance(item, dict)
                or not isinstance(item.get("id"), str)
                or not isinstance(item.get("name"), str)
            ):
                raise validation_error(_MODEL, where, "Field required [type=missing]")
            if isinstance(item.get("value"), (list, dict)):
                raise validation_error(_MODEL, f"{where}.value", "Input should be a valid string")
        partial = as_bool(op.get("partial_update", False), _MODEL, f"operation_data.{i}.partial_update")
        parsed.append((op["document_id"], items, partial))
    return parsed


def write_values(state: DifyState, dataset: Dataset, body: dict[str, Any]) -> None:
    """M7: `partial_update: false` replaces the whole dict (and the bindings); `true` merges.
    An item with id "" or "built-in" (a built-in field echoed back) fails with 500, as on
    the real server, whose database refuses the binding."""
    for document_id, items, partial in _operations(body):
        partial = partial and state.quirks.partial_metadata_update
        doc = dataset.documents.get(document_id)
        if doc is None:
            if state.quirks.metadata_errors_swallowed:
                continue
            raise invalid_param("Document not found.")
        for item in items:
            if item["id"] in ("", "built-in"):  # the real server's database refuses the binding
                raise DifyError(500, "internal_server_error", "The server encountered an internal error.")
        values = dict(doc.metadata or {}) if partial else {}
        values.update({item["name"]: item.get("value") for item in items})
        if dataset.built_in_field_enabled:
            values.update(_built_in_values(state, doc))
        doc.metadata = values
        if not partial:
            doc.bindings = []
        doc.bindings = list(dict.fromkeys([*doc.bindings, *(item["id"] for item in items)]))
