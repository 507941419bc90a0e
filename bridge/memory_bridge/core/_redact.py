"""Redacting secrets from text before it is stored, indexed, logged or embedded.

One redactor for every stored string of entries and documents (`_redact_fields` applies
it field by field). Three kinds of rule, applied in order: shapes that are secrets wherever
they appear (private key blocks, JWTs, provider tokens with a fixed prefix); credentials in
context: inside URLs (the password may hold an `@`), headers, command lines (`--password`,
`curl -u`, `aws configure set ...`), Docker's `"auth"` and prose ("the password is X", X
not a plain word); and values assigned to a secret-named key, qualified or not
(`DB_PASSWORD_1=`, `GITHUB_TOKEN_PROD=`, `aws_secret_access_key = `). Values that only
point at a secret (`${DB_PASSWORD}`, `<your-token>`, `os.environ["X"]`, `password: str`)
are left alone. Every replacement holds `[REDACTED` and takes the whole value (a closing
bracket it leaves is the text's own), so applying it twice changes nothing.

`bench/redaction.py` measures it against the detect-secrets rule set on the corpus in
`tests/adversarial/secret_corpus.py`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["redact"]

MARK = "[REDACTED]"
_NOT_MARKED = r"(?!\[REDACTED)"
Replacement = str | Callable[[re.Match[str]], str]


@dataclass(frozen=True)
class _Rule:
    """A pattern, what replaces a match, and the lowercase substrings any match contains:
    a text holding none of them skips the pattern (most texts hold no secret at all)."""

    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    replacement: Replacement


def _rule(needles: str | tuple[str, ...], pattern: str, replacement: Replacement, flags: int = 0) -> _Rule:
    found = (needles,) if isinstance(needles, str) else needles
    return _Rule(found, re.compile(pattern, flags), replacement)


def _token(pattern: str, label: str) -> _Rule:
    """A token recognised by its shape alone; `label`, its prefix, stays readable."""
    return _rule(label.lower(), pattern, f"{label}[REDACTED]")


_SHAPES: tuple[_Rule, ...] = (
    _rule(
        "private key",
        # never past the next BEGIN: a text of many headers stays linear
        r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY( BLOCK)?-----"
        r"(?:(?!-----BEGIN ).)*?-----END \1PRIVATE KEY\2-----",
        "[REDACTED-PRIVATE-KEY]",
        re.S,
    ),
    _rule(  # a key block cut short: everything base64-like after its header
        "private key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:(?:\s|\\n)+[A-Za-z0-9+/=]{16,})*",
        "[REDACTED-PRIVATE-KEY]",
    ),
    _token(r"\beyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", "eyJ"),
    _token(r"\bsk-ant-[A-Za-z0-9_-]{20,}", "sk-ant-"),
    _token(r"\bsk-(?!ant-)(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{20,}", "sk-"),
    _token(r"\bctx7sk-[A-Za-z0-9_-]{16,}", "ctx7sk-"),
    _rule(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"\b(gh[pousr])_[A-Za-z0-9]{30,}", r"\1_[REDACTED]"),
    _token(r"\bgithub_pat_[A-Za-z0-9_]{20,}", "github_pat_"),
    _token(r"\bglpat-[A-Za-z0-9_-]{20,}", "glpat-"),
    _rule(
        ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "akpa", "anpa", "anva", "aroa", "apka"),
        r"\b(AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|AKPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}\b",
        r"\1[REDACTED]",
    ),
    _rule("xox", r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}", "xox-[REDACTED]"),
    _token(r"\bxapp-\d-[A-Za-z0-9-]{10,}", "xapp-"),
    _token(r"\bAIza[0-9A-Za-z_-]{35}", "AIza"),
    _token(r"\bGOCSPX-[A-Za-z0-9_-]{20,}", "GOCSPX-"),
    _token(r"\bya29\.[A-Za-z0-9_-]{20,}", "ya29."),
    _rule(("_live_", "_test_"), r"\b(sk|pk|rk)_(live|test)_[A-Za-z0-9]{16,}", r"\1_\2_[REDACTED]"),
    _token(r"\bwhsec_[A-Za-z0-9+/=]{20,}", "whsec_"),
    _token(r"\bnpm_[A-Za-z0-9]{36}", "npm_"),
    _rule("pypi-", r"\bpypi-AgE[A-Za-z0-9_-]{40,}", "pypi-[REDACTED]"),
    _token(r"\bhf_[A-Za-z0-9]{30,}", "hf_"),
    _token(r"\bdckr_pat_[A-Za-z0-9_-]{20,}", "dckr_pat_"),
    _token(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}", "SG."),
    _token(r"\bkey-[0-9a-f]{32}\b", "key-"),
    _rule("shp", r"\b(shp(?:at|ss|ca|pa))_[a-fA-F0-9]{32}\b", r"\1_[REDACTED]"),
    _token(r"\bdop_v1_[a-f0-9]{64}\b", "dop_v1_"),
    _token(r"\bNRAK-[A-Z0-9]{27}\b", "NRAK-"),
    _token(r"\blin_api_[A-Za-z0-9]{32,}", "lin_api_"),
    _token(r"\bhvs\.[A-Za-z0-9_-]{24,}", "hvs."),
    _rule(("glc_", "glsa_"), r"\b(glc|glsa)_[A-Za-z0-9_=+/-]{32,}", r"\1_[REDACTED]"),
    _token(r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b", "PMAK-"),
    _token(r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b", "AGE-SECRET-KEY-"),
    _rule("sq0", r"\b(sq0(?:atp|csp))-[A-Za-z0-9_-]{22,}", r"\1-[REDACTED]"),
    _token(r"\bdapi[a-f0-9]{32}\b", "dapi"),
    _token(r"\bSK[0-9a-f]{32}\b", "SK"),
    _rule(":aa", r"\b(\d{8,10}):AA[A-Za-z0-9_-]{33}\b", r"\1:[REDACTED]"),
    _rule(
        "hooks.slack.com",
        r"https://hooks\.slack\.com/(services|workflows|triggers)/[A-Za-z0-9/_-]+",
        r"https://hooks.slack.com/\1/[REDACTED]",
    ),
    _rule(
        "/api/webhooks/",
        r"https://discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+",
        "https://discord.com/api/webhooks/[REDACTED]",
    ),
)

_CURL_USER = re.compile(rf"(\s(?:-u|--user)[= ]?\s*[\"']?)([^\s:\"']+):{_NOT_MARKED}(?![$<{{])[^\s\"']+")
_MYSQL_PASSWORD = re.compile(rf"(\s-p){_NOT_MARKED}\S+")  # mysql -psecret, on a line naming mysql
_IN_CONTEXT: tuple[_Rule, ...] = (
    _rule(  # scheme://user:password@host, the user kept (it may be empty: redis://:pw@host)
        # the password runs to the authority's last `@`: mysql://root:p@ssw0rd@db
        "://",
        rf"\b([a-z][a-z0-9+.-]*://[^\s:/@]*):{_NOT_MARKED}[^\s/]+@",
        r"\1:[REDACTED]@",
    ),
    _rule(
        "authorization",
        rf"(?i)(authorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic|digest)\s+){_NOT_MARKED}(?![<$])[^\s\"']+",
        r"\1[REDACTED]",
    ),
    _rule(  # a bearer token outside a header: long enough, not a plain word
        "bearer",
        rf"\b(Bearer\s+){_NOT_MARKED}(?=[A-Za-z0-9._~+/=-]{{12,}})(?=\S*[0-9._~+/=-])[A-Za-z0-9._~+/=-]+",
        r"\1[REDACTED]",
    ),
    _rule("accountkey=", rf"(AccountKey=){_NOT_MARKED}[A-Za-z0-9+/=]{{20,}}", r"\1[REDACTED]"),
    _rule("sig=", rf"([?&]sig=){_NOT_MARKED}[A-Za-z0-9%+/=_-]{{20,}}", r"\1[REDACTED]"),
    _rule(":_auth", rf"(//[^\s/]+/:_auth(?:Token)?\s*=\s*){_NOT_MARKED}\S+", r"\1[REDACTED]"),
    _rule("machine", rf"(\bmachine\s+\S+\s+login\s+\S+\s+password\s+){_NOT_MARKED}\S+", r"\1[REDACTED]"),
    _rule(
        "--",
        r"(?i)(--(?:password|passwd|pass|token|api-key|secret|client-secret|auth-token)[= ])"
        rf"{_NOT_MARKED}(?!-)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)",
        r"\1[REDACTED]",
    ),
    _rule(
        "mysql", r"(?m)^.*\bmysql(?:dump|admin)?\b.*$", lambda m: _MYSQL_PASSWORD.sub(r"\1[REDACTED]", m[0])
    ),
    _rule(  # curl -u user:password, curl --user 'user:password': the user stays
        "curl",
        r"(?m)^.*\bcurl\b.*$",
        lambda m: _CURL_USER.sub(r"\1\2:[REDACTED]", m[0]),
    ),
    _rule(  # Docker's config.json and npm's `_auth`: base64 of user:password
        "auth",
        rf"(?i)(\"(?:auth|_auth|identitytoken)\"\s*:\s*\"){_NOT_MARKED}[A-Za-z0-9+/=._-]{{8,}}\"",
        r'\1[REDACTED]"',
    ),
    _rule(  # aws configure set aws_secret_access_key VALUE, npm config set //host/:_authToken VALUE
        "set",
        r"(?i)(\b(?:configure|config)(?:\s+|:)set\s+(?:--\S+\s+)*[\w./:-]*"
        rf"(?:secret|password|passwd|token|_key|authtoken)[\w./:-]*\s+){_NOT_MARKED}(?!--)([^\s=]+)",
        r"\1[REDACTED]",
    ),
    _rule(
        "</",
        rf"(?i)<(password|passwd|secret|token|api[_-]?key|client[_-]?secret)>{_NOT_MARKED}[^<]+</\1>",
        r"<\1>[REDACTED]</\1>",
    ),
)

_PROSE = re.compile(  # "the staging password is Sup3r!"; a plain word ("is rotated") stays
    r"\b((?:password|passphrase|passwd|secret|token|api[ _-]?key)s?\b(?:\s+\w+){0,2}?"
    r"\s+(?:is|was|are|were|reads|equals)\s*:?\s+[\"'`]?)(?!\[redacted)"
    r"(?=[^\s\"'`]{6,})(?=[^\s\"'`]*[0-9!@#$%^&*+=~?])(?!v?\d+(?:\.\d+)+\b)(?!\d{4}-\d\d-\d\d)"
    r"[^\s\"'`]*[^\s\"'`.,;:!?)]"
)  # matched in the lowercased text, like _ASSIGNED
_PROSE_ANY_CASE = re.compile(_PROSE.pattern, re.IGNORECASE)
_PROSE_VERBS = (" is ", " was ", " are ", " were ", " reads ", " equals ")
_BASIC = re.compile(r"\b(Basic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])")

_SECRET_NAME = (  # how a secret-named key ends: DB_PASSWORD, aws_secret_access_key, client_secret
    r"(?:password|passwd|passphrase|pwd|secret|token|apikey|[_-]pass"
    r"|(?:api|access|secret|private|signing|encryption|master|license|consumer|account|service|auth"
    r"|session|client|app)[_-]?key)"
)
_QUALIFIER = (  # what may follow a secret name and keep it one: GITHUB_TOKEN_PROD, DB_PASSWORD_1
    r"(?:[_-](?:\d+|prod|production|staging|stage|stg|dev|develop|test|qa|uat|live|base|main|primary"
    r"|secondary|old|new|current|next|prev|previous|backup|local|ci|value|v\d+))*"
)
_ASSIGNED = re.compile(  # matched in the lowercased text: 6 times as fast as (?i)
    rf"(({_SECRET_NAME}){_QUALIFIER}[\"']?\s*(?:=>|:=|[:=])\s*)"
    r"(\"[^\"\n]*\"|'[^'\n]*'|`[^`\n]*`|\$\{[^}\n]*\}|\{\{[^}\n]*\}\}|\[[^\]\n]*\]|<[^<>\n]*>"
    r"|[^\s\"'`,;&]+)"
)
_ASSIGNED_ANY_CASE = re.compile(_ASSIGNED.pattern, re.IGNORECASE)
_NOT_A_VALUE = re.compile(
    r"(?ix)^(?:"
    r"|\$\{.*\}|\$\(.*\)|\$[A-Za-z_]\w*|\{\{.*\}\}|<[^<>]*>|%\(\w+\)s|\{\w*\}"  # references, placeholders
    r"|\*+|x{3,}|\.\.\.|…|-|\||>|\[REDACTED.*"  # masks, YAML block markers, our marker
    r"|none|null|nil|undefined|true|false|str|string|int|bytes|bool|boolean|number|any|secretstr"
    r"|optional\[.*|str\s*\|.*|(?:self|cls|this|os|settings|config|env|process|request|ctx|args|params)\..*"
    r"|[A-Za-z_][\w.]*\(.*|[A-Za-z_][\w.]*\[.*"  # a call or a lookup: code that fetches a secret
    r")$"
)


_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd"})  # the shell's directories, as `env` prints them
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def _name_before(text: str, end: int) -> str:
    """The whole key name a match's secret word ends: `MYSQL_ROOT_` + `PASSWORD`."""
    start = end
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return text[start:end]


_OPENERS = {")": "(", "]": "[", "}": "{"}


def _unclosed_tail(value: str) -> int:
    """Where the closing brackets that end `value` but close nothing in it begin: they close
    what surrounds the assignment (`[password=abc]`) and stay after the marker."""
    end = len(value)
    while end and (closer := value[end - 1]) in _OPENERS:
        if value.count(closer, 0, end) <= value.count(_OPENERS[closer], 0, end):
            break
        end -= 1
    return end


def _assigned(text: str, match: re.Match[str]) -> str | None:
    """The replacement of a secret-named key's value, None to keep it; `match` spans `text`."""
    key_end, value = match.end(1), text[match.start(3) : match.end(3)]
    quote = value[0] if value[:1] in ("'", '"', "`") else ""
    tail = "" if quote else value[_unclosed_tail(value) :]
    inner = value[1:-1] if quote else value[: len(value) - len(tail)]
    name = _name_before(text, match.start()) + match.group(2)
    if not inner or _NOT_A_VALUE.match(inner.strip()) or name.lower() in _NOT_SECRET_NAMES:
        return None
    return f"{text[match.start() : key_end]}{quote}{MARK}{quote}{tail}"


def _redact_assigned(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a letter whose lowercase is longer: match the text itself
        return _ASSIGNED_ANY_CASE.sub(lambda m: _assigned(text, m) or m.group(0), text)
    pieces: list[str] = []
    done = 0
    for match in _ASSIGNED.finditer(lowered):
        replacement = _assigned(text, match)
        if replacement is not None:
            pieces += [text[done : match.start()], replacement]
            done = match.end()
    return "".join([*pieces, text[done:]])


def _redact_prose(text: str) -> str:
    lowered = text.lower()
    if not any(verb in lowered for verb in _PROSE_VERBS):
        return text
    if len(lowered) != len(text):
        return _PROSE_ANY_CASE.sub(r"\1[REDACTED]", text)
    pieces: list[str] = []
    done = 0
    for match in _PROSE.finditer(lowered):
        pieces += [text[done : match.end(1)], MARK]
        done = match.end()
    return "".join([*pieces, text[done:]])


def _basic(match: re.Match[str]) -> str:
    """`Basic <base64 of user:password>`; a plain word after "Basic" stays."""
    try:
        decoded = base64.b64decode(match.group(2), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return match.group(0)
    return f"{match.group(1)}{MARK}" if ":" in decoded and decoded.isprintable() else match.group(0)


_RULES = (*_SHAPES, *_IN_CONTEXT, _Rule(("basic",), _BASIC, _basic))
_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key")


def redact(text: str) -> str:
    """Replace every secret found with a [REDACTED] marker; applying it twice changes nothing."""
    lowered = text.lower()
    for rule in _RULES:
        if any(needle in lowered for needle in rule.needles):
            text = rule.pattern.sub(rule.replacement, text)
    if not any(word in lowered for word in _SECRET_WORDS):
        return text
    return _redact_assigned(_redact_prose(text))
