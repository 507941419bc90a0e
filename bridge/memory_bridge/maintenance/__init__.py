"""Maintenance and operations on a project's stores, run by `memctl` and the maintenance job:
backup and restore, forward migrations, copying entries between stores, entry compaction,
the maintenance passes (with and without an LLM, and thinning old document versions) and
the job's run records and health. The consolidate_memory and cron_health tools report from
here; everything an agent's tool call does lives in `memory_bridge.core`, below this package.

Names load on first use, so a caller that only reads run records does not import the stores."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "Manifest": "._archive",
    "COMPACT_EXIT_CODES": "._compact",
    "CompactReport": "._compact",
    "compact_entries": "._compact",
    "strip_backlinks": "._compact",
    "undo_compaction": "._compact",
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
    "SIMILARITY_PASS": "._llm_passes",
    "flag_similar": "._llm_passes",
    "PassReport": "._passes",
    "run_passes": "._passes",
    "undo_changes": "._passes",
    "RestoreMode": "._backup",
    "RestoreReport": "._backup",
    "backup": "._backup",
    "restore": "._backup",
    "MigrationStep": "._migrate",
    "migrate": "._migrate",
    "plan_migrations": "._migrate",
    "user_version": "._migrate",
    "RunRecord": "._runlog",
    "StepRecord": "._runlog",
    "cron_health": "._runlog",
    "error_signature": "._runlog",
    "last_success_at": "._runlog",
    "maintain_dir": "._runlog",
    "record_run": "._runlog",
    "TransferReport": "._transfer",
    "copy_entries": "._transfer",
    "THIN_PASS": "._thin_versions",
    "thin_versions": "._thin_versions",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._archive import Manifest
    from ._backup import RestoreMode, RestoreReport, backup, restore
    from ._compact import COMPACT_EXIT_CODES, CompactReport, compact_entries, strip_backlinks, undo_compaction
    from ._consolidate import Candidates, consolidate_memory, slot_candidates
    from ._llm_passes import (
        LLM_PASSES,
        SIMILARITY_PASS,
        Judge,
        MergeVerdict,
        NearDuplicates,
        RefreshVerdict,
        flag_similar,
        run_llm_passes,
    )
    from ._migrate import MigrationStep, migrate, plan_migrations, user_version
    from ._passes import NO_LLM_PASSES, PassReport, run_passes, undo_changes
    from ._runlog import (
        RunRecord,
        StepRecord,
        cron_health,
        error_signature,
        last_success_at,
        maintain_dir,
        record_run,
    )
    from ._thin_versions import THIN_PASS, thin_versions
    from ._transfer import TransferReport, copy_entries
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "COMPACT_EXIT_CODES",
    "LLM_PASSES",
    "NO_LLM_PASSES",
    "SIMILARITY_PASS",
    "THIN_PASS",
    "Candidates",
    "CompactReport",
    "Judge",
    "Manifest",
    "MergeVerdict",
    "MigrationStep",
    "NearDuplicates",
    "PassReport",
    "RefreshVerdict",
    "RestoreMode",
    "RestoreReport",
    "RunRecord",
    "StepRecord",
    "TransferReport",
    "backup",
    "compact_entries",
    "consolidate_memory",
    "copy_entries",
    "cron_health",
    "error_signature",
    "flag_similar",
    "last_success_at",
    "maintain_dir",
    "migrate",
    "plan_migrations",
    "record_run",
    "restore",
    "run_llm_passes",
    "run_passes",
    "slot_candidates",
    "strip_backlinks",
    "thin_versions",
    "undo_changes",
    "undo_compaction",
    "user_version",
]
