"""A rule that names an account (`user.username eq "bob"`) is held as a rule naming a group is: it must
name an account that exists (a typo matched nobody, silently), and the account keeps its name while a
rule names it (renamed in the admin, bob's deny stopped applying to him: his transfer went to review)."""

import pytest
from django.core.exceptions import ValidationError

from approvals import services
from tests.inbox_helpers import user

pytestmark = pytest.mark.django_db


def deny(name, op="eq"):
    value = [name] if op in ("in", "not_in") else name
    return [{"name": "blocked", "when": {"path": "user.username", "op": op, "value": value}, "action": "deny"},
            {"name": "rest", "action": "gate"}]


@pytest.mark.parametrize("op", ["eq", "in"])
def test_a_rule_naming_an_account_nobody_has_is_refused(demo, op):
    with pytest.raises(ValidationError) as exc:
        services.save_policy("transfer_money", {"mode": "conditional", "approver_kind": "requester",
                                                "conditions": deny("no-such-user", op)}, user("admin"))
    assert "there is no account named 'no-such-user'; create it first" in str(exc.value)
    saved = services.save_policy("transfer_money", {"mode": "conditional", "approver_kind": "requester",
                                                    "conditions": deny("bob", op)}, user("admin"))
    assert saved.conditions[0]["when"]["path"] == "user.username"


def account_form(account, **changes):
    data = {"username": account.username, "first_name": "", "last_name": "", "email": account.email,
            "groups": [g.pk for g in account.groups.all()], "user_permissions": [],
            "date_joined_0": account.date_joined.strftime("%Y-%m-%d"),
            "date_joined_1": account.date_joined.strftime("%H:%M:%S"), "last_login_0": "", "last_login_1": "",
            "is_active": "on", "_save": "Save"}
    return {**data, **changes}


def test_an_account_a_rule_names_keeps_its_name_and_another_may_be_renamed(admin_client, demo):
    services.save_policy("transfer_money", {"mode": "conditional", "approver_kind": "requester",
                                            "conditions": deny("bob")}, user("admin"))
    bob = user("bob")
    refused = admin_client.post(f"/admin/auth/user/{bob.pk}/change/", account_form(bob, username="bob.smith"))
    assert refused.status_code == 200
    assert "bob is named by the rules of the policy of transfer_money" in refused.content.decode()
    assert user("bob").username == "bob"
    rita = user("rita")
    renamed = admin_client.post(f"/admin/auth/user/{rita.pk}/change/", account_form(rita, username="rita.p"))
    assert renamed.status_code == 302
    assert user("rita.p").pk == rita.pk
