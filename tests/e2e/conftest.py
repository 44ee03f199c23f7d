"""Browser tests: the whole product as real subprocesses, driven by headless Chromium.

Run with `make e2e` (its own pytest process: NOTES.md test trap 7). Every test under tests/e2e
is marked `e2e`, so `make test` (-m "not e2e") deselects them. Playwright is imported only
inside fixtures so collecting this directory under `make test` starts no event loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import devstack  # noqa: E402

HERE = Path(__file__).resolve().parent
DEMO_PASSWORD = "agui-demo"
CHROMIUM = "/usr/bin/chromium"
E2E_REDIS_DB = int(os.environ.get("E2E_REDIS_DB", "15"))


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: browser tests (run by make e2e, in their own process)")


@pytest.hookimpl(tryfirst=True)  # before -m deselection runs
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.e2e)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)  # lets `page` screenshot failed tests


@dataclass
class LiveStack:
    url: str
    env: dict = field(repr=False)
    log_dir: Path = field(repr=False)
    children: list = field(default_factory=list, repr=False)

    def tails(self, lines: int = 60) -> str:
        out = []
        for log in sorted(self.log_dir.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"----- {log.name} (last {len(text)} lines) -----\n" + "\n".join(text))
        return "\n".join(out)


def _redis_url_for_e2e(url: str) -> str:
    """Same Redis server, a dedicated database: `make test` may have used db 0 on the same
    server, and its leftover queues and thread streams must not leak into a fresh database."""
    base, q, query = url.partition("?")
    base = base.rstrip("/")
    head, _, tail = base.rpartition("/")
    if tail.isdigit() and head.count("/") >= 2:
        base = head
    return f"{base}/{E2E_REDIS_DB}{q}{query}"


def _flushdb(url: str) -> None:
    import redis  # a project dependency; only the fixture needs it

    redis.Redis.from_url(url).flushdb()


def _report(request, text: str) -> None:
    """Print past pytest's capture (session teardown output is otherwise swallowed)."""
    capman = request.config.pluginmanager.get_plugin("capturemanager")
    tr = request.config.pluginmanager.get_plugin("terminalreporter")
    with capman.global_and_fixture_disabled():
        if tr:
            tr.write_line(text)
        else:
            print(text, file=sys.stderr, flush=True)


@pytest.fixture(scope="session")
def live_stack(request):
    log_dir = ROOT / "var" / "e2e-logs"
    log_dir.mkdir(parents=True, exist_ok=True)  # each log file is truncated when its process starts
    tmp = Path(tempfile.mkdtemp(prefix="agui-e2e-"))
    redis = None
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY",)}
    if env.get("REDIS_URL"):
        env["REDIS_URL"] = _redis_url_for_e2e(env["REDIS_URL"])
        _flushdb(env["REDIS_URL"])
    else:  # `make e2e` provides one; a bare `pytest tests/e2e` still works
        redis = devstack.start_embedded_redis()
        env["REDIS_URL"] = redis.url
    port = devstack.free_port()
    env.update({
        "DATABASE_URL": f"sqlite:///{tmp / 'db.sqlite3'}",
        "DJANGO_SETTINGS_MODULE": "agui_project.settings",  # not a test settings module
        "DJANGO_DEBUG": "1",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEMO_PASSWORD": DEMO_PASSWORD,  # what seed_demo sets and login() types
        "PYTHONUNBUFFERED": "1",
        # a reviewer's Undo window, the product's own: the browser must act inside it, on a loaded CI
        "AGUI_UNDO_SECONDS": "5",
        "AGUI_NOTES_FILE": str(tmp / "mcp-notes.json"),  # seed_demo's MCP notes server keeps its notes here
        # a test switches a requester off with an update (no signal) to show the inbox's "reject only": the
        # beat's sweep would withdraw the request under it (agents/account_off.py)
        "AGUI_SWITCHED_OFF_SWEEP_SECONDS": "0",
    })
    stack = LiveStack(url=f"http://127.0.0.1:{port}", env=env, log_dir=log_dir)
    failures_before = request.session.testsfailed
    try:
        for args in (["migrate", "--noinput"], ["seed_demo"]):
            with open(log_dir / f"manage-{args[0]}.log", "wb") as log:
                rc = subprocess.call([sys.executable, "manage.py", *args], cwd=ROOT, env=env,
                                     stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
            if rc:
                pytest.fail(f"manage.py {args[0]} failed ({rc})\n{stack.tails()}", pytrace=False)
        for name, cmd in devstack.stack_commands("127.0.0.1", str(port), str(tmp / "celerybeat"),
                                                 pool="threads", concurrency="4"):
            stack.children.append(devstack.spawn(name, cmd, env=env, log_path=log_dir / f"{name}.log"))
        _wait_healthy(stack)
        yield stack
    finally:
        devstack.stop_children(stack.children, timeout=10)
        if redis:
            redis.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        if request.session.testsfailed > failures_before:
            _report(request, f"\n===== live stack logs ({log_dir}) =====\n{stack.tails()}")


def _wait_healthy(stack: LiveStack, timeout: float = 60.0) -> None:
    try:
        devstack.wait_healthy(stack.url, stack.children, timeout=timeout)
    except devstack.NotHealthy as exc:
        pytest.fail(f"{exc}\n{stack.tails()}", pytrace=False)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: apt-get install -y chromium", pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run"])
        _watch_csp(b)
        yield b
        b.close()


CSP_VIOLATIONS: list[str] = []  # what Chromium refused under the Content-Security-Policy, in any context


def _watch_csp(browser) -> None:
    """Every context (the fixtures' and the ones tests make themselves) reports CSP refusals."""
    new_context = browser.new_context

    def watched(*args, **kwargs):
        ctx = new_context(*args, **kwargs)
        ctx.on("console", lambda msg: CSP_VIOLATIONS.append(f"{msg.location.get('url', '')}: {msg.text}")
               if "Content Security Policy" in msg.text else None)
        return ctx

    browser.new_context = watched


@pytest.fixture
def csp_violations():
    """The refusals seen during this test; a test that provokes one on purpose clears the list."""
    return CSP_VIOLATIONS


@pytest.fixture(autouse=True)
def _no_csp_violations():
    CSP_VIOLATIONS.clear()
    yield
    seen, CSP_VIOLATIONS[:] = list(CSP_VIOLATIONS), []
    if seen:
        pytest.fail("the browser refused something under the Content-Security-Policy (inline script or style, "
                    "another origin):\n" + "\n".join(seen[:10]), pytrace=False)


@pytest.fixture
def artifacts_dir() -> Path:
    path = ROOT / "var" / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def context(browser, live_stack):
    """A fresh browser context per test (own cookies); relative URLs go to the live stack."""
    ctx = browser.new_context(base_url=live_stack.url, viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture
def page(context, request, artifacts_dir):
    pg = context.new_page()
    yield pg
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:  # a picture of the failure, next to the logs
        pg.screenshot(path=str(artifacts_dir / f"FAILED-{request.node.name}.png"), full_page=True)
    pg.close()


@pytest.fixture
def login(live_stack):
    """login(page, "alice") signs in through the real login form."""

    def do_login(page, username: str, password: str = DEMO_PASSWORD):
        page.goto(live_stack.url + "/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("main button[type=submit]")  # the sign-in form, not the header's language form
        page.wait_for_url(lambda url: "/accounts/login/" not in url, timeout=10_000)
        return page

    return do_login


@pytest.fixture
def people(browser, live_stack, login, artifacts_dir, request):
    """people("alice") -> a signed-in chat Session (chat_helpers.Session: its own browser context, page
    errors fail the test); `viewport` for a narrow or short screen, and any other option of the browser
    context (`locale="fr-FR"`, a touch screen: `**TOUCH`). The inbox's tests have their own (inbox_e2e.people)."""
    from chat_helpers import Session, close_sessions

    made = []

    def make(who, viewport=None, **context_args):
        s = Session(browser, live_stack, login, who, artifacts_dir,
                    prefix=request.node.name.replace("test_", ""), viewport=viewport, **context_args)
        made.append(s)
        return s

    yield make
    close_sessions(request, made)
