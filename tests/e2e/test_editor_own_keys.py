"""An outside agent's schema may name a property "__proto__", "constructor" or "prototype": the
arguments editor keeps it a field like any other. It walked `value[seg]`, so opening the request
page wrote the schema's names onto Object.prototype (with "signal" there, every fetch of the page
threw), and what the reviewer typed into such a field went there too, missing from what was sent."""

import json
import re

import inbox_e2e
from inbox_e2e import T, run, statuses, wait_status
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context

TEXT = {"type": "string"}
SCHEMA = {"type": "object", "properties": {
    "note": TEXT,
    "__proto__": {"type": "object", "properties": {
        "signal": {"type": "object", "properties": {"a": TEXT}},
        "polluted": TEXT}},
    "constructor": {"type": "object", "properties": {
        "prototype": {"type": "object", "properties": {"polluted": TEXT}}}},
}}

POLLUTION = "() => [({}).signal, ({}).polluted, Object.prototype.hasOwnProperty.call(Object.prototype, 'a')]"


def test_a_property_named_proto_is_a_field_not_the_pages_prototype(people, live_stack):
    rid = run(live_stack, "r = make_request('bob', tool='crm.proto_probe', arguments={'note': 'hi'}, group='reviewers')\n"
                          f"r.schema = {SCHEMA!r}\n"
                          "r.save(update_fields=['schema'])\nresult = r.pk")
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    expect(page.locator("#arg__note")).to_have_value("hi")
    assert page.evaluate(POLLUTION) == [None, None, False]  # was [{}, None, False] on load
    # the page's own requests still go out (an inherited `signal` made fetch(url, {...}) throw)
    assert page.evaluate("() => fetch(location.href, {method: 'GET'}).then((r) => r.status)") == 200

    page.locator("#arg____proto____polluted").fill("typed here")
    page.locator("#arg__constructor__prototype__polluted").fill("and here")
    assert page.evaluate(POLLUTION) == [None, None, False]
    expect(page.locator("#diff-preview")).to_contain_text("typed here")
    expect(page.locator("#diff-preview")).to_contain_text("and here")
    sent = json.loads(page.locator("#arguments-json").input_value())
    assert sent["__proto__"]["polluted"] == "typed here"
    assert sent["constructor"]["prototype"]["polluted"] == "and here"

    page.locator("#approve").click()
    expect(page.locator("#decide-dialog-title")).to_have_text("Approve with these edits?")
    page.locator("#decide-dialog-confirm").click()
    page.wait_for_url(re.compile(r"held="), timeout=T)
    assert wait_status(live_stack, rid, "modified") == "modified"
    final = statuses(live_stack, [rid])[rid][2]
    assert final["note"] == "hi"
    assert final["__proto__"]["polluted"] == "typed here"
    assert final["constructor"]["prototype"]["polluted"] == "and here"
