"""The redactor as it was before issue 13 (commit ebd7ed8), kept as the baseline that
bench/redaction.py measures the current one against, in the same run."""

from __future__ import annotations

import re

__all__ = ["redact"]

_SCHEMES = r"postgres|postgresql|mysql|mongodb(?:\+srv)?|redis|rediss|valkey|valkeys|amqp|amqps|https?|ftp"

# (pattern, replacement), applied in order; each replacement is stable under re-application.
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.S),
        "[REDACTED-PRIVATE-KEY]",
    ),
    (re.compile(r"\bBearer\s+(?!\[REDACTED\])[A-Za-z0-9._~+/=-]+"), "Bearer [REDACTED]"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"), "eyJ[REDACTED-JWT]"),
    (re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), "sk-ant-[REDACTED]"),
    (re.compile(r"\bsk-(?!ant-)[A-Za-z0-9_-]{16,}"), "sk-[REDACTED]"),
    (re.compile(r"\bctx7sk-[A-Za-z0-9_-]{16,}"), "ctx7sk-[REDACTED]"),
    (re.compile(r"\bghp_[A-Za-z0-9]{20,}"), "ghp_[REDACTED]"),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), "github_pat_[REDACTED]"),
    (re.compile(r"\bAKIA[0-9A-Z]{16}\b"), "AKIA[REDACTED]"),
    (re.compile(r"\bxox[a-z]-[A-Za-z0-9-]{10,}"), "xox-[REDACTED]"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), "AIza[REDACTED]"),
    (re.compile(r"\b(sk|pk|rk)_live_[A-Za-z0-9]{16,}"), r"\1_live_[REDACTED]"),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}"), "npm_[REDACTED]"),
    (
        re.compile(r"https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"),
        "https://discord.com/api/webhooks/[REDACTED]",
    ),
    (re.compile(rf"\b({_SCHEMES})://(?!\[REDACTED\])[^\s:/@]+:[^\s@/]+@"), r"\1://[REDACTED]:[REDACTED]@"),
    (re.compile(r"AccountKey=(?!\[REDACTED\])[A-Za-z0-9+/=]{20,}"), "AccountKey=[REDACTED]"),
    (re.compile(r"([?&]sig=)(?!\[REDACTED\])[A-Za-z0-9%+/=_-]{20,}"), r"\1[REDACTED]"),
    (re.compile(r"(//[^\s/]+/:_authToken=)(?!\[REDACTED\])\S+"), r"\1[REDACTED]"),
    (
        re.compile(
            r"(?i)\b(api[_-]?key|secret|token|password|passwd)([\"' ]*[:=][\"' ]*)(?!\[REDACTED\])[^\s\"']+"
        ),
        r"\1\2[REDACTED]",
    ),
)


def redact(text: str) -> str:
    """Replace known secret shapes with [REDACTED] markers; applying it twice changes nothing."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
