"""Version-dependent behaviour (spec §11), decided in one place from the emulated version string."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Quirks"]


def _parse(version: str) -> tuple[int, int, int]:
    parts = [int(p) for p in version.split("-")[0].split(".")[:3]]
    major, minor, patch = [*parts, 0, 0, 0][:3]
    return major, minor, patch


@dataclass(frozen=True)
class Quirks:
    """What the emulated Dify version does where versions disagree."""

    version: str

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return _parse(self.version) >= (major, minor, patch)

    @property
    def metadata_filtering(self) -> Literal["ignored", "applied"]:
        """Retrieve filters: unsupported up to 1.3, silently dropped 1.10 to 1.13.x (#35666)."""
        if not self.at_least(1, 4) or (self.at_least(1, 10) and not self.at_least(1, 14)):
            return "ignored"
        return "applied"

    @property
    def list_operators(self) -> bool:
        """`in` / `not in`, and validation of operator names (before 1.7 unknown ones were dropped)."""
        return self.at_least(1, 7)

    @property
    def datasets_has_more_by_total(self) -> bool:
        """Datasets list: `page*limit < total` (1.14+) instead of `len(data) == limit`."""
        return self.at_least(1, 14)

    @property
    def delete_document_reply(self) -> Literal["empty", "json_204", "result"]:
        """204 empty (1.14+), HTTP 200 with body `204` (0.15 to 1.13), 200 `{"result":"success"}` (older)."""
        if self.at_least(1, 14):
            return "empty"
        return "json_204" if self.at_least(0, 15) else "result"

    @property
    def legacy_hybrid(self) -> bool:
        """Up to 1.13: threshold pre-filters vector hits and each channel recalls only top_k."""
        return not self.at_least(1, 14)

    @property
    def keyword_score_null(self) -> bool:
        """0.15.x answered `score: null` where 1.x answers 0.0 (#13284)."""
        return not self.at_least(1, 0)

    @property
    def partial_metadata_update(self) -> bool:
        """`partial_update` in document metadata writes (1.14+); older builds always replace."""
        return self.at_least(1, 14)

    @property
    def metadata_errors_swallowed(self) -> bool:
        """Up to 1.13 metadata writes logged and swallowed errors (200 on a missing document)."""
        return not self.at_least(1, 14)

    @property
    def default_top_k(self) -> int:
        """Default retrieval top_k: 4 in current code, 2 in older builds (boundary inferred at 1.14)."""
        return 4 if self.at_least(1, 14) else 2

    @property
    def hyphen_routes(self) -> bool:
        """`create-by-text`-style aliases exist besides the underscore routes from 1.0."""
        return self.at_least(1, 0)

    @property
    def login_cookies(self) -> bool:
        """Console login sets cookies and requires X-CSRF-Token (1.9+) instead of returning tokens."""
        return self.at_least(1, 9)

    @property
    def login_base64_password(self) -> bool:
        """Console login takes the password Base64-encoded (1.10+)."""
        return self.at_least(1, 10)

    @property
    def www_authenticate(self) -> bool:
        """401s carry `WWW-Authenticate: Bearer realm="api"` (1.10+)."""
        return self.at_least(1, 10)

    @property
    def dataset_maintainer(self) -> bool:
        """Dataset objects carry `maintainer` (1.16+)."""
        return self.at_least(1, 16)

    @property
    def empty_metadata_list(self) -> bool:
        """A document without metadata has `doc_metadata: []` (1.16+) instead of null."""
        return self.at_least(1, 16)

    @property
    def retrieve_query_object(self) -> bool:
        """`/retrieve` answers `query` as `{"content": ...}` (1.16+) instead of the string."""
        return self.at_least(1, 16)
