"""Plain functions shared by the MCP tools and the memctl CLI: knowledge writes and lessons,
redaction, migrations, backup and restore, copying entries between stores, the memory audit.

Names load on first use, so a caller that only redacts text does not import the stores."""

import typing as _typing

from .._lazy import lazy_attributes as _lazy_attributes

_LAZY = {
    "Manifest": "._archive",
    "AUDIT_CLASSES": "._audit",
    "audit_memory": "._audit",
    "retire": "._audit",
    "RestoreMode": "._backup",
    "RestoreReport": "._backup",
    "backup": "._backup",
    "restore": "._backup",
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
    "TransferReport": "._transfer",
    "copy_entries": "._transfer",
}

# mypy sees the names themselves (a misspelt import fails the type check), Python the lazy lookup.
if _typing.TYPE_CHECKING:
    from ._archive import Manifest
    from ._audit import AUDIT_CLASSES, audit_memory, retire
    from ._backup import RestoreMode, RestoreReport, backup, restore
    from ._knowledge import ATOM_TYPES, KnowledgeContext, lesson_name, save_to_dataset, slugify
    from ._migrate import MigrationStep, migrate, plan_migrations, user_version
    from ._redact import redact
    from ._transfer import TransferReport, copy_entries
else:
    __getattr__ = _lazy_attributes(__name__, _LAZY)

__all__ = [
    "ATOM_TYPES",
    "AUDIT_CLASSES",
    "KnowledgeContext",
    "Manifest",
    "MigrationStep",
    "RestoreMode",
    "RestoreReport",
    "TransferReport",
    "audit_memory",
    "backup",
    "copy_entries",
    "lesson_name",
    "migrate",
    "plan_migrations",
    "redact",
    "restore",
    "retire",
    "save_to_dataset",
    "slugify",
    "user_version",
]
