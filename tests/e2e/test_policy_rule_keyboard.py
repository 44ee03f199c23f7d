"""The policy console's rule builder with the keyboard alone: every change rebuilds the list of
rules, and focus lands on the twin of the control in use (never on <body>); a move says the new
place in a polite live region; the reordered rules are what the form saves."""

import json
import re

import inbox_e2e
from inbox_e2e import T, run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

TOOL = "delete_directory"  # a tool no other browser test reads or saves a policy of

RULES = [
    {"name": "A", "when": {"path": "args.path", "op": "eq", "value": "/a"}, "action": "gate"},
    {"name": "B", "when": {"all": [{"path": "args.path", "op": "eq", "value": "/b1"},
                                   {"path": "args.path", "op": "eq", "value": "/b2"},
                                   {"path": "args.path", "op": "eq", "value": "/b3"}]}, "action": "gate"},
    {"name": "C", "when": {"path": "args.path", "op": "eq", "value": "/c"}, "action": "gate"},
    {"name": "D", "when": {"path": "args.path", "op": "eq", "value": "/d"}, "action": "gate"},
]

# what has focus: which control of a rule card (by its place, as the page draws it), its words, its rule's name
ACTIVE = """() => {
  const a = document.activeElement;
  const card = a.closest(".rule-card");
  const kind = a.matches(".rule-head select") ? "then" : a.matches(".rule-head input[type=checkbox]") ? "always"
    : a.matches(".field-name input") ? "name" : a.tagName.toLowerCase();
  return {tag: a.tagName, kind, label: a.getAttribute("aria-label") || a.textContent.trim(),
          rule: card ? card.querySelector(".field-name input").value : null};
}"""


def _drop_policy(live_stack):
    run(live_stack, f"from approvals.models import ToolPolicy\nToolPolicy.objects.filter(tool_name={TOOL!r}).delete()")


def _names(page):
    return [json_rule.get("name") for json_rule in json.loads(page.locator("#p-conditions").input_value())]


def _focused(page, label=None, kind=None, rule=None):
    active = page.evaluate(ACTIVE)
    assert active["tag"] != "BODY", "focus was lost to <body>"
    if label is not None:
        assert active["label"] == label, active
    if kind is not None:
        assert active["kind"] == kind, active
    if rule is not None:
        assert active["rule"] == rule, active
    return active


def test_the_rule_builder_keeps_focus_and_reorders_by_keyboard(people, live_stack):
    _drop_policy(live_stack)
    page = people("admin").page
    page.goto(f"/policies/{TOOL}/")
    page.get_by_label("Mode").select_option("conditional")
    details = page.locator("#conditions-details")
    if not details.evaluate("d => d.open"):
        page.locator("#conditions-details summary").click()
    page.locator("#p-conditions").fill(json.dumps(RULES))
    page.locator("#json-to-builder").click()
    expect(page.locator(".rule-card")).to_have_count(4)
    live = page.locator("#rule-builder-live")

    # "Then": each arrow key changes the value (Chromium, a closed select) and focus stays on it
    then = page.locator('.rule-card[data-index="0"] .rule-head select')
    then.focus()
    page.keyboard.press("ArrowDown")
    expect(then).to_have_value("deny")
    _focused(page, kind="then", rule="A")
    page.keyboard.press("ArrowDown")
    expect(then).to_have_value("allow")
    _focused(page, kind="then", rule="A")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    expect(then).to_have_value("gate")
    _focused(page, kind="then", rule="A")

    # moves: the moved rule keeps focus, on its other button once it reached an end; each is said
    page.get_by_role("button", name="Move rule 2 up").focus()
    page.keyboard.press("Enter")
    expect(live).to_have_text("Rule 2 moved up: now rule 1")
    _focused(page, label="Move rule 1 down", rule="B")
    assert _names(page) == ["B", "A", "C", "D"]
    page.keyboard.press("Enter")
    expect(live).to_have_text("Rule 1 moved down: now rule 2")
    _focused(page, label="Move rule 2 down", rule="B")
    page.keyboard.press("Enter")
    expect(live).to_have_text("Rule 2 moved down: now rule 3")
    _focused(page, label="Move rule 3 down", rule="B")
    page.keyboard.press("Enter")
    expect(live).to_have_text("Rule 3 moved down: now rule 4")
    _focused(page, label="Move rule 4 up", rule="B")
    assert _names(page) == ["A", "C", "D", "B"]

    # removing a condition: focus on the next one's remove, else on the rule's "Add condition"
    page.get_by_role("button", name="Remove condition 1 of rule 4").focus()
    page.keyboard.press("Enter")
    _focused(page, label="Remove condition 1 of rule 4", rule="B")
    page.get_by_role("button", name="Remove condition 2 of rule 4").focus()
    page.keyboard.press("Enter")
    _focused(page, label="Add condition", rule="B")
    expect(page.locator('.rule-card[data-index="3"] .cond-row')).to_have_count(1)

    # "always": the same checkbox, ticked and unticked
    always = page.locator('.rule-card[data-index="1"] .rule-head input[type=checkbox]')
    always.focus()
    page.keyboard.press("Space")
    expect(always).to_be_checked()
    _focused(page, kind="always", rule="C")
    page.keyboard.press("Space")
    expect(always).not_to_be_checked()
    _focused(page, kind="always", rule="C")

    # removing a rule: focus on the next rule's Remove, else on "Add rule"
    page.get_by_role("button", name="Remove rule 3").focus()
    page.keyboard.press("Enter")
    _focused(page, label="Remove rule 3", rule="B")
    assert _names(page) == ["A", "C", "B"]
    page.locator("#add-rule").focus()
    page.keyboard.press("Enter")
    _focused(page, kind="name", rule="")  # the new rule's name (as before)
    page.get_by_role("button", name="Remove rule 4").focus()
    page.keyboard.press("Enter")
    _focused(page, label="Add rule")
    assert _names(page) == ["A", "C", "B"]

    # the reordered rules are what is saved
    page.locator("#save-policy").click()
    confirm = page.locator("#save-loosening")
    expect(page.locator(".flash-success").or_(confirm)).to_be_visible(timeout=T)
    if confirm.is_visible():
        confirm.click()
        expect(page.locator(".flash-success")).to_be_visible(timeout=T)
    saved = run(live_stack, f"from approvals.models import ToolPolicy\n"
                            f"result = [r.get('name') for r in ToolPolicy.objects.get(tool_name={TOOL!r}).conditions]")
    assert saved == ["A", "C", "B"]
    expect(page.locator(".rule-card .field-name input")).to_have_count(3)
    assert re.search(r"/policies/delete_directory/", page.url)
    _drop_policy(live_stack)
