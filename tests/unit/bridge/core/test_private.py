"""Unit test of `core._private`: which names are private, and what absorb_allow changes."""

from __future__ import annotations

import pytest

from memory_bridge.core._private import PrivateRules, normalise

RULES = PrivateRules(())


@pytest.mark.parametrize(
    ("requested", "path"),
    [
        ("docs/../.git/config", ".git/config"),
        ("./.memory/bridge.token", ".memory/bridge.token"),
        ("/docs//a.md", "docs/a.md"),
        ("docs\\..\\.env", ".env"),
        ("../../.env", ".env"),
        (".", ""),
    ],
)
def test_normalise_folds_dots_and_slashes(requested: str, path: str) -> None:
    assert normalise(requested) == path


@pytest.mark.parametrize(
    "path", [".memory/bridge.token", ".git/config", "sub/.git/HEAD", ".GIT/config", "a/.Memory/x.md"]
)
def test_memctl_and_git_directories_are_always_private(path: str) -> None:
    assert RULES.always(path) is not None
    assert PrivateRules(("**",)).always(path) is not None, "absorb_allow cannot open them"


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".ENV",
        ".env.local",
        "deploy/prod.env",
        "tls/server.pem",
        "tls/server.key",
        "a.p12",
        "b.PFX",
        "id_rsa",
        "home/.ssh/id_ed25519",
        "keys/id_work",
        ".npmrc",
        ".pypirc",
        ".netrc",
        ".git-credentials",
        ".aws/credentials",
        ".docker/config.json",
        ".kube/config",
        "kubeconfig",
        "cluster.kubeconfig",
        ".config/gcloud/credentials.db",
        "infra/prod.tfvars",
    ],
)
def test_well_known_secret_files_are_private_unless_allowed(path: str) -> None:
    assert RULES.secret(path) is not None
    assert PrivateRules((path,)).secret(path) is None


@pytest.mark.parametrize(
    "path",
    [
        ".env.example",
        "app/.env.sample",
        ".env.template",
        "id_rsa.pub",
        "docs/id_mapping.md",
        "docs/keys.md",
        "docs/environment.md",
        "notes/gcloud/setup.md",
        "README.md",
    ],
)
def test_ordinary_files_and_templates_are_not_private(path: str) -> None:
    assert RULES.always(path) is None and RULES.secret(path) is None
