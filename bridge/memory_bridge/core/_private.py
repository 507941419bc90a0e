"""Which workspace paths are private by their name: never absorbed, never offered by a scan.

Two kinds. memctl's own `.memory/` and git's `.git/` (at any depth) are always refused: the
first holds the bridge token and the stores, the second git's credential config and
history, and neither holds documentation. Well-known secret files (dotenv files, keys and
certificates, package-registry and cloud credentials, kubeconfigs, ...) are refused unless
a glob in the `absorb_allow` setting names them. Names compare case-insensitively: on a
case-insensitive file system (macOS, Windows, some mounts) `.GIT/config` *is* git's config,
and refusing an oddly cased look-alike on other systems costs only an allow entry.

Whether git ignores a path is `_gitignore`'s question; this module never touches the disk.
"""

from __future__ import annotations

import posixpath

import re2

from ._glob import GlobSet

__all__ = ["PrivateRules", "normalise"]

_ALWAYS = {".memory": "memctl's own state (.memory/)", ".git": "git's internals (.git/)"}

# Globs (lower case) over the lower-cased relative path; each with why it is private.
_SECRET_FILES: tuple[tuple[str, str], ...] = (
    ("**/.env", "a dotenv file"),
    ("**/.env.*", "a dotenv file"),
    ("**/*.env", "a dotenv file"),
    ("**/.envrc", "a direnv file"),
    ("**/*.pem", "a PEM key or certificate"),
    ("**/*.key", "a private key"),
    ("**/*.p12", "a PKCS#12 key store"),
    ("**/*.pfx", "a PKCS#12 key store"),
    ("**/*.jks", "a Java key store"),
    ("**/*.keystore", "a key store"),
    ("**/*.ppk", "a PuTTY private key"),
    ("**/*.kdbx", "a password database"),
    ("**/id_rsa", "an SSH private key"),
    ("**/id_dsa", "an SSH private key"),
    ("**/id_ecdsa", "an SSH private key"),
    ("**/id_ecdsa_sk", "an SSH private key"),
    ("**/id_ed25519", "an SSH private key"),
    ("**/id_ed25519_sk", "an SSH private key"),
    ("**/.ssh/**", "an SSH directory"),
    ("**/.npmrc", "npm's credentials file"),
    ("**/.yarnrc.yml", "yarn's credentials file"),
    ("**/.pypirc", "the Python package index credentials file"),
    ("**/.netrc", "a netrc credentials file"),
    ("**/_netrc", "a netrc credentials file"),
    ("**/.git-credentials", "git's stored credentials"),
    ("**/.pgpass", "a PostgreSQL password file"),
    ("**/.my.cnf", "a MySQL client config with credentials"),
    ("**/.htpasswd", "an htpasswd file"),
    ("**/.vault-token", "a Vault token"),
    ("**/.s3cfg", "an s3cmd credentials file"),
    ("**/.boto", "a boto credentials file"),
    ("**/.dockercfg", "Docker's credentials file"),
    ("**/.docker/config.json", "Docker's credentials file"),
    ("**/.kube/config", "a kubeconfig"),
    ("**/kubeconfig", "a kubeconfig"),
    ("**/kubeconfig.*", "a kubeconfig"),
    ("**/*.kubeconfig", "a kubeconfig"),
    ("**/.aws/credentials", "AWS credentials"),
    ("**/.aws/config", "AWS configuration"),
    ("**/.azure/**", "Azure credentials"),
    ("**/.config/gcloud/**", "gcloud credentials"),
    ("**/application_default_credentials.json", "gcloud credentials"),
    ("**/credentials.tfrc.json", "Terraform credentials"),
    ("**/*.tfvars", "Terraform variables (often secrets)"),
)
# Dotenv templates hold names, not values, by convention; redaction still runs on their text.
_DOTENV_TEMPLATES = GlobSet(
    ("**/.env.example", "**/.env.sample", "**/.env.template", "**/.env.dist"), field="absorb_allow"
)
_SECRETS = tuple((GlobSet((glob,), field="absorb_allow"), why) for glob, why in _SECRET_FILES)
_CUSTOM_SSH_KEY = re2.compile(r"(?:.*/)?id_[^/.]+")  # id_work, id_deploy: a key, not id_mapping.md


def normalise(requested: str) -> str:
    """A requested path as the POSIX path it names inside the workspace, `..` folded
    (`docs/../.git/config` is `.git/config`); "" for the workspace itself."""
    path = posixpath.normpath("/" + requested.replace("\\", "/")).lstrip("/")
    return "" if path == "." else path


class PrivateRules:
    """The private-name rules with the project's `absorb_allow` globs applied."""

    def __init__(self, allow: tuple[str, ...]) -> None:
        self.allow = GlobSet(allow, field="absorb_allow")

    def always(self, rel: str) -> str | None:
        """Why `rel` is refused whatever the settings say, or None."""
        for part in rel.lower().split("/"):
            if part in _ALWAYS:
                return f"{_ALWAYS[part]} is never absorbed"
        return None

    def allowed(self, rel: str) -> bool:
        """True when absorb_allow names `rel`."""
        return self.allow.matches(rel)

    def secret(self, rel: str) -> str | None:
        """Why `rel` looks like a secret file, or None (also None when absorb_allow names it)."""
        lower = rel.lower()
        if self.allowed(rel) or _DOTENV_TEMPLATES.matches(lower):
            return None
        for matcher, why in _SECRETS:
            if matcher.matches(lower):
                return f"{why}, a well-known secret file"
        if _CUSTOM_SSH_KEY.fullmatch(lower):
            return "an SSH private key, a well-known secret file"
        return None
