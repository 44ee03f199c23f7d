"""Settings from the environment (DESIGN.md, "Configuration"): every default works on a laptop."""

import base64
import ipaddress
import math
import os
import re
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _env(name):
    """The variable's value, spaces aside; None when unset or blank: a blank value means the default
    (an `.env` or compose file lists a variable with nothing after `=`)."""
    value = os.environ.get(name)
    return None if value is None or value.strip() == "" else value.strip()


VAR_DIR = Path(_env("AGUI_VAR_DIR") or BASE_DIR / "var").resolve()  # blank was Path(""): the working directory
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name, default=False):
    value = _env(name)
    if value is None:
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def _in_range(name, value, number, minimum, above, maximum):
    """`number` when within its setting's range, else ImproperlyConfigured naming the variable: a
    zero lease or turn count, a negative size, was taken and broke the product at run time."""
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at least {minimum}")
    if above is not None and number <= above:
        raise ImproperlyConfigured(f"{name}={value!r} must be more than {above}")
    if maximum is not None and number > maximum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at most {maximum}")
    return number


def env_int(name, default, minimum=None, maximum=None):
    value = _env(name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    return _in_range(name, value, number, minimum, None, maximum)


def env_float(name, default, minimum=None, above=None, maximum=None):
    value = _env(name)
    if value is None:
        return float(default)
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if not math.isfinite(number):  # float() takes "nan" and "inf": no timeout or interval means either
        raise ImproperlyConfigured(f"{name}={value!r} is not a finite number")
    return _in_range(name, value, number, minimum, above, maximum)


def env_list(name, default=""):
    """A comma-separated list, blanks dropped; a blank value is the default (an empty
    DJANGO_ALLOWED_HOSTS answered 400 to every page while /healthz, exempt, said all was well)."""
    return [v.strip() for v in (_env(name) or default).split(",") if v.strip()]


def env_choice(name, default, choices):
    """One of `choices` (case and spaces aside): a misspelt word was taken and acted on later, elsewhere."""
    value = (_env(name) or default).lower()
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def env_url(name, default):
    """The site's address as people reach it: scheme, host and port. No path: the site is served at the root
    of its host (its pages, scripts, sockets and API use root paths such as /ws/ and /api/), so a link
    under a path reached nothing else of the site; such a value stops the start."""
    from urllib.parse import urlsplit

    value = _env(name) or default
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name}={value!r} is not an http:// or https:// address (the site's scheme, "
                                   "host and port, such as https://inbox.example.com)")
    if parts.path not in ("", "/"):
        raise ImproperlyConfigured(f"{name}={value!r} has a path: the site must be served at the root of its host "
                                   "(its pages, sockets and API use root paths), so give its scheme, host and port "
                                   "only, such as https://inbox.example.com")
    return value


def env_networks(name):
    """Comma-separated IP addresses or CIDR networks (`10.0.0.0/8, ::1`)."""
    try:
        return [str(ipaddress.ip_network(v, strict=False)) for v in env_list(name)]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}") from None


DEBUG = env_bool("DJANGO_DEBUG", True)
_DEV_SECRET = "dev-insecure-secret-key-DO-NOT-USE-IN-PRODUCTION"
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"] if _env("DJANGO_SECRET_KEY") else _DEV_SECRET  # as given: it signs
if not DEBUG and SECRET_KEY == _DEV_SECRET:  # ImproperlyConfigured: manage.py says it in one line
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
# Said once per start: `make run` says it itself and tells its children (manage.py, worker, beat,
# web) through AGUI_SECRET_KEY_WARNED, else every process would repeat it.
if SECRET_KEY == _DEV_SECRET and "pytest" not in sys.modules and not os.environ.get("AGUI_SECRET_KEY_WARNED"):
    print("WARNING: development SECRET_KEY in use (set DJANGO_SECRET_KEY in production)", file=sys.stderr)

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")
CSRF_FAILURE_VIEW = "agui_project.errors.csrf_failure"  # the site's layout, not Django's bare page

INSTALLED_APPS = [
    "daphne",  # before staticfiles, so that runserver is Daphne's (ASGI) one
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_filters",  # the REST lists' filters (approvals/filters.py)
    "channels",
    "people",  # each person's language (people/models.py Profile), read by pages and mail
    "state",
    "approvals",
    "agents",
    "webhooks",
    "agents.catalog",
    "agents.mcp_servers",  # tools from MCP servers (agents/mcp_servers/)
]

MIDDLEWARE = [
    "agui_project.health.ProbeMiddleware",  # /healthz before the Host check: probes use the process's own address
    "agui_project.limits.RequestLimitsMiddleware",  # 413 for big bodies, JSON errors under /api/ and /agui/
    "django.middleware.security.SecurityMiddleware",
    "agui_project.static.StaticFilesMiddleware",  # WhiteNoise, async-capable (agui_project/static.py)
    "agui_project.csp.CSPMiddleware",  # Content-Security-Policy header (django-csp), async-capable
    "django.contrib.sessions.middleware.SessionMiddleware",
    # after sessions, before common: the language cookie, then Accept-Language, then LANGUAGE_CODE
    "django.middleware.locale.LocaleMiddleware",
    "agui_project.common.CommonMiddleware",  # Django's; the REST API also without its trailing slash
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "people.middleware.UserLanguageMiddleware",  # a signed-in person's saved language wins
    "people.middleware.TimeZoneMiddleware",  # pages in the reader's time zone (chosen, else the browser's)
    "django.contrib.messages.middleware.MessageMiddleware",
    "people.middleware.SessionEndedMiddleware",  # the sign-in page says a session ended
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "agui_project.private_pages.PrivateResponsesMiddleware",  # a person's answers: Cache-Control no-store
    "approvals.account_audit.AskingMiddleware",  # who changed an account or a group; last: no thread hop
]

ROOT_URLCONF = "agui_project.urls"
ASGI_APPLICATION = "agui_project.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",  # LANGUAGES and LANGUAGE_CODE: the picker, <html lang>
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "agui_project.context.nav",
            ],
        },
    },
]

# SQLite by default, tuned for several processes writing (web, workers, beat): WAL, a busy timeout,
# IMMEDIATE transactions (select_for_update is a no-op on SQLite; these serialise the writers). The WAL
# file is cut back to 64 MB after each checkpoint: it kept the size of its largest burst for good (350 MB
# after a bulk delete)
_SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; "
                    "PRAGMA journal_size_limit=67108864;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}
try:
    DATABASES = {
        "default": dj_database_url.parse(
            _env("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}", conn_max_age=0
        )
    }
except ValueError:  # an unknown scheme, a port that is no number; the URL may hold a password: not shown
    DATABASES = {"default": {"ENGINE": "", "NAME": ""}}
_DB = DATABASES["default"]
if _DB["ENGINE"] not in ("django.db.backends.postgresql", "django.db.backends.sqlite3") or (
        # sqlite://name (two slashes) is an in-memory database, a relative path each process's own: every
        # process would write a database of its own, and an in-memory one loses everything at exit
        _DB["ENGINE"].endswith("sqlite3") and (_DB["NAME"] in ("", ":memory:") or not os.path.isabs(_DB["NAME"]))):
    raise ImproperlyConfigured("DATABASE_URL must be a PostgreSQL URL (postgres://user:password@host:5432/name) or "
                               "a SQLite file's absolute path (sqlite:////absolute/path.sqlite3)")
# Under ASGI every request runs its sync code on a thread of its own, so a persistent connection
# is never reused: without a pool each request paid a new connection. PostgreSQL: Django's pool
# (agui_project/postgresql); SQLite: agui_project/sqlite3 (Django's backend keeping the connections it closes).
AGUI_DB_POOL = env_bool("AGUI_DB_POOL", True)
AGUI_DB_POOL_SIZE = env_int("AGUI_DB_POOL_SIZE", 10, minimum=1) if AGUI_DB_POOL else 0
if DATABASES["default"]["ENGINE"].endswith("postgresql") and AGUI_DB_POOL:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1, "max_size": AGUI_DB_POOL_SIZE, "timeout": 10,
    }
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, its pool handing out the connection returned last (the warm one), the
    # models' choices adapted as the str or int they are
    DATABASES["default"]["ENGINE"] = "agui_project.postgresql"
# PostgreSQL plans every statement it is sent; a prepared one is planned once per connection, and
# the pool keeps connections (and their prepared statements) from one request to the next: a
# statement run twice on a connection is prepared there (psycopg's prepare_threshold; Django turns it
# off unless asked, for transaction-mode poolers such as PgBouncer's: AGUI_DB_PREPARE=0 there).
# Prepared statements need the server to bind the parameters (server_side_binding).
# how long a web request waits for a row lock before it is answered 503 database_busy (PostgreSQL;
# agui_project/handler.bound_lock_waits): 0, as long as the lock is held
AGUI_WEB_LOCK_TIMEOUT = env_float("AGUI_WEB_LOCK_TIMEOUT", 5, minimum=0)
AGUI_DB_PREPARE = env_bool("AGUI_DB_PREPARE", True)
if DATABASES["default"]["ENGINE"].endswith("postgresql") and AGUI_DB_PREPARE:
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=2)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" and AGUI_DB_POOL:
    DATABASES["default"]["ENGINE"] = "agui_project.sqlite3"
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    DATABASES["default"]["OPTIONS"] = {**_SQLITE_OPTIONS, **DATABASES["default"].get("OPTIONS", {})}
    # A file, not memory: worker threads in tests share it (in memory they fail: 'database table is locked').
    # Per process, so that two test runs on one machine never share (and delete) one file.
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test_db_{os.getpid()}.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
# Django's password check, throttled per account and address (agui_project/login_throttle.py)
AUTHENTICATION_BACKENDS = ["agui_project.login_throttle.ThrottledModelBackend"]
AGUI_LOGIN_MAX_FAILURES = env_int("AGUI_LOGIN_MAX_FAILURES", 10, minimum=1)
AGUI_LOGIN_WINDOW_SECONDS = env_int("AGUI_LOGIN_WINDOW_SECONDS", 900, minimum=1)
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

# The admin's default for anyone whose browser asks for none of LANGUAGES (and for mail to a
# person who never chose): DJANGO_LANGUAGE_CODE=fr, for instance.
# Each language is named in itself (the picker shows them so: a reader finds their own).
LANGUAGES = [
    ("en", "English"),
    ("id", "Bahasa Indonesia"),
    ("fr", "Français"),
    ("pt-br", "Português (Brasil)"),
    ("zh-hans", "简体中文"),
]
LANGUAGE_CODE = _env("DJANGO_LANGUAGE_CODE") or "en"
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(f"DJANGO_LANGUAGE_CODE={LANGUAGE_CODE!r}: not one of {', '.join(dict(LANGUAGES))}")
# compiled at install (manage.py compilemessages: make run, make test, make e2e); only .po is kept in git
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# Serve straight from the finders: `make run` needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# --- Security: cookies, HTTPS, proxies, Content-Security-Policy, API tokens -----------------
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
X_FRAME_OPTIONS = "DENY"
# AGUI_HTTPS=1 when the site is served over HTTPS only: plain-HTTP requests are redirected and
# browsers are told (HSTS) to use HTTPS for a year. Each part can be set on its own too.
AGUI_HTTPS = env_bool("AGUI_HTTPS", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", AGUI_HTTPS)
# a load balancer probes the backend over plain HTTP: a redirect would read as "unhealthy"
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31536000 if AGUI_HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HSTS_SECONDS > 0)
# Preloading is a promise to browser vendors that is slow to take back (and anyone may submit a
# domain whose header asks for it): opt in only. Its deploy-check reminder is silenced below.
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Behind a TLS-terminating proxy: the header it sets on HTTPS requests, e.g.
# AGUI_PROXY_SSL_HEADER=X-Forwarded-Proto (value https) or "X-Forwarded-Proto: https". Only set
# it when the proxy always sets (or strips) that header: a client could otherwise claim HTTPS.
_proxy_ssl_header = os.environ.get("AGUI_PROXY_SSL_HEADER", "").strip()
if _proxy_ssl_header:
    _name, _, _value = _proxy_ssl_header.partition(":")
    if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", _name.strip()):  # RFC 9110's token
        raise ImproperlyConfigured(f"AGUI_PROXY_SSL_HEADER={_proxy_ssl_header!r}: {_name.strip()!r} is not a header "
                                   "name (a header with a space never arrives: every request would be plain HTTP)")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _name.strip().upper().replace("-", "_"), _value.strip() or "https")
# Proxies whose X-Forwarded-For names the client (sign-in throttling counts per client address):
# comma-separated addresses or CIDR networks. Empty: REMOTE_ADDR is the client.
AGUI_TRUSTED_PROXIES = env_networks("AGUI_TRUSTED_PROXIES")
# The pages load only their own scripts, styles and sockets (agui_project/csp.py sends it).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],  # same-origin fetch and WebSockets (CSP 3: 'self' covers ws/wss)
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
        "upgrade-insecure-requests": AGUI_HTTPS,
    },
}
# REST and AG-UI tokens (DRF's) expire this long after they were made (0: never); expired or
# revoked (DELETE /api/auth/token/, the admin) tokens answer 401.
AGUI_TOKEN_TTL_SECONDS = env_int("AGUI_TOKEN_TTL_SECONDS", 30 * 24 * 3600, minimum=0)

# --- Redis, Celery, Channels -------------------------------------------------------------
REDIS_URL = _env("REDIS_URL") or "redis://127.0.0.1:6379/0"
if REDIS_URL.split("://", 1)[0].lower() not in ("redis", "rediss", "unix"):  # else the first event failed, much later
    _scheme = REDIS_URL.split("://", 1)[0] if "://" in REDIS_URL else ""
    raise ImproperlyConfigured("REDIS_URL must be a redis://, rediss:// or unix:// URL (it is " + (
        f"{_scheme}://…)" if _scheme.isalnum() else "not a URL)"))  # the rest may hold a password

CELERY_BROKER_URL = _env("CELERY_BROKER_URL") or REDIS_URL
# kombu's Redis transport with a fix: a worker lives through a Redis restart mid-task (agui_project/broker.py)
if CELERY_BROKER_URL.split("://", 1)[0] in ("redis", "rediss"):
    CELERY_BROKER_TRANSPORT = "agui_project.broker:Transport"
# A stack of processes sharing one Redis with others (a test's live stack) takes its own queue.
CELERY_TASK_DEFAULT_QUEUE = _env("CELERY_TASK_DEFAULT_QUEUE") or "celery"
# No result backend, JSON only: Celery's defaults, so not set here (named CELERY_RESULT_BACKEND,
# CELERY_TASK_SERIALIZER, CELERY_RESULT_SERIALIZER and CELERY_ACCEPT_CONTENT, they are also
# Celery 3's own names, and a worker warned at start that each was deprecated).
# No results are kept, so the (disabled) backend holds nothing per thread: one per process. Celery
# otherwise builds a backend on every new thread, and under ASGI each request's publish runs on one.
CELERY_RESULT_BACKEND_THREAD_SAFE = True
# Celery's own format, with the logger's name as the web processes' lines have it: README names loggers
# to look for (agui_project.agreement, agui_project.login_throttle), which a worker's and the beat's lines left out
CELERY_WORKER_LOG_FORMAT = "[%(asctime)s: %(levelname)s/%(processName)s] %(name)s: %(message)s"
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# An unacked task (worker killed) comes back after this many seconds, not the default hour.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 300, minimum=1)}
# a sweep the workers have not picked up yet covers the next ticks: none pile up while they are down
CELERY_BEAT_SCHEDULER = "agui_project.beat:Scheduler"
CELERY_BEAT_SCHEDULE = {
    # reminders, escalations and expiry: every 2 s, so a request expires within 5 s of its deadline
    # even when its countdown task was lost (near deadlines also get their own countdown task)
    "approval-deadlines": {"task": "approvals.tasks.deadlines_due", "schedule": 2.0},
    # decisions whose undo window closed (each also has its own countdown task)
    "held-decisions": {"task": "approvals.tasks.held_decisions_due", "schedule": 2.0},
    "resume-stalled-runs": {"task": "agents.tasks.resume_stalled", "schedule": 30.0},
    # tool calls and runs left `executing`/`running` by a dead worker: outcome_unknown (or a retry
    # when idempotent) / a continuation; queued runs whose task message was lost are sent again
    "recover-stuck-tool-calls": {"task": "agents.tasks.recover_stuck_calls", "schedule": 10.0},
    # request mails whose task was lost (approvals.services.MAIL_SWEEP_GRACE_SECONDS late)
    "request-mails": {"task": "approvals.tasks.mails_due", "schedule": 15.0},
    # webhook deliveries whose countdown task was lost (webhooks.services.SWEEP_GRACE_SECONDS late)
    "webhook-deliveries": {"task": "webhooks.tasks.deliveries_due", "schedule": 10.0},
    # MCP servers never asked for their tools (seed_demo's), and unhealthy ones every 30 s
    "mcp-servers": {"task": "agents.mcp_servers.tasks.check_servers", "schedule": 10.0},
}
# pending requests and runs of accounts switched off by an update that sent no signal (a save ends them
# at once: agents/account_off.py); 0: no sweep (the e2e stack, whose tests hold that window open)
AGUI_SWITCHED_OFF_SWEEP_SECONDS = env_float("AGUI_SWITCHED_OFF_SWEEP_SECONDS", 30, minimum=0)
if AGUI_SWITCHED_OFF_SWEEP_SECONDS:
    CELERY_BEAT_SCHEDULE["switched-off-accounts"] = {"task": "agents.tasks.withdraw_switched_off",
                                                     "schedule": AGUI_SWITCHED_OFF_SWEEP_SECONDS}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # socket_timeout None: with redis-py's 5 s default an idle consumer's blocking read times out (its socket closes).
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": None}], "capacity": 1000},
    }
}

# --- REST API ------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "agui_project.auth.BearerTokenAuthentication",
        "agui_project.auth.ExpiringTokenAuthentication",  # `Token <key>`; both expire (AGUI_TOKEN_TTL_SECONDS)
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "agui_project.serializers.ApiSchema",  # the refusals DRF answers, documented
    "EXCEPTION_HANDLER": "agui_project.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "agui-inbox API", "VERSION": "0.1.0", "SERVE_INCLUDE_SCHEMA": False,
    # approve/reject is one choice set under several field names: one schema name for it
    "ENUM_NAME_OVERRIDES": {"DecisionEnum": "approvals.models.Decision.Kind", "RunStatusEnum": "agents.models.Run.Status"},
}

# --- The product ---------------------------------------------------------------------------
OPENAI_API_KEY = _env("OPENAI_API_KEY") or ""
OPENAI_BASE_URL = _env("OPENAI_BASE_URL")
AGUI_MODEL = _env("AGUI_MODEL") or "gpt-4o-mini"
AGUI_MODEL_TIMEOUT = env_float("AGUI_MODEL_TIMEOUT", 60, above=0)
AGUI_MAX_TURNS = env_int("AGUI_MAX_TURNS", 8, minimum=1)
# runs one account starts in an hour, whatever became of them (agents/services.start_run): each costs
# model calls; a continuation after a decision or an answer is the same run going on and does not count
AGUI_MAX_RUNS_PER_HOUR = env_int("AGUI_MAX_RUNS_PER_HOUR", 300, minimum=1)
# tool calls made from one model answer; the rest are answered "not executed" (agents/runtime/runner.py)
AGUI_MAX_TOOL_CALLS_PER_ANSWER = env_int("AGUI_MAX_TOOL_CALLS_PER_ANSWER", 16, minimum=1)
# The largest request body accepted (413 beyond); Django's own form limit follows it.
# an account's requests through POST /api/approvals/ waiting at once (each is mailed to its reviewers)
AGUI_MAX_PENDING_PER_REQUESTER = env_int("AGUI_MAX_PENDING_PER_REQUESTER", 100, minimum=1)
AGUI_MAX_REQUESTS_PER_HOUR = env_int("AGUI_MAX_REQUESTS_PER_HOUR", 600, minimum=1)
AGUI_MAX_BODY_BYTES = env_int("AGUI_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = AGUI_MAX_BODY_BYTES
# the most of a thread's history one MESSAGES_SNAPSHOT carries (its latest turns beyond): a client sends
# back what it was given, so a snapshot must leave room under the body's limit for its next turn
AGUI_SNAPSHOT_MAX_BYTES = env_int("AGUI_SNAPSHOT_MAX_BYTES", AGUI_MAX_BODY_BYTES // 2, minimum=1)
# Messages one AG-UI request may add to a thread (413 beyond): a resent history it holds does not count.
AGUI_MAX_NEW_MESSAGES = env_int("AGUI_MAX_NEW_MESSAGES", 200, minimum=1)
# What else a RunAgentInput may bring (agents/agui/incoming.py): the characters of its context[]
# (descriptions and values); images in user messages, taken only when the model takes them
# (AGUI_MODEL_VISION: the one model this process talks to, so a per-process fact), at most
# AGUI_MAX_IMAGES new ones a request, each inline one at most AGUI_MAX_IMAGE_BYTES decoded.
AGUI_MAX_CONTEXT_CHARS = env_int("AGUI_MAX_CONTEXT_CHARS", 20000, minimum=0)
# characters of one chat message (REST); the chat's composer takes no more (its maxlength)
AGUI_MAX_MESSAGE_CHARS = env_int("AGUI_MAX_MESSAGE_CHARS", 20000, minimum=1)
AGUI_MODEL_VISION = env_bool("AGUI_MODEL_VISION", False)
AGUI_MAX_IMAGES = env_int("AGUI_MAX_IMAGES", 8, minimum=0)
AGUI_MAX_IMAGE_BYTES = env_int("AGUI_MAX_IMAGE_BYTES", 1024 * 1024, minimum=1)
# Redis connections one Daphne process may hold for XREAD BLOCK (one per watched thread; the
# watchers of one thread share one): redis-py's own default of 100 broke the 101st chat.
AGUI_STREAM_READER_CONNECTIONS = env_int("AGUI_STREAM_READER_CONNECTIONS", 2000, minimum=1)
AGUI_STREAM_MAXLEN = env_int("AGUI_STREAM_MAXLEN", 20000, minimum=1)
AGUI_STREAM_TTL = env_int("AGUI_STREAM_TTL", 24 * 3600, minimum=1)
# tries of the event writer's Redis client before a run gives up on its stream (15: ~11 s of outage)
AGUI_REDIS_RETRIES = env_int("AGUI_REDIS_RETRIES", 15, minimum=0)
# how long an SSE relay keeps its client waiting on an unreachable Redis before it ends with RUN_ERROR
AGUI_STREAM_GRACE_SECONDS = env_float("AGUI_STREAM_GRACE_SECONDS", 30, minimum=0)
# A run whose AG-UI client closed its stream mid-run (abortRun, CopilotKit's Stop) is stopped (it
# ends cancelled) this long after, unless another stream or a chat socket watches the thread;
# negative: never for that reason. A new message on the thread stops it at once, and waits at most
# AGUI_SUPERSEDE_WAIT_SECONDS for it to end before the new run starts (else run_active).
AGUI_ABANDONED_RUN_GRACE_SECONDS = env_float("AGUI_ABANDONED_RUN_GRACE_SECONDS", 5)
AGUI_SUPERSEDE_WAIT_SECONDS = env_float("AGUI_SUPERSEDE_WAIT_SECONDS", 10, minimum=0)
# how long an SSE response stays open (with keep-alives) after a run that waits on someone else's
# review (a group), so the requester's client gets the continuation in the same response
AGUI_SSE_REVIEW_WAIT_SECONDS = env_float("AGUI_SSE_REVIEW_WAIT_SECONDS", 120, minimum=0)
# seconds between predicted STATE_DELTAs of one streaming tool call (a burst must not flood clients)
AGUI_STATE_DELTA_INTERVAL = env_float("AGUI_STATE_DELTA_INTERVAL", 0.05, minimum=0)
# a thread's shared state: its size as compact UTF-8 JSON and its nesting, checked before any change
# is applied or stored (state/services.py); beyond them a change is refused, state_too_large
AGUI_STATE_MAX_BYTES = env_int("AGUI_STATE_MAX_BYTES", 256 * 1024, minimum=2)
AGUI_STATE_MAX_DEPTH = env_int("AGUI_STATE_MAX_DEPTH", 32, minimum=1)
# Seed 003: wait an hour by default, then treat silence as "no" (the policy's timeout action).
AGUI_DEFAULT_APPROVAL_TIMEOUT = env_int("AGUI_DEFAULT_APPROVAL_TIMEOUT", 3600, minimum=1,
                                       maximum=30 * 24 * 3600)  # a policy's deadline is at most 30 days
# a reviewer's decision from the inbox pages is held this long (Undo), then sent by the beat sweep
AGUI_UNDO_SECONDS = env_float("AGUI_UNDO_SECONDS", 5, minimum=0)
AGUI_PUBLIC_URL = env_url("AGUI_PUBLIC_URL", "http://localhost:8000")  # links in mail
# One-click decisions by mail (approvals/mail_links.py): a link dies with its request, and at the
# latest this long after it was sent (for requests without a deadline)
AGUI_MAIL_LINK_MAX_AGE_SECONDS = env_int("AGUI_MAIL_LINK_MAX_AGE_SECONDS", 7 * 24 * 3600, minimum=1)
# on: a mail link asks its recipient to sign in before the confirmation page (off: the signed,
# single-use link stands for the recipient for that one decision)
AGUI_MAIL_LINKS_REQUIRE_SIGN_IN = env_bool("AGUI_MAIL_LINKS_REQUIRE_SIGN_IN", False)
# Execution exactly once: a running tool call holds a lease in Redis, renewed by its worker; a
# call still `executing` after its lease lapsed belongs to a dead worker (agents/runtime/execution.py).
AGUI_TOOL_LEASE_SECONDS = env_float("AGUI_TOOL_LEASE_SECONDS", 30, minimum=1)

# --- webhooks (webhooks/services.py) -----------------------------------------------------------
AGUI_WEBHOOK_MAX_ATTEMPTS = env_int("AGUI_WEBHOOK_MAX_ATTEMPTS", 8, minimum=1)  # then the delivery is failed (replayable)
AGUI_WEBHOOK_BACKOFF_SECONDS = env_float("AGUI_WEBHOOK_BACKOFF_SECONDS", 10, minimum=0)  # doubled after each failure
AGUI_WEBHOOK_BACKOFF_MAX_SECONDS = env_float("AGUI_WEBHOOK_BACKOFF_MAX_SECONDS", 3600, minimum=0)
AGUI_WEBHOOK_TIMEOUT_SECONDS = env_float("AGUI_WEBHOOK_TIMEOUT_SECONDS", 10, above=0)
AGUI_WEBHOOK_RESPONSE_BODY_CHARS = env_int("AGUI_WEBHOOK_RESPONSE_BODY_CHARS", 1000, minimum=0)  # kept per attempt
AGUI_WEBHOOK_MAX_URL_LENGTH = env_int("AGUI_WEBHOOK_MAX_URL_LENGTH", 2000, minimum=1)
# callback_url deliveries are signed with this (whsec_...); empty: a secret derived from SECRET_KEY
AGUI_WEBHOOK_CALLBACK_SECRET = _env("AGUI_WEBHOOK_CALLBACK_SECRET") or ""
if AGUI_WEBHOOK_CALLBACK_SECRET:  # read as the deliveries read it, else every callback failed in the worker
    from standardwebhooks import Webhook

    try:  # the library takes a value without whsec_ as base64 too: "abc" signed with a key of two bytes
        Webhook(AGUI_WEBHOOK_CALLBACK_SECRET)
        if not AGUI_WEBHOOK_CALLBACK_SECRET.startswith("whsec_") or len(
                base64.b64decode(AGUI_WEBHOOK_CALLBACK_SECRET.removeprefix("whsec_"), validate=True)) < 24:
            raise ValueError
    except Exception:  # noqa: BLE001 -- the library's own errors (empty, bad base64); the value is a secret: not shown
        raise ImproperlyConfigured(
            "AGUI_WEBHOOK_CALLBACK_SECRET is not a signing secret: whsec_ then base64 of at least 24 bytes "
            "(Standard Webhooks); "
            "leave it unset to derive each account's from DJANGO_SECRET_KEY (manage.py webhook_callback_secret <user>)"
        ) from None
# SSRF guard: internal addresses (loopback, private, link-local) a webhook may reach; none by default
# in production, loopback in development (DEBUG); set but empty: none
AGUI_WEBHOOK_ALLOWED_NETWORKS = env_networks("AGUI_WEBHOOK_ALLOWED_NETWORKS") if os.environ.get(
    "AGUI_WEBHOOK_ALLOWED_NETWORKS") is not None else (["127.0.0.0/8", "::1/128"] if DEBUG else [])
AGUI_RUN_REQUEUE_SECONDS = env_float("AGUI_RUN_REQUEUE_SECONDS", 120, above=0)  # queued this long: send again
# a queued run never announced (Redis was down when it was committed): the beat announces it after
# this long; longer than the event writer's retries (~11 s), so a slow announce is not doubled
AGUI_ANNOUNCE_RETRY_SECONDS = env_float("AGUI_ANNOUNCE_RETRY_SECONDS", 15, minimum=0)
AGUI_TOOL_MAX_ATTEMPTS = env_int("AGUI_TOOL_MAX_ATTEMPTS", 3, minimum=1)  # idempotent tools' retries
# MCP servers (agents/mcp_servers/): starting and initialising one, a tools/call, and how long a
# call waits for the person's answer to the server's elicitation/create
AGUI_MCP_CONNECT_TIMEOUT = env_float("AGUI_MCP_CONNECT_TIMEOUT", 15, above=0)
AGUI_MCP_CALL_TIMEOUT = env_float("AGUI_MCP_CALL_TIMEOUT", 60, above=0)
AGUI_MCP_ELICIT_TIMEOUT = env_float("AGUI_MCP_ELICIT_TIMEOUT", 600, above=0)
# What the model reads of one MCP tool's answer (its text): a server's answer of megabytes went whole into
# the thread, and every later turn sent it to the model again, past any context window
AGUI_MCP_RESULT_MAX_CHARS = env_int("AGUI_MCP_RESULT_MAX_CHARS", 50_000, minimum=1)
# How many MCP tools one agent's model is offered, all its servers together: OpenAI's API refuses a request
# with more than 128 tools, so one server listing hundreds failed every run of the agents that use it
AGUI_MCP_MAX_TOOLS_PER_AGENT = env_int("AGUI_MCP_MAX_TOOLS_PER_AGENT", 100, minimum=0, maximum=128)
# SSRF guard (agui_project/destinations.py): the internal networks an HTTP MCP server may be in.
# MCP servers often run beside the product, so loopback and the private ranges by default; never
# link-local (the clouds' metadata service) unless listed; set but empty: public addresses only
AGUI_MCP_ALLOWED_NETWORKS = env_networks("AGUI_MCP_ALLOWED_NETWORKS") if os.environ.get(
    "AGUI_MCP_ALLOWED_NETWORKS") is not None else ["127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12",
                                                   "192.168.0.0/16", "fc00::/7"]
# A stdio server is a command this machine runs: by default only an admin signed in with a password
# (the Django admin, or the API with a session) sets one; with an API token it is refused, so that a
# leaked token is not a way to run programs here. 1 lets admins' tokens do it too (automation).
AGUI_MCP_COMMANDS_BY_TOKEN = env_bool("AGUI_MCP_COMMANDS_BY_TOKEN", False)
# The ops agent acts for real, but only inside this directory. By default it lives in the user's
# data directory ($XDG_DATA_HOME, else ~/.local/share), in a parent of its own that holds nothing
# else, and never in var/ or the project: the product's database, settings and code are not one
# ".." away from what the agent touches. AGUI_SANDBOX_BWRAP: auto (isolate commands with bubblewrap
# when `bwrap` is installed and works here), off, or required (refuse commands it cannot isolate).
if _env("AGUI_SANDBOX_DIR") and not os.path.isabs(_env("AGUI_SANDBOX_DIR")):
    # read from each process's working directory: a web and a worker started elsewhere saw two sandboxes
    raise ImproperlyConfigured(f"AGUI_SANDBOX_DIR={_env('AGUI_SANDBOX_DIR')!r} must be an absolute path")
AGUI_SANDBOX_DIR = Path(_env("AGUI_SANDBOX_DIR") or (
    Path(os.environ["XDG_DATA_HOME"]) if os.path.isabs(os.environ.get("XDG_DATA_HOME", ""))
    else Path.home() / ".local" / "share") / "agui-inbox" / "sandbox")
AGUI_SANDBOX_BWRAP = env_choice("AGUI_SANDBOX_BWRAP", "auto", ("auto", "off", "required"))
AGUI_COMMAND_TIMEOUT = env_float("AGUI_COMMAND_TIMEOUT", 5, above=0)
# Extra agent modules (each with AGENT) loaded next to the catalog, e.g. test-only agents.
AGUI_EXTRA_AGENTS = env_list("AGUI_EXTRA_AGENTS")
DEMO_PASSWORD = os.environ["DEMO_PASSWORD"] if _env("DEMO_PASSWORD") else "agui-demo"  # blank: no account would sign in

# a short name (smtp, filebased, console, locmem) or a dotted path; the console backend, also when named as
# Django's: the printed mail with its links whole (console_mail.py). "filebased", as the README's table
# words it, stopped every process (not a module path)
EMAIL_BACKEND = {"": "agui_project.console_mail.EmailBackend",
                 "console": "agui_project.console_mail.EmailBackend",
                 "django.core.mail.backends.console.EmailBackend": "agui_project.console_mail.EmailBackend",
                 **{name: f"django.core.mail.backends.{name}.EmailBackend" for name in ("smtp", "filebased", "locmem")},
                 }.get(_env("DJANGO_EMAIL_BACKEND") or "", _env("DJANGO_EMAIL_BACKEND"))
EMAIL_FILE_PATH = _env("DJANGO_EMAIL_FILE_PATH")  # the filebased backend's folder
# the SMTP backend's server: before, only a settings file could name it, so mail never left a stack
# configured by its environment
EMAIL_HOST = _env("DJANGO_EMAIL_HOST") or "localhost"
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 25, minimum=1, maximum=65535)
EMAIL_HOST_USER = _env("DJANGO_EMAIL_HOST_USER") or ""
EMAIL_HOST_PASSWORD = os.environ.get("DJANGO_EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS")
EMAIL_USE_SSL = env_bool("DJANGO_EMAIL_USE_SSL")
if EMAIL_USE_TLS and EMAIL_USE_SSL:  # Django refuses the pair only when the first mail is sent
    raise ImproperlyConfigured("DJANGO_EMAIL_USE_TLS and DJANGO_EMAIL_USE_SSL are exclusive: set one (TLS: STARTTLS, "
                               "port 587; SSL: implicit TLS, port 465)")
# Django's default waits for an SMTP server for ever, holding the worker that sends the mail
EMAIL_TIMEOUT = env_float("DJANGO_EMAIL_TIMEOUT", 10, above=0)
DEFAULT_FROM_EMAIL = _env("DJANGO_DEFAULT_FROM_EMAIL") or "agui-inbox <noreply@localhost>"  # blank: mail from nobody
EMAIL_SUBJECT_PREFIX = "[agui-inbox] "

# LOG_LEVEL: the console's level (DEBUG, INFO, WARNING, ERROR, CRITICAL). At INFO, the default, the
# routine lines of a healthy stack are left out (agui_project/logs.py: the beat's "Sending due task"
# every 2 s, the worker's "received" / "succeeded" for every task); LOG_LEVEL=DEBUG shows them, and
# Celery's start-up banners (scripts/devstack.py).
LOG_LEVEL = (_env("LOG_LEVEL") or "INFO").upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(f"LOG_LEVEL={LOG_LEVEL!r} is not a level (use DEBUG, INFO, WARNING, ERROR or CRITICAL)")
_routine = {"filters": [] if LOG_LEVEL == "DEBUG" else ["routine"]}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"routine": {"()": "agui_project.logs.RoutineLines"}, "secrets": {"()": "agui_project.logs.SecretPaths"},
                "outage": {"()": "agui_project.logs.OutageLines"}, "unknown_host": {"()": "agui_project.logs.UnknownHosts"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["secrets", "outage"]}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Django's own handlers on "django" (a console one while DEBUG) wrote its records a second time,
        # unfiltered: they go to the root's console only
        "django": {"handlers": [], "level": "INFO"},
        "daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"},
        "django.security.DisallowedHost": {"filters": ["unknown_host"]},  # one line, not an ERROR with a traceback
        "celery.beat": _routine, "celery.worker.strategy": _routine, "celery.app.trace": _routine,
        # each outgoing request's whole URL at INFO: a callback_url's or an MCP server's token, user and
        # password, which the pages and the API keep from reviewers (deliveries keep their own attempt log)
        "httpx": {"level": "WARNING"}, "httpx2": {"level": "WARNING"},
    },
}
