"""The keys act only on a request the reviewer chose. finn read the second of three requests
(j, j); rita approved it elsewhere; the live refresh selected another request finn never opened,
and his `a` (meant for the one he read) approved that one at once (medium risk: no question)."""

import inbox_e2e
from inbox_e2e import T, make_requests, run, statuses, tag
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def test_a_request_decided_elsewhere_leaves_no_other_one_under_the_keys(people, live_stack):
    t = tag()
    # the newest first, as the list shows them: ids[2] "Keys 1", ids[1] "Keys 2", ids[0] "Keys 3"
    ids = make_requests(live_stack, [{"requester": "alice", "group": "reviewers", "description": f"Keys {i} {t}",
                                      "risk": "medium", "timeout": 600} for i in (3, 2, 1)])
    finn = people("finn", viewport={"width": 1366, "height": 900})
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    pane = page.locator("#reading-pane")
    page.keyboard.press("j")
    expect(pane.locator(".preview-title")).to_have_text(f"Keys 1 {t}", timeout=T)
    page.keyboard.press("j")
    expect(pane.locator(".preview-title")).to_have_text(f"Keys 2 {t}", timeout=T)

    run(live_stack, f"services.decide({ids[1]!r}, user('rita'), 'approve')")
    rows = page.locator("#approval-rows")
    expect(rows.locator(f'tr[data-approval-id="{ids[1]}"]')).to_have_count(0, timeout=T)
    # the pane still shows what finn was reading, and what became of it
    expect(pane.locator(".preview-title")).to_have_text(f"Keys 2 {t}", timeout=T)
    expect(pane.locator(".preview-actions")).to_contain_text("Approved by rita", timeout=T)
    expect(rows.locator("tr.selected")).to_have_count(0)

    page.keyboard.press("a")  # meant for "Keys 2": nothing else is approved in its place
    expect(page.locator("#decide-result")).to_contain_text("The request you were reading has left the list", timeout=T)
    expect(page.locator("#decide-dialog")).to_be_hidden()
    expect(page.locator("#undo-toast")).to_be_hidden()
    page.keyboard.press("r")
    expect(page.locator("#decide-dialog")).to_be_hidden()
    finn.shoot("keys-after-elsewhere")
    held = run(live_stack, f"from approvals.models import HeldDecision\n"
                           f"result = HeldDecision.objects.filter(request_id__in={[ids[0], ids[2]]!r}).count()")
    assert held == 0
    assert {k: v[0] for k, v in statuses(live_stack, [ids[0], ids[2]]).items()} == {ids[0]: "pending", ids[2]: "pending"}

    # j goes on from where the request stood: the one now in its place, which the pane then shows
    page.keyboard.press("j")
    expect(rows.locator("tr.selected")).to_have_attribute("data-approval-id", ids[0])
    expect(pane.locator(".preview-title")).to_have_text(f"Keys 3 {t}", timeout=T)


def test_the_focus_stays_on_the_list_when_its_last_request_is_decided_elsewhere(people, live_stack):
    """finn's focus was on the one request of his list; rita decided it: the focus went to the page's
    body (a screen reader started the page over), where it now goes to the list's heading."""
    t = tag()
    (only,) = make_requests(live_stack, [{"requester": "alice", "group": "reviewers", "description": f"Last {t}",
                                          "risk": "medium", "timeout": 600}])
    finn = people("finn", viewport={"width": 1366, "height": 900})
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.keyboard.press("j")
    expect(page.locator(f'#approval-rows tr[data-approval-id="{only}"] a.row-link')).to_be_focused(timeout=T)

    run(live_stack, f"services.decide({only!r}, user('rita'), 'approve')")
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(0, timeout=T)
    expect(page.locator("#inbox-title")).to_be_focused(timeout=T)
    assert page.evaluate("document.activeElement !== document.body")
