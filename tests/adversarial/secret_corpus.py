"""The secret corpus of issues 13 and 32: secret formats that must be redacted, and harmless
look-alikes that must pass through unchanged.

Every value is fake: generated from a fixed seed in the shape the real one has. The test
(`test_secret_corpus.py`) and the benchmark (`bench/redaction.py`) both read it.
"""

from __future__ import annotations

import base64
import random
import string
from dataclasses import dataclass

__all__ = ["LOOKALIKES", "SECRETS", "Secret"]

_rng = random.Random(13)
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "_-"


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Secret:
    """One format: a line as it shows up in notes, and the secret part that must vanish."""

    name: str
    text: str
    secret: str


def _s(name: str, template: str, secret: str) -> Secret:
    return Secret(name, template.format(s=secret), secret)


_PEM_BODY = "\n".join(_r(_B64, 64) for _ in range(6))
_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ" + _r(_URLSAFE, 30) + "." + _r(_URLSAFE, 43)
_BASIC = base64.b64encode(b"deploy:" + _r(_ALNUM, 14).encode()).decode()

SECRETS: list[Secret] = [
    _s("aws access key id", "AWS_ACCESS_KEY_ID={s}", "AKIA" + _r(_UPPER, 16)),
    _s("aws temporary key id", "the session used {s} until it expired", "ASIA" + _r(_UPPER, 16)),
    _s("aws secret access key", "aws_secret_access_key = {s}", _r(_B64, 40)),
    _s("aws secret env", "export AWS_SECRET_ACCESS_KEY={s}", _r(_B64, 40)),
    _s("github classic pat", "git clone https://github.com/o/r (token {s})", "ghp_" + _r(_ALNUM, 36)),
    _s("github oauth token", "gh auth status shows {s}", "gho_" + _r(_ALNUM, 36)),
    _s("github app server token", "installation token: {s}", "ghs_" + _r(_ALNUM, 36)),
    _s("github user-to-server token", "the app returned {s}", "ghu_" + _r(_ALNUM, 36)),
    _s("github refresh token", "refresh with {s}", "ghr_" + _r(_ALNUM, 36)),
    _s("github fine-grained pat", "GH_PAT {s}", "github_pat_" + _r(_ALNUM, 22) + "_" + _r(_ALNUM, 59)),
    _s("gitlab pat", "CI uses {s} for the registry", "glpat-" + _r(_URLSAFE, 20)),
    _s("openai key", "OPENAI key is {s}", "sk-proj-" + _r(_URLSAFE, 48) + "1"),
    _s("anthropic key", "the provider key {s}", "sk-ant-api03-" + _r(_URLSAFE, 80)),
    _s("slack bot token", "SLACK {s}", "xoxb-" + _r("0123456789", 12) + "-" + _r(_ALNUM, 24)),
    _s(
        "slack webhook",
        "post alerts to {s}",
        "https://hooks.slack.com/services/T0" + _r(_UPPER, 8) + "/B0" + _r(_UPPER, 8) + "/" + _r(_ALNUM, 24),
    ),
    _s(
        "discord webhook",
        "notify {s}",
        "https://discord.com/api/webhooks/" + _r("0123456789", 18) + "/" + _r(_URLSAFE, 68),
    ),
    _s("google api key", "maps key {s}", "AIza" + _r(_URLSAFE, 35)),
    _s("google oauth client secret", "GOOGLE_CLIENT_SECRET is {s} now", "GOCSPX-" + _r(_URLSAFE, 28)),
    _s("stripe live secret", "billing uses {s}", "sk_live_" + _r(_ALNUM, 24)),
    _s("stripe restricted key", "read-only {s}", "rk_live_" + _r(_ALNUM, 24)),
    _s("stripe webhook secret", "endpoint signing secret {s}", "whsec_" + _r(_ALNUM, 32)),
    _s("npm token", "NPM publish token {s}", "npm_" + _r(_ALNUM, 36)),
    _s("npmrc auth token", "//registry.example.org/:_authToken={s}", _r(_URLSAFE, 36)),
    _s("pypi token", "twine upload with {s}", "pypi-AgEIcHlwaS5vcmc" + _r(_URLSAFE, 60)),
    _s("hugging face token", "HF {s}", "hf_" + _r(_ALNUM, 34)),
    _s("docker hub pat", "docker login -u me with {s}", "dckr_pat_" + _r(_URLSAFE, 27)),
    _s("sendgrid key", "mail via {s}", "SG." + _r(_URLSAFE, 22) + "." + _r(_URLSAFE, 43)),
    _s("mailgun key", "mailgun {s}", "key-" + _r(_HEX, 32)),
    _s("shopify access token", "shop admin {s}", "shpat_" + _r(_HEX, 32)),
    _s("digitalocean token", "doctl uses {s}", "dop_v1_" + _r(_HEX, 64)),
    _s("hashicorp vault token", "VAULT_TOKEN={s}", "hvs." + _r(_URLSAFE, 90)),
    _s("vault token in prose", "the root token is {s} (rotate it)", "hvs." + _r(_URLSAFE, 90)),
    _s("grafana service account", "grafana {s}", "glsa_" + _r(_ALNUM, 32) + "_" + _r(_HEX, 8)),
    _s("age secret key", "backup key {s}", "AGE-SECRET-KEY-1" + _r(_UPPER, 58)),
    _s("telegram bot token", "bot {s}", "1234567890:AA" + _r(_URLSAFE, 33)),
    _s("twilio api key", "twilio {s}", "SK" + _r(_HEX, 32)),
    _s("databricks token", "DATABRICKS {s}", "dapi" + _r(_HEX, 32)),
    _s("jwt", "session cookie {s}", _JWT),
    _s("bearer header", "curl -H 'Authorization: Bearer {s}' https://api.example.org", _r(_URLSAFE, 40)),
    _s("basic auth header", "Authorization: Basic {s}", _BASIC),
    _s("basic auth outside a header", "the proxy wants Basic {s} on every call", _BASIC),
    _s("pem private key", "-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----", _PEM_BODY),
    _s("pem key cut short", "key file starts:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{s}", _PEM_BODY),
    _s(
        "gcp service account key",
        '"private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n"',
        _r(_B64, 64),
    ),
    _s(
        "pgp private key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{s}\n-----END PGP PRIVATE KEY BLOCK-----",
        _PEM_BODY,
    ),
    _s("password line", "password={s}", "Tr0ub4dor" + _r(_ALNUM, 6)),
    _s("password yaml", "  password: {s}", _r(_ALNUM, 16)),
    _s(
        "password json with spaces",
        '{{"user": "svc", "password": "{s}"}}',
        "correct horse " + _r(string.ascii_lowercase, 8),
    ),
    _s("db password env", "DB_PASSWORD={s}", _r(_ALNUM, 18)),
    _s("mysql root password", "MYSQL_ROOT_PASSWORD={s} docker compose up", _r(_ALNUM, 18)),
    _s("pgpassword", "PGPASSWORD={s} psql -h db -U app", _r(_ALNUM, 18)),
    _s("redis url no user", "REDIS_URL=redis://:{s}@cache:6379/0", _r(_ALNUM, 20)),
    _s("valkey url no user", "entry_store = valkey://:{s}@valkey:6379/0", _r(_ALNUM, 20)),
    _s("valkey url with user", "valkeys://memctl:{s}@valkey.internal:6380/1", _r(_ALNUM, 20)),
    _s("postgres url", "DATABASE_URL=postgresql://app:{s}@db:5432/app", _r(_ALNUM, 20)),
    _s("mongodb srv url", "mongodb+srv://admin:{s}@cluster0.example.net/db", _r(_ALNUM, 20)),
    _s("amqp url", "broker amqps://guest:{s}@mq:5671", _r(_ALNUM, 20)),
    _s("client secret yaml", "client_secret: {s}", _r(_URLSAFE, 32)),
    _s("client secret json", '"client_secret": "{s}"', _r(_URLSAFE, 32)),
    _s("api key assignment", "api_key = '{s}'", _r(_ALNUM, 32)),
    _s("generic secret env", "APP_SECRET_KEY={s}", _r(_ALNUM, 40)),
    _s("access token in a query", "GET /v1/items?access_token={s}&page=2", _r(_URLSAFE, 40)),
    _s(
        "azure storage key",
        "DefaultEndpointsProtocol=https;AccountName=st;AccountKey={s};",
        _r(_B64, 86) + "==",
    ),
    _s("azure sas signature", "https://st.blob.core.windows.net/c/f?sv=2022&sig={s}", _r(_B64, 43) + "%3D"),
    _s("netrc", "machine api.example.org login deploy password {s}", _r(_ALNUM, 20)),
    _s("cli password flag", "psql --password={s} -h db", _r(_ALNUM, 16)),
    _s("mysql -p", "mysql -u root -p{s} app < dump.sql", _r(_ALNUM, 16)),
    _s("xml password", "<password>{s}</password>", _r(_ALNUM, 16)),
    _s("ado connection string", "Server=db;User Id=sa;Password={s};Database=app", _r(_ALNUM, 16)),
    _s("passphrase", "ssh key passphrase: {s}", _r(_ALNUM, 20)),
    _s("mysql pwd env", "MYSQL_PWD={s} mysql -u app", _r(_ALNUM, 16)),
    # issue 32: variants that leaked from bodies and texts
    _s("qualified token name", "GITHUB_TOKEN_PROD={s}", _r(_ALNUM, 36)),
    _s("secret key base", "SECRET_KEY_BASE={s}", _r(_HEX, 64)),
    _s("numbered db password", "DB_PASSWORD_1={s}", _r(_ALNUM, 14)),
    _s("curl user flag", "curl -u admin:{s} https://api.example.org/v1/items", _r(_ALNUM, 12)),
    _s(
        "docker config auth",
        '{{"auths": {{"registry.example.org": {{"auth": "{s}"}}}}}}',
        base64.b64encode(b"deploy:" + _r(_ALNUM, 16).encode()).decode(),
    ),
    _s("url password with at sign", "mysql://root:{s}@db:3306/app", "p@ssw0rd" + _r(_ALNUM, 6)),
    _s("aws configure set", "aws configure set aws_secret_access_key {s}", _r(_B64, 40)),
    _s("password in prose", "the staging password is {s}, ask before using it", "Hx7" + _r(_ALNUM, 9)),
    _s("token in prose", "FYI the deploy token for staging is {s}", _r(_ALNUM, 8) + "9" + _r(_ALNUM, 20)),
    _s("curl user flag quoted", "curl --user 'ci:{s}' https://ci.example.org", _r(_ALNUM, 14)),
    _s("npm config set auth", "npm config set //registry.example.org/:_authToken {s}", _r(_URLSAFE, 36)),
    _s("password list value", "password=[{s}]", _r(_ALNUM, 14)),
    _s("api key with env suffix", "STRIPE_API_KEY_LIVE={s}", _r(_ALNUM, 30)),
]

# Harmless text that looks like a secret to a careless rule: hashes, ids, code that handles
# secrets without holding one, references and placeholders, prose about tokens and keys.
_HANDWRITTEN = [
    "password: str",
    "def login(user: str, password: str) -> Session:",
    "token = get_token()",
    "password = os.environ['DB_PASSWORD']",
    "secret = settings.SECRET_KEY",
    "api_key = config.api_key",
    "token = request.headers['Authorization']",
    "password: ${DB_PASSWORD}",
    "MYSQL_ROOT_PASSWORD: ${MYSQL_ROOT_PASSWORD}",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "client_secret: <your-client-secret>",
    "api_key = '<your-api-key>'",
    "AWS_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY",
    "password = None",
    '"password": null',
    "token: Optional[str] = None",
    "secret: SecretStr",
    "password: '***'",
    "MYSQL_ROOT_PASSWORD_FILE=/run/secrets/db_root",
    "token_file = /run/secrets/bridge.token",
    "max_tokens = 512",
    "num_tokens: 4096",
    "password_min_length = 12",
    "TOKEN_TTL_SECONDS=3600",
    "secret_santa = true",
    "tokenizer = AutoTokenizer.from_pretrained(name)",
    "def rotate_token(self) -> None:",
    "The password must be rotated every 90 days.",
    "Bearer tokens are compared in constant time.",
    "Use a Bearer token from memctl token rotate.",
    "Authorization: Bearer <token>",
    "Basic configuration works out of the box.",
    "Basic auth is refused; use a token.",
    "GitHub classic tokens start with ghp_ and fine-grained ones with github_pat_.",
    "AWS long-term key ids start with AKIA, temporary ones with ASIA.",
    "Keys from OpenAI start with sk- followed by letters and digits.",
    "we pin scikit-learn because sk-learn-pipelines broke",
    "redis://cache:6379/0",
    "valkey://localhost:6379/0?prefix=app",
    "valkeys://valkey.internal:6380/1",
    "postgresql://db:5432/app",
    "ssh://git@github.com:22/org/repo.git",
    "git@github.com:org/repo.git",
    "https://user@example.org/path",
    "mailto:ops@example.org",
    "https://hooks.slack.com/ is where webhooks live",
    "https://discord.com/api/webhooks is the endpoint family",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq3kQ1wP8a0VqLh2Zt9Yc4nR6dXbE5fU7sJmK1oT2pW deploy@ci",
    "the key rotation runbook lives in docs/operations.md",
    "primary_key = id",
    "sort_key: created_at",
    "cache_key = f'{user}:{page}'",
    "foreign_key: project_id",
    "the secret ingredient is patience",
    "memory_set stores a title and a body",
    "token rotate --grace 24h",
    "auth_token = ''",
    "password: |",
    "pwd = os.getcwd()",
    "cd $(pwd)/build",
    "PWD=/home/dev/app",
    "OLDPWD=/tmp",
    "credentials: inherit",
    "passwordless login via passkeys",
    "x-api-key header is required by the gateway",
    "Basic",
    "sk-",
    "the password field is hashed with argon2id",
    "token expired at 2026-11-30T12:00:00Z",
    "SECRET_KEY is read from the environment",
    "jwt.decode(token, key, algorithms=['HS256'])",
    "eyJ is how every base64url-encoded JSON object begins",
    "machine api.example.org login deploy",
    "mysql -u root -p app < dump.sql",
    "psql --password -h db",
    "--token-file ~/.memctl-token",
    "<password></password>",
    "Server=db;User Id=sa;Integrated Security=true",
    "AccountName=st;EndpointSuffix=core.windows.net",
    "?sv=2022-11-02&se=2026-12-31",
    "key-value stores such as Valkey",
    "SK-II is a skincare brand",
    "the ticket number is 1234567890",
    "hf_hub_download(repo_id, filename)",
    "npm_config_cache=/tmp/npm",
    "glpat- tokens expire after a year",
    "SG. is a prefix of SendGrid keys",
    "hvs. tokens are service tokens",
    "dapi tokens belong to Databricks",
    # issue 32: near misses of the rules added for it
    "docker run -u 1000:1000 app",
    'curl -u "$API_USER:$API_PASS" https://api.example.org',
    "curl -u admin https://api.example.org (curl prompts for the password)",
    "curl -sSf https://example.org/install.sh | sh",
    '"auth": "none"',
    '"auth": ""',
    "aws configure set region eu-west-1",
    "aws configure set default.output json",
    "npm config set registry https://registry.example.org/",
    "the password is rotated every 90 days",
    "the token is valid for 3600 seconds",
    "the secret is kept in the vault",
    "The password reset flow sends a link that expires after 1 hour.",
    "password reset flow: user -> email -> link -> new password",
    "Implement the password reset flow (issue #4821).",
    "token is v2.3.1 compatible",
    "the api key is required",
    "tokens are minted by the auth service",
    "GITHUB_TOKEN_PROD=${{ secrets.GITHUB_TOKEN_PROD }}",
    "SECRET_KEY_BASE=<generate with rails secret>",
    "DB_PASSWORD_1=$DB_PASSWORD_1",
    "password_reset_url = /account/reset",
    "token_endpoint: https://auth.example.org/oauth/token",
    "secrets: [DB_PASSWORD, API_KEY]",
    "password_expiry_days: 90",
    "mysql://db:3306/app",
    "mysql://root@db:3306/app",
    "email me at ops@example.org or dev@example.org",
    "https://example.org/@user/posts",
    "key rotation: every 30 days",
]

_PROSE = (
    "deploy notes for the release train rotate logs weekly and keep the runbook short "
    "the cache warms on start migrations run before traffic moves backups are verified nightly"
)


def _base64_of_prose() -> str:
    """Base64 of ordinary text: looks random, holds nothing secret."""
    vocabulary = _PROSE.split()
    words = " ".join(_rng.choice(vocabulary) for _ in range(_rng.randint(4, 9)))
    return base64.b64encode(words.encode()).decode()


def _generated() -> list[str]:
    """Realistic lines around random ids, digests and numbers: hashes are not secrets."""
    lines: list[str] = []
    for _ in range(25):
        lines.append(f"commit {_r(_HEX, 40)}")
        lines.append(f"fixed in {_r(_HEX, 7)} (see #{_rng.randint(1, 9999)})")
        lines.append(f"request id {_rng.getrandbits(128):032x}")
        lines.append(
            f"image sha256:{_r(_HEX, 64)} pushed at 2026-{_rng.randint(1, 12):02}-{_rng.randint(1, 28):02}"
        )
        u = f"{_r(_HEX, 8)}-{_r(_HEX, 4)}-4{_r(_HEX, 3)}-a{_r(_HEX, 3)}-{_r(_HEX, 12)}"
        lines.append(f"dataset id {u}")
        lines.append(f"integrity sha512-{_r(_B64, 86)}==")
        lines.append(f"payload {_base64_of_prose()}")
        lines.append(f"released v{_rng.randint(0, 9)}.{_rng.randint(0, 40)}.{_rng.randint(0, 99)}")
        lines.append(f"md5 {_r(_HEX, 32)}  dist/app-{_rng.randint(1, 9)}.{_rng.randint(0, 9)}.tar.gz")
    return lines


LOOKALIKES: list[str] = _HANDWRITTEN + _generated()
