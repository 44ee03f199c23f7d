"""The Content-Security-Policy in a real browser: the pages and the admin load without a refusal
(conftest.py fails any test that sees one), and a script injected into a page does not run."""

import pytest

PAGES = [("alice", "/chat/"), ("finn", "/inbox/"), ("finn", "/inbox/stats/"), ("finn", "/audit/"),
         ("admin", "/policies/"), ("admin", "/policies/transfer_money/"), ("admin", "/admin/"),
         ("admin", "/admin/approvals/toolpolicy/"), ("admin", "/admin/auth/user/add/")]


@pytest.mark.parametrize("user,path", PAGES)
def test_pages_load_under_the_policy(page, login, user, path):
    login(page, user)
    resp = page.goto(path)
    assert resp.status == 200
    assert "script-src 'self'" in resp.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")


def test_an_injected_inline_script_does_not_run(page, login, csp_violations):
    login(page, "alice")
    page.goto("/chat/")
    # the handler is refused when the broken image's error event fires: after that it had its chance
    with page.expect_console_message(lambda m: "inline event handler" in m.text, timeout=10_000):
        page.evaluate("""() => {
            const s = document.createElement("script");
            s.textContent = "window.__injected = true";
            document.head.appendChild(s);
            const d = document.createElement("div");
            d.innerHTML = '<img src="/static/missing.png" onerror="window.__injected = true">';
            document.body.appendChild(d);
        }""")
    assert page.evaluate("() => window.__injected") is None
    assert any("inline script" in v or "inline event handler" in v for v in csp_violations), csp_violations
    csp_violations.clear()  # provoked on purpose
