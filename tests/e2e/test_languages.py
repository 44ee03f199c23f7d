"""The product in each language, in a real browser: the chat, the inbox, a request page, the
reviewer's stats, audit and mail-settings pages and the policy console carry no English beyond names and data, keep their layout at desktop and phone
width, and a whole approve flow works in Indonesian (alice asks in Indonesian, finn decides in
Indonesian, the offline model answers alice in Indonesian).

The language is chosen with the header's picker (which also saves it in the person's profile);
screenshots of every page land in var/artifacts/.
"""

import re

import inbox_e2e
import pytest
from inbox_e2e import T, make_requests, run, tag, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


@pytest.fixture(autouse=True)
def _back_to_english(live_stack):
    """The picker saves each person's choice in the live stack's database: the browser tests after
    these ones meet the demo users in their default language again."""
    yield
    run(live_stack, "from people.models import Profile\nProfile.objects.all().delete()")

LANGUAGES = {"id": "Bahasa Indonesia", "fr": "Français", "pt-br": "Português (Brasil)", "zh-hans": "简体中文"}
# Words of our own English UI that no translation shares (so "Status", "Mode", "Audit", "Admin",
# "Message", "Agent", "Feedback", "Conversation", "arguments", "Source", "decide" are left out: Indonesian, French or
# Portuguese use them too).
ENGLISH = set("""
    the and you your with from waiting approve approved reject rejected request requests inbox pending deadline
    search filters risk chat chats send policies rules save simulate keyboard shortcuts
    who decides decided this that nothing select open close edit cancel undo new tools tool review needs
    approval signed log out language reason show any age all apply reset matching keys move next previous
    first shared try these one of to is are by when then what where which waiting yet none never always ask
    group groups requester whole edits changes change history timeout default draft field
""".split())
# Names and data the pages show as they are: people, groups, tools, thread ids, what agents asked,
# recorded values in the audit trail.
DATA = ("code, pre, kbd, script, style, .tool-name, .username, .brand, #language-select, .row-link, .detail-title,"
        " .preview-title, .cell-sub, .col-requester, .col-approver, .thread-title, .excerpt-text, .msg-body,"
        " .approval-message, .decider strong, .chip, .quorum-list strong, .decision-list strong, .audit-trail strong,"
        " .policy-json, textarea, [hidden], #thread-state, .prewrap, .facts dd, .change-lines ins, .change-lines del,"
        # what other requests were about (their descriptions), in the audit trail and the chat list
        " .audit-object, .thread-standing, .json-cell, .change-table del, .change-table ins,"
        # controls whose label quotes a request's description or a chat's title ("Select send_email: ...")
        " .row-check, .thread-actions button, #select-all,"
        # a tool's arguments as the tool declares them (their names and schema descriptions: what the model reads)
        " #args-editor label, #args-editor legend, #args-editor .field-help, .tool-description")
VISIBLE_TEXT = """(skip) => {
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode());) {
    const el = n.parentElement;
    if (!el || el.closest(skip) || !el.getClientRects().length) continue;  // data, or not shown
    out.push(n.textContent);
  }
  for (const el of document.querySelectorAll("input[placeholder], textarea[placeholder], button, [aria-label]")) {
    if (el.closest(skip) || !el.getClientRects().length) continue;
    out.push(el.getAttribute("placeholder") || "", el.getAttribute("aria-label") || "");
  }
  return out.join(" ");
}"""


def english_left(page, names=()):
    """The English words left, each with the text around it."""
    text = page.evaluate(VISIBLE_TEXT, DATA)
    allowed = {n.lower() for n in names}
    return sorted({f"{m[0]!r} in {text[max(0, m.start() - 40):m.end() + 40]!r}"
                   for m in re.finditer(r"[A-Za-z]+", text) if m[0].lower() in ENGLISH - allowed})


def no_overflow(page):
    """The page does not scroll sideways (a long translation did not push the layout out)."""
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1")


def choose(page, code):
    """The header's picker: a language chosen and applied; the page comes back in it."""
    page.locator("#language-select").select_option(code)
    with page.expect_navigation():
        page.locator("#language-apply").click()
    expect(page.locator("html")).to_have_attribute("lang", code, timeout=T)


def check(session, code, step, names=()):
    page = session.page
    expect(page.locator("html")).to_have_attribute("lang", code)
    left = english_left(page, names)
    assert not left, f"{step} in {code}: English words left on the page: {left}"
    assert no_overflow(page), f"{step} in {code}: the page scrolls sideways at {page.viewport_size}"
    session.shoot(f"{step}-{code}")


@pytest.mark.parametrize("code", list(LANGUAGES))
def test_pages_in_each_language(people, live_stack, code):
    t = tag()
    rid = make_requests(live_stack, [{"requester": "alice", "group": "finance", "description": f"{t} transfer",
                                      "excerpt": [{"role": "user", "content": f"{t} please"}]}])[0]
    finn = people("finn")
    finn.page.goto("/inbox/")
    choose(finn.page, code)
    expect(finn.page.locator(f'tr[data-approval-id="{rid}"]')).to_be_visible(timeout=T)
    check(finn, code, "inbox", names=["finn", "finance", "alice", "banking"])
    finn.page.goto(f"/inbox/{rid}/")
    expect(finn.page.locator("#decide")).to_be_visible()
    check(finn, code, "request", names=["finn", "finance", "alice", "banking"])
    for path, step in (("/inbox/stats/", "stats"), ("/audit/", "audit"), ("/inbox/settings/", "mail-settings")):
        finn.page.goto(path)
        check(finn, code, step, names=["finn", "finance", "alice", "banking", "CSV"])
    finn.page.goto("/chat/")
    finn.page.locator("#agent-select").select_option("banking")
    with finn.page.expect_navigation(url=re.compile(r"/chat/[^/]+/$")):
        finn.page.locator("#new-chat").click()
    expect(finn.page.locator("#starters")).to_be_visible(timeout=T)
    expect(finn.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    check(finn, code, "chat", names=["finn", "finance", "USD", "sub"])

    admin = people("admin")
    admin.page.goto("/policies/")
    choose(admin.page, code)
    check(admin, code, "policies", names=["admin", "finance", "oncall", "support", "MCP"])
    admin.page.goto("/policies/transfer_money/")
    check(admin, code, "policy-edit", names=["admin", "finance", "oncall", "support", "JSON"])

    # the longest languages at phone width: nothing pushed out sideways
    phone = people("finn", viewport={"width": 390, "height": 844})
    for path in ("/inbox/", f"/inbox/{rid}/", "/chat/"):
        phone.page.goto(path)
        expect(phone.page.locator("html")).to_have_attribute("lang", code)  # finn's saved choice
        assert no_overflow(phone.page), f"{path} in {code} scrolls sideways on a phone"
    phone.shoot(f"phone-chat-{code}")
    assert wait_status(live_stack, rid, "pending", timeout=0) == "pending"


def test_the_approve_flow_in_indonesian(people, live_stack):
    finn = people("finn")
    finn.page.goto("/inbox/")
    choose(finn.page, "id")
    alice = people("alice")
    alice.page.goto("/chat/")
    choose(alice.page, "id")
    alice.page.get_by_label("Agen", exact=True).select_option("banking")
    with alice.page.expect_navigation(url=re.compile(r"/chat/[^/]+/$")):
        alice.page.get_by_role("button", name="Obrolan baru").click()
    expect(alice.page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    # the starter, in Indonesian, sent as it is
    alice.page.locator(".starter", has_text="Transfer $500 dari rekening 1234567890").click()
    expect(alice.page.locator(".msg-assistant .msg-body").first).to_contain_text(
        "Saya akan mentransfer 500,00 USD dari rekening 1234567890 ke rekening 0987654321", timeout=T)
    card = alice.page.locator(".tool-card", has_text="transfer_money")
    expect(card.locator(".approval-card")).to_contain_text("Menunggu peninjauan oleh finance", timeout=T)
    expect(alice.page.locator("#run-status")).to_contain_text("Menunggu finance memutuskan", timeout=T)
    check(alice, "id", "flow-asked", names=["alice", "finance", "USD"])

    row = finn.page.locator("#approval-rows tr[data-approval-id]", has_text="1234567890").first
    expect(row).to_be_visible(timeout=T)
    rid = row.get_attribute("data-approval-id")
    expect(row.locator(".risk")).to_have_text("tinggi")
    row.locator("a.row-link").click()
    finn.page.wait_for_url(re.compile(rf"/inbox/{re.escape(rid)}/$"), timeout=T)
    finn.page.locator("#arg__amount").fill("450")
    expect(finn.page.locator("#diff-preview")).to_contain_text("500 → 450")
    expect(finn.page.locator("#approve")).to_have_text("Setujui dengan perubahan (1 perubahan)")
    check(finn, "id", "flow-review", names=["finn", "finance", "alice", "banking"])
    finn.page.locator("#approve").click()
    dialog = finn.page.locator("#decide-dialog")
    expect(dialog.locator("#decide-dialog-title")).to_have_text("Setujui dengan perubahan ini?")
    dialog.locator("#decide-dialog-confirm").click()
    expect(finn.page.locator("#undo-toast")).to_contain_text("Disetujui dengan perubahan", timeout=T)
    assert wait_status(live_stack, rid, "modified") == "modified"

    approval = card.locator(".approval-card")
    expect(approval.locator(".status-badge")).to_have_text("Disetujui dengan perubahan", timeout=T)
    expect(approval).to_contain_text("finn mengubah ini sebelum menyetujui")
    final = alice.page.locator(".msg-assistant .msg-body", has_text="Berhasil mentransfer 450,00 USD")
    expect(final.last).to_be_visible(timeout=T)
    expect(final.last).to_contain_text("Selesai. Peninjau mengubah amount dari 500.00 USD menjadi 450.00 USD sebelum menyetujui.")
    expect(alice.page.locator("#run-status")).to_be_hidden(timeout=T)
    check(alice, "id", "flow-done", names=["alice", "finn", "finance", "USD", "amount"])
