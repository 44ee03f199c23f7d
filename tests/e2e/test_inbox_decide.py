"""Deciding in the browser: edit nested arguments (diff shown before submitting, the server's error
next to its field) then approve; approve from the keyboard; reject several with one reason."""

import re

import inbox_e2e
from inbox_e2e import T, make_requests, run, statuses, tag, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


def test_edit_nested_arguments_see_the_diff_then_approve(people, live_stack, artifacts_dir):
    t = tag()
    [rid] = make_requests(live_stack, [{
        "requester": "alice", "tool": "generate_task_steps", "agent": "planner", "group": "finance",
        "description": f"Plan the move ({t})", "risk": "medium", "required": 1}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator(".detail-title")).to_have_text(f"Plan the move ({t})")
    expect(page.locator(".excerpt")).to_contain_text("Please run generate_task_steps")
    # the editor is built from the schema: an array of objects, an enum as a select
    first = page.locator("#arg__steps__0__description")
    expect(first).to_have_value("Pack the boxes")
    expect(page.locator("#arg__steps__1__status")).to_have_js_property("tagName", "SELECT")
    expect(page.locator("#approve")).to_have_text("Approve")
    expect(page.locator("#diff-preview")).to_contain_text("No changes")

    first.fill("Pack the boxes carefully")
    page.locator("#arg__steps__1__status").select_option(label="completed")
    page.get_by_role("button", name="Add step").click()
    third = page.locator("#arg__steps__2__description")
    expect(third).to_be_focused()
    third.fill("Label the boxes")
    diff = page.locator("#diff-preview")
    expect(diff).to_contain_text("Steps › #1 › Description: Pack the boxes → Pack the boxes carefully")
    expect(diff).to_contain_text("Steps › #2 › Status: pending → completed")
    expect(diff).to_contain_text("Steps › #3 › Description: (none) → Label the boxes")
    expect(page.locator("#approve")).to_have_text(re.compile(r"^Approve with edits \(\d+ changes\)$"))
    finn.shoot("detail-edited")
    page.screenshot(path=str(artifacts_dir / "inbox-detail.png"), full_page=True)

    # an empty description passes the browser but not the tool's schema: the error comes back by the field
    first.fill("")
    page.locator("#approve").click()
    expect(page.locator("#decide-dialog-title")).to_have_text("Approve with these edits?")  # edits: asked first
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_load_state("domcontentloaded")
    error = page.locator('[data-error-for="steps.0.description"]')
    expect(error).to_be_visible(timeout=T)
    expect(error).to_contain_text("at least 1 character")
    expect(page.locator("#arg__steps__0__description")).to_have_attribute("aria-invalid", "true")
    # the rest of the draft survived the round trip
    expect(page.locator("#arg__steps__2__description")).to_have_value("Label the boxes")
    expect(page.locator("#form-error")).to_be_visible()
    finn.shoot("server-error")

    page.locator("#arg__steps__0__description").fill("Pack the boxes carefully")
    expect(page.locator("#diff-preview")).to_contain_text("Steps › #3 › Description: (none) → Label the boxes")
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)  # on to the next request, with an Undo
    expect(page.locator("#undo-toast")).to_contain_text(
        "Approved with edits: Steps › #1 › Description: Pack the boxes → Pack the boxes carefully; "
        "Steps › #2 › Status: pending → completed; Steps › #3 › Description: (none) → Label the boxes")
    assert wait_status(live_stack, rid, "modified") == "modified"  # sent when the undo window closed
    status, _feedback, final = statuses(live_stack, [rid])[rid]
    assert [s["description"] for s in final["steps"]] == ["Pack the boxes carefully", "Call the movers",
                                                          "Label the boxes"]
    assert final["steps"][1]["status"] == "completed" and final["steps"][2]["status"] == "pending"

    # the decided request shows what changed
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("#final-diff")).to_contain_text("Steps › #3 › Description: (none) → Label the boxes")
    expect(page.locator("#quorum-panel")).to_contain_text(re.compile("approved with edits by finn", re.I))


def test_the_raw_json_fallback(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"JSON edit ({t})"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.get_by_role("button", name="JSON").click()
    raw = page.locator("#arguments-json")
    expect(raw).to_be_focused()
    raw.fill('{"from_account": "1234567890", "to_account": "0987654321", "amount": 75, "currency": "EUR"')
    expect(page.locator("#approve")).to_be_disabled()
    raw.fill('{"from_account": "1234567890", "to_account": "0987654321", "amount": 75, "currency": "EUR"}')
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 75")
    expect(page.locator("#diff-preview")).to_contain_text("Currency: USD → EUR")
    page.get_by_role("button", name="Form").click()
    expect(page.locator("#arg__amount")).to_have_value("75")
    expect(page.locator("#arg__currency")).to_have_js_property("tagName", "SELECT")
    page.get_by_role("button", name="Reset edits").click()
    expect(page.locator("#arg__amount")).to_have_value("500")
    expect(page.locator("#diff-preview")).to_contain_text("No changes")


def test_a_name_typed_twice_comes_back_as_typed_with_the_servers_reason(people, live_stack):
    """The browser reads JSON's last value of a name written twice; the server refuses it. The page came
    back with the text rewritten from the browser's reading ("amount": 5 alone) and the reason listed
    under "__root__": approving again sent 5, the value the reviewer may have read past."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Twice ({t})"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.get_by_role("button", name="JSON").click()
    typed = '{"from_account": "1234567890", "to_account": "0987654321", "amount": 500, "currency": "USD", "amount": 5}'
    page.locator("#arguments-json").fill(typed)
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_load_state("domcontentloaded")
    expect(page.locator("#form-error")).to_contain_text('The arguments name "amount" twice', timeout=T)
    expect(page.locator("#form-error")).not_to_contain_text("__root__")
    raw = page.locator("#arguments-json")
    expect(raw).to_be_visible()
    expect(raw).to_have_value(typed)
    assert statuses(live_stack, [rid])[rid][0] == "pending"


def test_keyboard_approve_from_the_list(people, live_stack, artifacts_dir):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Keyboard {t}", "risk": "high"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.keyboard.press("?")
    expect(page.locator("#keys-dialog")).to_be_visible()
    expect(page.locator("#keys-dialog")).to_contain_text("approve it, or the selected ones")
    page.keyboard.press("Escape")
    expect(page.locator("#keys-dialog")).to_be_hidden()
    page.keyboard.press("j")
    page.keyboard.press("a")
    dialog = page.locator("#decide-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(f"Keyboard {t}")
    expect(dialog.locator("#decide-dialog-warning")).to_contain_text("high risk")
    expect(page.locator("#decide-dialog-confirm")).to_be_focused()
    page.screenshot(path=str(artifacts_dir / "inbox-keyboard-confirm.png"))
    page.keyboard.press("Enter")
    expect(dialog).to_be_hidden(timeout=T)
    expect(page.locator(f'#approval-rows tr[data-approval-id="{rid}"]')).to_have_count(0, timeout=T)
    expect(page.locator("#undo-toast")).to_contain_text(f"Approved: Keyboard {t}")
    assert wait_status(live_stack, rid, "approved") == "approved"
    # / jumps to the search box
    page.keyboard.press("/")
    expect(page.locator("#search")).to_be_focused()


def test_keyboard_on_the_detail_page(people, live_stack):
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Detail keys {t}"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("e")
    expect(page.locator("#arg__from_account")).to_be_focused()
    page.locator("#arg__amount").fill("450")
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("a")
    expect(page.locator("#decide-dialog")).to_contain_text("Amount: 500 → 450")
    page.keyboard.press("Escape")
    page.keyboard.press("r")
    expect(page.locator("#feedback")).to_be_focused()
    page.keyboard.type("Too much this month")
    page.keyboard.press("Control+Enter")
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert wait_status(live_stack, rid, "rejected") == "rejected"
    status, feedback, _ = statuses(live_stack, [rid])[rid]
    assert (status, feedback) == ("rejected", "Too much this month")


def test_bulk_reject_with_one_reason(people, live_stack):
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Bulk {i} {t}"} for i in range(3)])
    [other] = make_requests(live_stack, [{"requester": "bob", "description": f"Keep me {t}"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(4)
    for rid in ids[:2]:
        page.locator(f"#sel-{rid}").check()
    page.locator(f'#approval-rows tr[data-approval-id="{ids[2]}"] a.row-link').focus()
    page.keyboard.press("x")  # the keyboard ticks the third
    expect(page.locator("#bulk-count")).to_have_text("3 selected")
    page.locator("#bulk-reject").click()
    dialog = page.locator("#decide-dialog")
    expect(dialog).to_contain_text("Reject 3 requests?")
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#decide-dialog-error")).to_have_text("Give a reason: the agent sees it.")
    page.locator("#decide-dialog-reason").fill("Duplicate of yesterday's batch")
    finn.shoot("bulk-reject")
    page.locator("#decide-dialog-confirm").click()
    expect(dialog).to_be_hidden(timeout=T)
    expect(page.locator("#approval-rows tr[data-approval-id]")).to_have_count(1, timeout=T)
    expect(page.locator("#undo-toast")).to_contain_text("Rejected: 3 requests")
    expect(page.locator("#bulk-count")).to_have_text("0 selected")
    for rid in ids:
        assert wait_status(live_stack, rid, "rejected") == "rejected"
    result = statuses(live_stack, ids + [other])
    assert all(result[r][:2] == ["rejected", "Duplicate of yesterday's batch"] for r in ids)
    assert result[other][0] == "pending"


def test_the_editor_checks_the_bounds_its_help_gives(people, live_stack):
    """The help said "> 0, ≤ 1000000" and -5, 1e30 and 0 went to the confirm dialog, for the server
    to refuse; 99999999999999999999 was shown as 100000000000000000000."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Bounds {t}"}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    amount, approve = page.locator("#arg__amount"), page.locator("#approve")
    error = page.locator('[data-error-for="amount"]')
    for typed, said in (("-5", "must be more than 0"), ("0", "must be more than 0"),
                        ("1e30", "must be at most 1,000,000"), ("99999999999999999999", "must be at most 1,000,000"),
                        ("", "required")):
        amount.fill(typed)
        expect(error).to_have_text(said)
        expect(approve).to_be_disabled()
        expect(page.locator("#diff-preview")).to_contain_text("Fix the marked arguments first (Amount).")
    finn.shoot("bounds")
    amount.fill("1000000")
    expect(error).to_be_hidden()
    expect(approve).to_be_enabled()
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 1000000")


def test_a_bulk_decision_sent_before_the_page_waited_for_it_is_said_sent(people, live_stack):
    """The server counts each hold's window from the hold, the page from its answer, later (the more so
    for many at once): the outcomes that came first were dropped, and the page never said "Sent." (nor a
    "Not sent" either), its toast going without a word. Here the server sends them at once, well before
    the page's window closes."""
    t = tag()
    ids = make_requests(live_stack, [{"requester": "alice", "description": f"Early {i} {t}", "risk": "low"}
                                     for i in range(3)])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/?q={t}")
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    page.locator("#select-all").check()
    page.locator("#bulk-approve").click()
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#undo-toast")).to_contain_text("Approved: 3 requests", timeout=T)
    run(live_stack, "from django.utils import timezone\nfrom approvals.models import HeldDecision\n"
                    f"held = HeldDecision.objects.filter(request_id__in={ids!r})\n"
                    "assert held.count() == 3\nheld.update(due_at=timezone.now())\nservices.release_due()")
    expect(page.locator("#inbox-live")).to_have_text("Sent.", timeout=T)
    expect(page.locator("#undo-toast")).to_be_hidden()
    assert [status for status, *_ in statuses(live_stack, ids).values()] == ["approved"] * 3


def test_a_double_click_decides_once(people, live_stack):
    """The request page sends its decision by script: a second click while the first is on its way
    sends nothing more."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Twice ({t})", "timeout": 600}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    sent = []
    page.on("request", lambda r: sent.append(r) if r.method == "POST" and r.url.split("?")[0].endswith(f"/inbox/{rid}/")
            and "reject" in (r.post_data or "") else None)
    page.locator("#feedback").fill("Not this month")
    page.locator("#reject").dblclick()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert len(sent) == 1
    assert wait_status(live_stack, rid, "rejected") == "rejected"


def test_the_diff_preview_says_what_the_tool_will_refuse(people, live_stack):
    """A reviewer could approve a transfer in a currency the requester's account is not in: nothing
    moved, the call failed, and the reviewer learnt it later. The tool's own sentence shows under the
    changes before the click, and approving the edit anyway is refused with it, the edit kept."""
    said = "Account 1234567890 is in USD, so a transfer from or to it cannot be in EUR."
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Euro ({t})", "timeout": 600}])
    finn = people("finn")
    page = finn.page
    page.goto(f"/inbox/{rid}/")
    refusal, currency = page.locator("#tool-refusal"), page.locator("#arg__currency")
    expect(page.locator("#diff-preview")).to_contain_text("No changes")
    expect(refusal).to_be_hidden()
    currency.select_option("EUR")
    expect(refusal).to_have_text("The tool will refuse these arguments: " + said)
    finn.shoot("tool-refusal")
    currency.select_option("USD")
    expect(refusal).to_be_hidden()
    currency.select_option("EUR")
    expect(refusal).to_be_visible()
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    expect(page.locator("#form-error")).to_contain_text(said, timeout=T)
    expect(currency.locator("option:checked")).to_have_text("EUR")
    assert statuses(live_stack, [rid])[rid][0] == "pending"


def test_the_request_page_says_an_approved_transfer_then_failed(people, live_stack):
    """finn approved a transfer edited to an account that does not exist: alice's chat said it failed, and
    his request page still said only "Approved with edits", read as money moved."""
    from chat_helpers import new_chat

    alice = people("alice").page
    new_chat(alice)
    alice.locator("#composer").fill("Transfer $500 from account 1234567890 to account 0987654321")
    alice.locator("#composer").press("Enter")
    card = alice.locator(".tool-card", has_text="transfer_money")
    expect(card.locator(".approval-card .status-badge")).to_have_text("Pending", timeout=T)
    rid = card.locator(".approval-card").get_attribute("data-approval-id")
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    page.locator("#arg__to_account").fill("5555555555")
    page.locator("#approve").click()
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    page.goto(f"/inbox/{rid}/")  # before or after the call ran: the page shows it, or follows once it has
    expect(page.locator("body")).to_have_attribute("data-ws-state", "open", timeout=T)
    ran = page.locator("#ran")
    expect(ran).to_contain_text("This did not work", timeout=T)
    expect(ran).to_contain_text("5555555555")
    expect(card.locator(".approval-card .status-badge")).to_have_text("Approved with edits", timeout=T)


def test_an_account_and_an_amount_are_checked_as_they_are_typed(people, live_stack):
    """An account with a space before it, or of five digits, was refused only after the confirmation (the
    change " 0987654321" looked like none), and "0x10" was read as the amount 16."""
    t = tag()
    [rid] = make_requests(live_stack, [{"requester": "alice", "description": f"Typed ({t})"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    account, amount = page.locator("#arg__to_account"), page.locator("#arg__amount")
    expect(account.locator("xpath=..")).to_contain_text("6 to 20 digits")  # said before anything is typed
    for typed in (" 0987654321", "12345", "abc"):
        account.fill(typed)
        expect(page.locator('[data-error-for="to_account"]')).to_have_text("6 to 20 digits")
        expect(account).to_have_attribute("aria-invalid", "true")
        expect(page.locator("#approve")).to_be_disabled()
    account.fill("0987654321")
    expect(page.locator('[data-error-for="to_account"]')).to_be_hidden()
    amount.fill("0x10")
    expect(page.locator('[data-error-for="amount"]')).to_have_text("not a number")
    amount.fill("450")
    expect(page.locator("#diff-preview")).to_contain_text("Amount: 500 → 450")
    expect(page.locator("#approve")).to_be_enabled()
