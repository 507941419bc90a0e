"""Plain functions shared by the MCP tools and the memctl CLI: knowledge writes and lessons,
redaction, migrations, backup and restore, copying entries between stores, the memory audit,
items (entries and documents) as a person looks them up and corrects them, the maintenance
job's run records and health.

Names load on first use, so a caller that only redacts text does not import the stores."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "Manifest": "._archive",
    "Candidates": "._consolidate",
    "consolidate_memory": "._consolidate",
    "slot_candidates": "._consolidate",
    "NO_LLM_PASSES": "._passes",
    "LLM_PASSES": "._llm_passes",
    "Judge": "._llm_passes",
    "MergeVerdict": "._llm_passes",
    "NearDuplicates": "._llm_passes",
    "RefreshVerdict": "._llm_passes",
    "run_llm_passes": "._llm_passes",
    "PassReport": "._passes",
    "run_passes": "._passes",
    "undo_changes": "._passes",
    "AUDIT_CLASSES": "._audit",
    "audit_memory": "._audit",
    "retire": "._audit",
    "RestoreMode": "._backup",
    "RestoreReport": "._backup",
    "backup": "._backup",
    "restore": "._backup",
    "DocumentItem": "._items",
    "EntryItem": "._items",
    "Item": "._items",
    "ItemStores": "._items",
    "SaveOutcome": "._items",
    "content_digest": "._items",
    "find_item": "._items",
    "forget_item": "._items",
    "item_versions": "._items",
    "iter_items": "._items",
    "list_lessons": "._items",
    "rollback_item": "._items",
    "save_item": "._items",
    "search_items": "._items",
    "ATOM_TYPES": "._knowledge",
    "KnowledgeContext": "._knowledge",
    "lesson_name": "._knowledge",
    "save_to_dataset": "._knowledge",
    "slugify": "._knowledge",
    "MigrationStep": "._migrate",
    "migrate": "._migrate",
    "plan_migrations": "._migrate",
    "user_version": "._migrate",
    "redact": "._redact",
    "RunRecord": "._runlog",
    "StepRecord": "._runlog",
    "cron_health": "._runlog",
    "error_signature": "._runlog",
    "last_success_at": "._runlog",
    "maintain_dir": "._runlog",
    "record_run": "._runlog",
    "TransferReport": "._transfer",
    "copy_entries": "._transfer",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._archive import Manifest
    from ._audit import AUDIT_CLASSES, audit_memory, retire
    from ._backup import RestoreMode, RestoreReport, backup, restore
    from ._consolidate import Candidates, consolidate_memory, slot_candidates
    from ._items import (
        DocumentItem,
        EntryItem,
        Item,
        ItemStores,
        SaveOutcome,
        content_digest,
        find_item,
        forget_item,
        item_versions,
        iter_items,
        list_lessons,
        rollback_item,
        save_item,
        search_items,
    )
    from ._knowledge import ATOM_TYPES, KnowledgeContext, lesson_name, save_to_dataset, slugify
    from ._llm_passes import (
        LLM_PASSES,
        Judge,
        MergeVerdict,
        NearDuplicates,
        RefreshVerdict,
        run_llm_passes,
    )
    from ._migrate import MigrationStep, migrate, plan_migrations, user_version
    from ._passes import NO_LLM_PASSES, PassReport, run_passes, undo_changes
    from ._redact import redact
    from ._runlog import (
        RunRecord,
        StepRecord,
        cron_health,
        error_signature,
        last_success_at,
        maintain_dir,
        record_run,
    )
    from ._transfer import TransferReport, copy_entries
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "ATOM_TYPES",
    "AUDIT_CLASSES",
    "LLM_PASSES",
    "NO_LLM_PASSES",
    "Candidates",
    "DocumentItem",
    "EntryItem",
    "Item",
    "ItemStores",
    "Judge",
    "KnowledgeContext",
    "Manifest",
    "MergeVerdict",
    "MigrationStep",
    "NearDuplicates",
    "PassReport",
    "RefreshVerdict",
    "RestoreMode",
    "RestoreReport",
    "RunRecord",
    "SaveOutcome",
    "StepRecord",
    "TransferReport",
    "audit_memory",
    "backup",
    "consolidate_memory",
    "content_digest",
    "copy_entries",
    "cron_health",
    "error_signature",
    "find_item",
    "forget_item",
    "item_versions",
    "iter_items",
    "last_success_at",
    "lesson_name",
    "list_lessons",
    "maintain_dir",
    "migrate",
    "plan_migrations",
    "record_run",
    "redact",
    "restore",
    "retire",
    "rollback_item",
    "run_llm_passes",
    "run_passes",
    "save_item",
    "save_to_dataset",
    "search_items",
    "slot_candidates",
    "slugify",
    "undo_changes",
    "user_version",
]
