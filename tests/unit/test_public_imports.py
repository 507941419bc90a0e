"""Tests and benchmarks reach memctl and the bridge through their public names.

An import of a private module or name of `memory_bridge` or `memctl` (a dotted segment or an
imported name starting with `_`, dunders aside) is allowed only when it is on `ALLOWED`, by
the importing file and then the private module, with the reason: `UNIT_TEST` when the file is
that module's unit test (`test_knowledge_terms.py` for `_knowledge_terms`), else why no public
name will do. When a test needs something meant for outside, export it from the package's
`__init__` (its `_LAZY`, the `TYPE_CHECKING` imports and `__all__`) instead of adding a line.
An entry that no import needs any more fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("tests", "bench")
PACKAGES = ("memory_bridge", "memctl")
UNIT_TEST = "unit test of that private module"

ALLOWED: dict[str, dict[str, str]] = {
    "bench/_abstention.py": {
        "memory_bridge.stores._relevance": (
            "measures abstention on the relevance model's own evidence and coverage"
        ),
        "memory_bridge.stores.sqlite._knowledge_relevance": (
            "measures the relevance window the embedded store calibrates over"
        ),
    },
    "bench/_big_store.py": {
        "memory_bridge.stores._knowledge": (
            "builds a big store directly: the digest the store keys documents by"
        ),
    },
    "bench/_stages.py": {
        "memory_bridge.search._embed": "times each stage of a search on its own",
        "memory_bridge.stores.sqlite._knowledge": "times each stage of a search on its own",
        "memory_bridge.stores.sqlite._knowledge_hop": "times each stage of a search on its own",
        "memory_bridge.stores.sqlite._knowledge_terms": "times each stage of a search on its own",
        "memory_bridge.stores.sqlite._knowledge_vectors": "times each stage of a search on its own",
    },
    "bench/_variants.py": {
        "memory_bridge.stores.sqlite._knowledge": (
            "swaps in the variants a bench compares (what text is embedded)"
        ),
        "memory_bridge.stores.sqlite._knowledge_vectors": (
            "swaps in the variants a bench compares (what text is embedded)"
        ),
    },
    "bench/ann.py": {
        "memory_bridge.search._ann": "measures the HNSW index's own knobs",
        "memory_bridge.stores.sqlite._knowledge_ann": (
            "builds, saves and loads the store's HNSW file directly"
        ),
    },
    "bench/freshness.py": {
        "memory_bridge.core._freshness": "measures the age-and-use re-ranking step alone",
    },
    "bench/intake.py": {
        "memory_bridge.search._background": "runs the embedding at the background priority the bridge uses",
        "memory_bridge.stores.sqlite._knowledge_vectors": "writes vectors in the store's own batches",
    },
    "bench/knowledge_scale.py": {
        "memory_bridge.core._knowledge": "calls search_memory's core operation without the MCP server",
        "memory_bridge.stores.sqlite._knowledge_vectors": (
            "tags the cached vectors with the embedded text's format"
        ),
    },
    "bench/provision.py": {
        "memctl.provision._inventory": "writes a local inventory as `memctl up` does; no public API for it",
    },
    "bench/rerank_cost.py": {
        "memory_bridge.stores.sqlite._knowledge": "wraps the store's rerank step to time it",
    },
    "bench/rerank_fit.py": {
        "memory_bridge.stores.sqlite._knowledge": "fits the rerank model on the store's own features",
        "memory_bridge.stores.sqlite._knowledge_rerank": "fits the rerank model on the store's own features",
    },
    "bench/search_ab.py": {
        "memory_bridge.stores.valkey._entries": "swaps the Lua search script for the old one (A/B)",
    },
    "tests/adversarial/test_auth_tokens.py": {
        "memory_bridge._tokens": "checks where a token is read from (token_source); no public API for it",
    },
    "tests/adversarial/test_file_modes.py": {
        "memctl.operations._modes": "finds memctl's files other local users can read; no public API for it",
    },
    "tests/adversarial/test_link_planting.py": {
        "memctl.capture._front": "starts the capture worker as the hook front does",
        "memctl.capture._paths": "finds the capture folders a link is planted in",
        "memctl.transfer._markdown_import": (
            "plants a link between the import's read and its write (monkeypatch)"
        ),
    },
    "tests/capture/helpers.py": {
        "memctl.capture._log": "reads the capture log the hooks write; capture has no public API",
        "memctl.capture._paths": "finds the capture folders; capture has no public API",
    },
    "tests/capture/test_compile.py": {
        "memctl.capture._daily": "renders the daily file the compile reads",
        "memctl.capture._schema": "builds the atoms the compile merges",
        "memory_bridge.core._knowledge": "saves a lesson as the compile does (save_lesson is not exported)",
    },
    "tests/capture/test_flush.py": {
        "memctl.capture._flush": UNIT_TEST,
        "memctl.capture._lock": "holds the capture lock the flush waits on",
        "memctl.capture._paths": "finds the capture folders; capture has no public API",
    },
    "tests/capture/test_hooks.py": {
        "memctl.capture._log": "reads the capture log the hooks write; capture has no public API",
        "memctl.capture._paths": "finds the capture folders; capture has no public API",
    },
    "tests/capture/test_plan.py": {
        "memctl.capture._log": "reads the capture log the hooks write; capture has no public API",
        "memctl.capture._paths": "finds the capture folders; capture has no public API",
        "memctl.capture._plan": UNIT_TEST,
    },
    "tests/capture/test_units.py": {
        "memctl._errors": "the error a bad extractor answer raises; memctl's errors have no public module",
        "memctl.capture._daily": "unit tests of capture's small parts (daily file, schema, transcript)",
        "memctl.capture._schema": "unit tests of capture's small parts (daily file, schema, transcript)",
        "memctl.capture._transcript": "unit tests of capture's small parts (daily file, schema, transcript)",
    },
    "tests/day2/test_markdown.py": {
        "memctl.transfer._markdown": "parses the item files the commands write; transfer has no public API",
    },
    "tests/day2/test_markdown_transfer.py": {
        "memctl.transfer._markdown": "parses the item files the commands write; transfer has no public API",
    },
    "tests/day2/test_migrate.py": {
        "memory_bridge.stores.sqlite._schema": "builds a store at an old schema version to migrate",
    },
    "tests/day2/test_outbox.py": {
        "memory_bridge.stores.dify._outbox": "shortens the outbox's retry wait (monkeypatch)",
    },
    "tests/e2e/test_maintenance_tools.py": {
        "memory_bridge.tools._knowledge": "moves the clock the knowledge tools read a year on (monkeypatch)",
    },
    "tests/integration/test_valkey_cluster_index.py": {
        "memory_bridge.stores._query": (
            "checks the cluster index against the store's own query terms and scoring"
        ),
        "memory_bridge.stores.valkey._keys": "checks the cluster index against the store's own shards",
        "memory_bridge.stores.valkey._rank": (
            "checks the cluster index against the store's own query terms and scoring"
        ),
    },
    "tests/issues/test_35_jsonc_client_files.py": {
        "memctl.provision._proof": "lists the files each client's launch of the bridge reads",
    },
    "tests/maintain/conftest.py": {
        "memctl.operations._maintain": "sets the maintenance job's clock (monkeypatch)",
    },
    "tests/maintain/stores.py": {
        "memctl.operations._maintain": "hands the maintenance job a store (monkeypatch)",
    },
    "tests/maintain/test_compact.py": {
        "memctl.operations._compact": (
            "hands the compaction a store an agent writes to meanwhile (monkeypatch)"
        ),
    },
    "tests/maintain/test_health.py": {
        "memctl.commands._output": "widens the console the report prints to (monkeypatch)",
        "memctl.operations._maintain": "fakes the processes the job runs (monkeypatch)",
    },
    "tests/maintain/test_runner.py": {
        "memctl._errors": "the exit codes and the lock error; memctl's errors have no public module",
        "memctl.capture._lock": "holds the lock the maintenance job takes",
        "memctl.operations._maintain": "unit test of the maintenance runner (its passes)",
    },
    "tests/provision/helpers.py": {
        "memctl.provision._inventory": "writes a local inventory as `memctl up` does; no public API for it",
    },
    "tests/provision/test_first_contact.py": {
        "memctl.provision._content": "checks the packaged content (content_root) carries no stray files",
    },
    "tests/provision/test_role_options.py": {
        "memctl.provision._role_options": UNIT_TEST,
    },
    "tests/provision/test_shared_templates.py": {
        "memctl.provision._templates": "renders the templates roles and ctl share",
    },
    "tests/provision/test_up.py": {
        "memctl._errors": "the error a failed playbook raises; memctl's errors have no public module",
        "memctl.provision._inventory": "reads the inventory `up` wrote",
        "memctl.provision._provision": "runs provisioning without the CLI",
    },
    "tests/stack/test_containers.py": {
        "memctl.operations._containers": UNIT_TEST,
    },
    "tests/ui/test_app.py": {
        "memctl.ui._view": "renders a template in the view's environment",
    },
    "tests/unit/bridge/core/test_cursor.py": {
        "memory_bridge.core._cursor": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_freshness.py": {
        "memory_bridge.core._freshness": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_gitignore.py": {
        "memory_bridge.core._gitignore": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_glob.py": {
        "memory_bridge.core._glob": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_private.py": {
        "memory_bridge.core._private": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_recall.py": {
        "memory_bridge.core._recall": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_redact_fields.py": {
        "memory_bridge.core._redact_fields": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_results.py": {
        "memory_bridge.core._results": UNIT_TEST,
    },
    "tests/unit/bridge/maintenance/test_entry_merge.py": {
        "memory_bridge.maintenance._entry_merge": UNIT_TEST,
    },
    "tests/unit/bridge/search/test_ann.py": {
        "memory_bridge.search._ann": UNIT_TEST,
    },
    "tests/unit/bridge/search/test_embed_errors.py": {
        "memory_bridge.search._openai": "unit test of the endpoint embedder's errors",
    },
    "tests/unit/bridge/search/test_intake.py": {
        "memory_bridge.search._intake": UNIT_TEST,
    },
    "tests/unit/bridge/search/test_lean_embedding.py": {
        "memory_bridge.search._background": "unit test of embedding at background priority",
        "memory_bridge.search._onnx": "the ONNX session options the lean embedding sets",
    },
    "tests/unit/bridge/search/test_quantize.py": {
        "memory_bridge.search._onnx": "the ONNX embedder the quantised model loads into",
        "memory_bridge.search._quantize": UNIT_TEST,
    },
    "tests/unit/bridge/core/test_knowledge.py": {
        "memory_bridge.core._knowledge": UNIT_TEST,
    },
    "tests/unit/bridge/stores/test_knowledge.py": {
        "memory_bridge.stores.sqlite._knowledge": UNIT_TEST,
    },
    "tests/unit/bridge/stores/test_knowledge_ann.py": {
        "memory_bridge.search._ann": "lowers the size at which the HNSW index takes over (monkeypatch)",
        "memory_bridge.stores.sqlite._knowledge_ann": UNIT_TEST,
    },
    "tests/unit/bridge/stores/test_knowledge_hop.py": {
        "memory_bridge.stores.sqlite._knowledge_hop": UNIT_TEST,
        "memory_bridge.stores.sqlite._knowledge_schema": "the FTS tokenizer the second hop's table uses",
        "memory_bridge.stores.sqlite._knowledge_terms": "a scaled-down limit for common words",
        "memory_bridge.stores.sqlite._match": "the FTS match expression the second hop queries with",
    },
    "tests/unit/bridge/stores/test_knowledge_matches.py": {
        "memory_bridge.stores.sqlite._knowledge_matches": UNIT_TEST,
        "memory_bridge.stores.sqlite._knowledge_terms": "the term frequencies the matches are built from",
    },
    "tests/unit/bridge/stores/test_knowledge_ranking.py": {
        "memory_bridge.stores.sqlite._knowledge_ranking": UNIT_TEST,
    },
    "tests/unit/bridge/stores/test_knowledge_reembed.py": {
        "memory_bridge.stores.sqlite._knowledge_vectors": "how many vectors one search catches up on",
    },
    "tests/unit/bridge/stores/test_knowledge_terms.py": {
        "memory_bridge.stores.sqlite._knowledge_terms": UNIT_TEST,
    },
    "tests/unit/bridge/stores/test_relevance.py": {
        "memory_bridge.stores._relevance": UNIT_TEST,
    },
    "tests/unit/bridge/stores/valkey/test_errors.py": {
        "memory_bridge.stores.valkey._errors": UNIT_TEST,
    },
    "tests/unit/bridge/test_background.py": {
        "memory_bridge._serve": "unit test of _serve's background loops",
    },
    "tests/unit/bridge/test_links.py": {
        "memory_bridge._links": UNIT_TEST,
    },
    "tests/unit/bridge/test_listing.py": {
        "memory_bridge._listing": UNIT_TEST,
    },
    "tests/unit/bridge/test_sdk.py": {
        "memory_bridge._sdk": UNIT_TEST,
    },
    "tests/unit/bridge/tools/test_register.py": {
        "memory_bridge.core._results": "the result base class a registered tool answers with",
        "memory_bridge.tools._register": UNIT_TEST,
        "memory_bridge.tools._state": "the context type a registered tool takes",
    },
    "tests/unit/ctl/test_clients.py": {
        "memctl.provision._clients": UNIT_TEST,
        "memctl.provision._merge": "the hook signature the client merge writes",
    },
    "tests/unit/ctl/test_errors.py": {
        "memctl._errors": UNIT_TEST,
        "memctl.commands._output": "the --json option errors are printed under",
        "memctl.provision._playbook": "the playbook run a PlaybookFailed carries",
    },
    "tests/unit/ctl/test_jsontext.py": {
        "memctl.provision._jsontext": UNIT_TEST,
    },
    "tests/unit/ctl/test_markdown.py": {
        "memctl.transfer._markdown": UNIT_TEST,
    },
    "tests/unit/ctl/test_merge.py": {
        "memctl.provision._clients": "the hook entries the merge is given",
        "memctl.provision._merge": UNIT_TEST,
    },
    "tests/unit/ctl/test_progress.py": {
        "memctl.commands._output": "the console progress bars draw on",
        "memctl.commands._progress": UNIT_TEST,
    },
    "tests/unit/ctl/test_provision.py": {
        "memctl._errors": "the error a failed playbook raises; memctl's errors have no public module",
        "memctl.provision._inventory": (
            "builds inventories with machines (Machine is not in memctl.api.project)"
        ),
        "memctl.provision._playbook": "the playbook run provisioning reports on",
        "memctl.provision._provision": UNIT_TEST,
    },
    "tests/unit/ctl/test_registry.py": {
        "memctl.provision._registry": UNIT_TEST,
    },
    "tests/unit/ctl/test_templates.py": {
        "memctl.provision._clients": "the client files the templates render for",
        "memctl.provision._launcher": "the launcher the templates render",
        "memctl.provision._templates": UNIT_TEST,
    },
    "tests/unit/ctl/test_timefmt.py": {
        "memctl._timefmt": UNIT_TEST,
    },
}


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _ours(module: str) -> bool:
    return module.split(".")[0] in PACKAGES


def _private_modules(node: ast.AST) -> list[str]:
    """The private modules (or `module._name`) an import statement reaches."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if _ours(a.name) and any(map(_private, a.name.split(".")))]
    if not isinstance(node, ast.ImportFrom) or node.level or not node.module or not _ours(node.module):
        return []
    if any(map(_private, node.module.split("."))):
        return [node.module]
    return [f"{node.module}.{a.name}" for a in node.names if _private(a.name)]


def allowed() -> dict[tuple[str, str], str]:
    return {(file, module): reason for file, modules in ALLOWED.items() for module, reason in modules.items()}


def private_imports() -> set[tuple[str, str]]:
    """(importing file, private module) for every such import in tests/ and bench/."""
    found = set()
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            where = path.relative_to(REPO).as_posix()
            found |= {(where, module) for node in ast.walk(tree) for module in _private_modules(node)}
    return found


def test_tests_and_bench_import_only_public_names_or_say_why() -> None:
    unexplained = sorted(private_imports() - allowed().keys())
    assert not unexplained, (
        "import these through the package's public names (export them from its __init__ if they "
        "are meant for outside), or add them to ALLOWED with the reason: "
        + ", ".join(f"{file} -> {module}" for file, module in unexplained)
    )


def test_the_allow_list_only_shrinks() -> None:
    stale = sorted(allowed().keys() - private_imports())
    assert not stale, "no import needs these ALLOWED entries any more; delete them: " + ", ".join(
        f"{file} -> {module}" for file, module in stale
    )


def test_a_unit_test_is_the_test_of_that_module() -> None:
    """`UNIT_TEST` is said only of `test_X.py` importing `..._X`."""
    wrong = [
        f"{file} -> {module}"
        for (file, module), reason in allowed().items()
        if reason == UNIT_TEST and Path(file).stem.removeprefix("test_") != module.rsplit(".", 1)[1][1:]
    ]
    assert not wrong
    assert all(reason.strip() for reason in allowed().values())
