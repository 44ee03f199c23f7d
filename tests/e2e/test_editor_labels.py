"""The arguments editor's labels and help in the reviewer's language for our own tools (the tool
author's msgids: Field titles and descriptions), while an outside agent's schema is shown as given.
In French the refund's reason read "refund description", from the schema's English name."""

import inbox_e2e
import pytest
from inbox_e2e import T, make_requests, run
from playwright.sync_api import expect

people = inbox_e2e.people  # the fixture: a signed-in person per browser context


@pytest.fixture(autouse=True)
def _back_to_english(live_stack):
    """The picker saves the choice in the live stack's database: later tests meet finn in English."""
    yield
    run(live_stack, "from people.models import Profile\nProfile.objects.all().delete()")


def _choose(page, code):
    page.locator("#language-select").select_option(code)
    with page.expect_navigation():
        page.locator("#language-apply").click()
    expect(page.locator("html")).to_have_attribute("lang", code, timeout=T)


@pytest.mark.parametrize(("code", "reason"), [("fr", "Motif"), ("zh-hans", "理由"), ("en", "Reason")])
def test_our_own_tools_labels_are_in_the_readers_language(people, live_stack, code, reason):
    [rid] = make_requests(live_stack, [{"requester": "alice", "tool": "submit_refund"}])
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    if code != "en":
        _choose(page, code)
    label = page.locator('label[for="arg__refund_description"]')
    expect(label).to_contain_text(reason)
    expect(label).not_to_contain_text("refund")
    expect(page.locator("#arg__refund_description")).to_have_value("Broken on arrival")


def test_an_outside_agents_schema_is_shown_as_given(people, live_stack):
    """Its own titles could call a field what it is not: the field's name is the label."""
    rid = run(live_stack, "r = make_request('alice', tool='crm.delete_contact', arguments={'contact_email': 'a@example.com'},"
                          " group='reviewers')\n"
                          "r.schema = {'type': 'object', 'properties': {'contact_email': {'type': 'string',"
                          " 'title': 'Reason', 'description': 'Whose card to drop'}}}\n"
                          "r.save(update_fields=['schema'])\nresult = r.pk")
    page = people("finn").page
    page.goto(f"/inbox/{rid}/")
    _choose(page, "fr")
    expect(page.locator('label[for="arg__contact_email"]')).to_contain_text("contact email")
    expect(page.locator("#arg__contact_email-help")).to_contain_text("Whose card to drop")
