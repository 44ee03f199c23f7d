"""The Django admin's policy form refuses a save over another admin's change made since the page was
drawn (the console's page and the API's If-Match already did): a concurrent change of the quorum and
the deadline was reverted without a word, and the audit put the revert in the second admin's name."""

import pytest

from approvals import services
from approvals.models import AuditEvent, ToolPolicy
from tests.inbox_helpers import user

pytestmark = pytest.mark.django_db

URL = "/admin/approvals/toolpolicy/{}/change/"


@pytest.fixture
def admin(client, demo):
    client.force_login(demo["admin"])
    return client


def form_data(response):
    """What the change page's form sends as drawn (bound data when the page came back with errors)."""
    form = response.context["adminform"].form
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None:
            continue
        data[form.add_prefix(name)] = value
    return {k: ("" if v is None else v) for k, v in data.items()}


def test_a_save_over_a_change_made_since_the_page_was_drawn_is_refused_then_made_knowingly(admin):
    row = services.save_policy("transfer_money", {"approver_kind": "requester", "required_approvals": 1, "risk": "high"},
                               user("admin"))
    page = admin.get(URL.format(row.pk))
    drawn = form_data(page)
    assert drawn["version"]

    # another admin changes the answers offered and the deadline meanwhile (the console, the API, another tab)
    services.save_policy("transfer_money", {"allowed_decisions": ["approve", "reject"], "timeout_seconds": 600},
                         user("rita"))
    changes = AuditEvent.objects.filter(action=AuditEvent.Action.POLICY_CHANGED).count()

    refused = admin.post(URL.format(row.pk), {**drawn, "risk": "critical"})
    assert refused.status_code == 200  # the form again, with its error
    said = refused.content.decode()
    assert "Not saved: rita changed this policy" in said and "save again to put it in force" in said
    row.refresh_from_db()
    assert (row.allowed_decisions, row.timeout_seconds, row.risk) == (["approve", "reject"], 600, "high")
    assert AuditEvent.objects.filter(action=AuditEvent.Action.POLICY_CHANGED).count() == changes

    # the form came back as filled in, on the version now in force: saved again, it goes over that change
    again = form_data(refused)
    assert again["risk"] == "critical" and again["version"] != drawn["version"]
    saved = admin.post(URL.format(row.pk), again)
    assert saved.status_code == 302
    row.refresh_from_db()
    assert (row.timeout_seconds, row.risk) == (None, "critical")


def test_a_save_of_an_unchanged_policy_goes_through_and_one_without_a_version_too(admin):
    row = services.save_policy("transfer_money", {"approver_kind": "requester", "required_approvals": 1, "risk": "high"},
                               user("admin"))
    drawn = form_data(admin.get(URL.format(row.pk)))
    assert admin.post(URL.format(row.pk), {**drawn, "risk": "critical"}).status_code == 302
    assert ToolPolicy.objects.get(pk=row.pk).risk == "critical"
    # a form sent without one (a script, a page drawn before this field) saves as before
    services.save_policy("transfer_money", {"timeout_seconds": 900}, user("rita"))
    assert admin.post(URL.format(row.pk), {**drawn, "version": "", "risk": "medium"}).status_code == 302
    assert ToolPolicy.objects.get(pk=row.pk).risk == "medium"


def test_a_quorum_its_group_cannot_give_is_saved_with_the_warning_the_console_gives(admin, demo):
    """The admin's form said only "changed successfully" for three approvals from a group of one or two;
    the console and the API said its requests could never be approved."""
    from django.contrib.auth.models import Group

    finance = Group.objects.get(name="finance")
    row = services.save_policy("transfer_money", {"approver_kind": "group", "approver_group": finance,
                                                  "required_approvals": 1}, user("admin"))
    members = finance.user_set.filter(is_active=True).count()
    drawn = form_data(admin.get(URL.format(row.pk)))
    saved = admin.post(URL.format(row.pk), {**drawn, "required_approvals": members + 1}, follow=True)
    said = [str(m) for m in saved.context["messages"]]
    assert any(f"asks for {members + 1} approvals" in m and "can never be approved" in m for m in said), said
    assert ToolPolicy.objects.get(pk=row.pk).required_approvals == members + 1  # saved all the same, as elsewhere
    quiet = admin.post(URL.format(row.pk), {**form_data(admin.get(URL.format(row.pk))), "required_approvals": 1},
                       follow=True)
    assert not [m for m in quiet.context["messages"] if "can never be approved" in str(m)]
