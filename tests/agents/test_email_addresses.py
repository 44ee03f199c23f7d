"""send_email's `to` is validated into the address the mail really goes to, so policy rules and the
reviewer read that one. Django's validate_email took "x@exa\\u200bmple.com" (a zero-width space),
"x@ｅｘａｍｐｌｅ.com" (full-width letters) and "x@ex\\u00adample.com" (a soft hyphen), and its mail
sent each to x@example.com (IDNA folds them): a rule denying mail to *@example.com matched none of
them, and the inbox showed what looked like the allowed address. A non-ASCII local part (the
Kelvin sign slips through the validator's case-insensitive [A-Z]) went out as an RFC 2047 word."""

import pytest
from django.contrib.auth.models import Group
from django.core import mail

from agents.catalog import get_agent
from agents.runtime.tools import ToolContext
from approvals import policy
from approvals import services as approval_services
from approvals.registry import ArgumentsInvalid

pytestmark = pytest.mark.django_db
TOOL = get_agent("ops").tool("send_email")


def args(to):
    return {"to": to, "subject": "Status", "body": "All good"}


@pytest.mark.parametrize("to", ["ceo@exa\u200bmple.com", "ceo@ｅｘａｍｐｌｅ.com", "ceo@ex\u00adample.com",
                                "ceo@EXAMPLE.COM", "ceo@Example.Com"])
def test_the_address_is_the_one_the_mail_goes_to(to, settings, tmp_path):
    settings.AGUI_SANDBOX_DIR = tmp_path
    cleaned = TOOL.validate(args(to))
    assert cleaned["to"] == "ceo@example.com"
    TOOL.run(ToolContext(user=None, thread=None, run=None, tool_call_id="c-1"), cleaned)
    assert mail.outbox[0].to == ["ceo@example.com"]


def test_a_rule_on_the_domain_sees_what_is_sent(demo):
    approval_services.save_policy("send_email", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="reviewers"),
        "conditions": [{"name": "no mail to example.com", "when": {"path": "args.to", "op": "glob",
                                                                   "value": "*@example.com"}, "action": "deny"},
                       {"name": "otherwise", "action": "gate"}]}, demo["admin"])
    for to in ("ceo@example.com", "ceo@exa\u200bmple.com", "ceo@ｅｘａｍｐｌｅ.com"):
        verdict = policy.evaluate("send_email", TOOL.validate(args(to)), {"user": demo["alice"]})
        assert verdict.action == "deny", to


@pytest.mark.parametrize("to", ["ceo\u212a@example.com", "ceo\u017f@example.com", "ceo@exa\u200b.com.",
                                "ceo@-.com"])
def test_an_address_that_cannot_go_out_as_written_is_refused(to):
    with pytest.raises(ArgumentsInvalid):
        TOOL.validate(args(to))


def test_an_international_domain_is_shown_as_it_is_sent():
    # a look-alike of example.com in Cyrillic is another domain: the reviewer reads its ASCII form
    assert TOOL.validate(args("ceo@ex\u0430mple.com"))["to"] == "ceo@xn--exmple-4nf.com"
