"""Filters and search, an XSS payload shown as text, an end user turned away, and the stats and
audit pages (with screenshots)."""

import re

import inbox_e2e
from inbox_e2e import make_requests, run, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def row_texts(page):
    return page.locator("#approval-rows tr[data-approval-id] a.row-link").all_inner_texts()


def test_filter_and_search(people, live_stack):
    t = tag()
    make_requests(live_stack, [
        {"requester": "alice", "description": f"Transfer rent {t}", "risk": "high"},
        {"requester": "alice", "tool": "send_email", "agent": "ops", "group": "finance", "risk": "medium",
         "description": f"Email the landlord {t}"},
        {"requester": "bob", "tool": "submit_refund", "agent": "support", "group": "finance", "risk": "critical",
         "description": f"Refund order {t}",
         "arguments": {"order_id": "12346", "amount": 59.0, "refund_description": f"needle-{t}"}},
    ])
    finn = people("finn")
    page = finn.page
    page.goto("/inbox/")
    page.keyboard.press("/")
    expect(page.locator("#search")).to_be_focused()
    page.keyboard.type(t)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/inbox/\?q={t}$"))  # only what differs from the defaults
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(3)

    # a select applies at once (no button), and keeps the search
    page.get_by_label("Tool").select_option("send_email")
    page.wait_for_url(re.compile(r"tool=send_email"))
    assert row_texts(page) == [f"Email the landlord {t}"]
    page.get_by_label("Tool").select_option("")
    page.wait_for_url(lambda url: "tool=" not in url)
    page.get_by_label("Risk").select_option(label="high or critical")
    page.wait_for_url(re.compile(r"risk=high%2Ccritical"))
    assert sorted(row_texts(page)) == sorted([f"Transfer rent {t}", f"Refund order {t}"])
    page.get_by_label("Agent", exact=True).select_option("support")
    page.wait_for_url(re.compile(r"agent=support"))
    assert row_texts(page) == [f"Refund order {t}"]

    # search finds words inside the arguments too
    page.goto(f"/inbox/?q=needle-{t}")
    assert row_texts(page) == [f"Refund order {t}"]
    # a thread link filters to that thread
    page.locator("#approval-rows a.thread-link").first.click()
    page.wait_for_url(re.compile(r"thread="))
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(1)
    expect(page.get_by_label("Remove the thread filter")).to_be_visible()
    finn.shoot("filtered")


def test_xss_in_arguments_is_shown_as_text(people, live_stack):
    payload = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'
    t = tag()
    [rid] = make_requests(live_stack, [{
        "requester": "alice", "description": f"{payload} {t}", "reason": payload,
        "arguments": {"from_account": "1234567890", "to_account": payload, "amount": 1.0, "currency": "USD"},
        "excerpt": [{"role": "user", "content": payload}]}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    link = page.locator(f'#approval-rows tr[data-approval-id="{rid}"] a.row-link')
    expect(link).to_have_text(f"{payload} {t}")
    page.goto(f"/inbox/{rid}/")
    expect(page.locator(".detail-title")).to_have_text(f"{payload} {t}")
    expect(page.locator(".excerpt")).to_contain_text(payload)
    expect(page.locator("#arg__to_account")).to_have_value(payload)
    # an account is digits (checked as typed): the payload stays on the change's "before" side, as text
    page.locator("#arg__to_account").fill("0987654321")
    expect(page.locator("#diff-preview")).to_contain_text(f"To account: {payload} → 0987654321")
    page.locator("details.args-raw summary").click()
    expect(page.locator("#requested-arguments")).to_contain_text(payload.replace('"', '\\"'))
    assert page.evaluate("window.__xss") is None
    assert page.locator("img[src=x]").count() == 0
    finn.shoot("xss-as-text")


def test_an_end_user_is_turned_away(people, live_stack):
    [rid] = make_requests(live_stack, [{"requester": "bob", "description": f"Not for alice {tag()}"}])
    alice = people("alice")
    for url in ("/inbox/", f"/inbox/{rid}/", "/inbox/stats/", "/policies/", "/audit/"):
        response = alice.page.goto(url)
        assert response.status == 403, url
    alice.page.goto("/chat/")
    expect(alice.page.locator("#nav-inbox-count")).to_have_count(0)
    assert alice.page.get_by_role("link", name="Inbox", exact=True).count() == 0


def test_stats_and_audit_pages(people, live_stack, artifacts_dir):
    t = tag()
    # asked and decided in the same second: the stats flag such decisions
    ids = run(live_stack, f"""
ids = [make_request('alice', description=f'Stats {{i}} {t}').pk for i in range(4)]
services.decide(ids[0], user('finn'), 'approve')
services.decide(ids[1], user('finn'), 'reject', feedback='Wrong account')
services.decide(ids[2], user('finn'), 'reject', feedback='wrong account.')
result = ids
""")
    finn = people("finn")
    page = finn.page
    page.goto("/inbox/stats/")
    expect(page.locator("#stats-chart")).to_be_visible()
    expect(page.locator("#per-tool")).to_contain_text("transfer_money")
    expect(page.locator("#reasons-table")).to_contain_text(re.compile("wrong account", re.I))
    expect(page.locator("#fast-table")).to_contain_text("finn")  # decided in the same second as asked
    page.screenshot(path=str(artifacts_dir / "inbox-stats.png"), full_page=True)

    page.goto(f"/audit/?request={ids[1]}")
    rows = page.locator("#audit-table tbody tr[data-event-id]")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("Decided")
    with page.expect_download() as download:
        page.get_by_role("link", name="Export CSV").click()
    text = open(download.value.path(), encoding="utf-8").read()
    assert text.splitlines()[0] == "id,created_at,action,actor,request,tool_name,object_ref,before,after,summary"
    assert len(text.strip().splitlines()) == 3 and "Wrong account" in text
    page.goto("/audit/")
    page.screenshot(path=str(artifacts_dir / "inbox-audit.png"), full_page=False)


def test_phone_width(people, live_stack, artifacts_dir):
    """Every page fits a phone screen: nothing but a table's own box scrolls sideways."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "tool": "generate_task_steps", "agent": "planner",
                                        "description": f"Phone {t}"}])
    phone = people("admin", viewport={"width": 390, "height": 844})
    page = phone.page
    for name, url in (("detail", f"/inbox/{rid}/"), ("stats", "/inbox/stats/"),
                      ("console", "/policies/transfer_money/"), ("audit", "/audit/")):
        page.goto(url)
        page.screenshot(path=str(artifacts_dir / f"inbox-{name}-phone.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1"), url
        # every visible form control has a label
        unlabeled = page.evaluate("""() => Array.from(document.querySelectorAll('input, select, textarea'))
            .filter(e => e.type !== 'hidden' && e.offsetParent !== null)
            .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
            .map(e => e.id || e.name)""")
        assert not unlabeled, (url, unlabeled)
