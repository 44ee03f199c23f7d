"""An edit its tool will certainly refuse is not approved: the tool says up front what it will refuse
(@tool(refuses=...)), in the same words it refuses with when it runs. A reviewer could approve a
transfer from an account to itself, or in a currency the requester's account is not in: nothing moved,
the call failed, and the reviewer learnt it later."""

import json

import pytest
from django.utils import translation

from agents.catalog.banking import transfer_money
from agents.catalog.models import Account, Order
from agents.catalog.support import submit_refund
from agents.runtime.tools import ToolContext, ToolError
from approvals import services
from approvals.models import ApprovalRequest, Decision
from tests.inbox_helpers import ARGS, make_request, user

pytestmark = pytest.mark.django_db

SAME = "A transfer needs two different accounts: 1234567890 is on both sides."
EURO = "Account 1234567890 is in USD, so a transfer from or to it cannot be in EUR."


def edited(**changes):
    return {**ARGS["transfer_money"](), **changes}


@pytest.mark.parametrize(("changes", "said"), [({"to_account": "1234567890"}, SAME), ({"currency": "EUR"}, EURO)])
def test_an_edit_the_tool_will_refuse_is_refused_with_its_sentence(demo, changes, said):
    req = make_request("alice")
    with pytest.raises(services.InvalidArguments) as refused:
        services.decide(req.pk, user("finn"), "approve", arguments=edited(**changes))
    assert refused.value.message == said
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.PENDING and req.final_arguments is None
    assert not Decision.objects.filter(request=req).exists()
    with pytest.raises(services.InvalidArguments):  # the inbox pages' hold tries it first
        services.hold(req.pk, user("finn"), "approve", arguments=edited(**changes))


def test_a_valid_edit_is_still_approved(demo):
    req = make_request("alice")
    decided = services.decide(req.pk, user("finn"), "approve", arguments=edited(amount=250.0))
    assert decided.status == ApprovalRequest.Status.MODIFIED and decided.final_arguments["amount"] == 250.0


def test_the_arguments_as_asked_are_not_blocked(demo):
    """The reviewer may approve them: the tool refuses when it runs, as before."""
    req = make_request("alice", arguments=edited(to_account="1234567890"))
    decided = services.decide(req.pk, user("finn"), "approve")
    assert decided.status == ApprovalRequest.Status.APPROVED


def test_another_persons_account_is_not_read(demo):
    """The check reads the requester's own accounts only: bob's account being in GBP is not said to
    anyone (the tool finds it when it runs), and the edit is approved."""
    Account.objects.filter(number="0987654321").update(currency="GBP")
    req = make_request("alice")
    decided = services.decide(req.pk, user("finn"), "approve", arguments=edited(amount=100.0))
    assert decided.status == ApprovalRequest.Status.MODIFIED


def test_the_tool_refuses_in_the_same_words(demo):
    ctx = ToolContext(user=user("alice"), thread=None, run=None, tool_call_id="call-same")
    for changes, said in (({"to_account": "1234567890"}, SAME), ({"currency": "EUR"}, EURO)):
        with pytest.raises(ToolError) as refused:
            transfer_money.run(ctx, transfer_money.validate(edited(**changes)))
        assert str(refused.value) == said


def test_the_sentence_is_in_the_readers_language(demo):
    req = make_request("alice")
    with translation.override("fr"), pytest.raises(services.InvalidArguments) as refused:
        services.decide(req.pk, user("finn"), "approve", arguments=edited(currency="EUR"))
    assert refused.value.message != EURO and "1234567890" in refused.value.message


def test_a_refund_above_the_orders_amount(demo):
    req = make_request("alice", tool="submit_refund", group="support")
    with pytest.raises(services.InvalidArguments) as refused:
        services.decide(req.pk, user("rita"), "approve",
                        arguments={**ARGS["submit_refund"](), "amount": 80.0})
    said = "The refund (80.00) is more than the amount of order 12346 (59.00)."
    assert refused.value.message == said
    ctx = ToolContext(user=user("alice"), thread=None, run=None, tool_call_id="call-refund")
    with pytest.raises(ToolError) as ran:
        submit_refund.run(ctx, submit_refund.validate({**ARGS["submit_refund"](), "amount": 80.0}))
    assert str(ran.value) == said
    assert Order.objects.get(number="12346").status != Order.Status.REFUNDED


def test_the_page_keeps_the_edit_and_says_why(login):
    req = make_request("alice")
    draft = json.dumps(edited(currency="EUR"))
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": draft})
    assert resp.status_code == 400
    body = resp.content.decode()
    assert EURO in body and "&quot;EUR&quot;" in body  # the sentence, and the edit in the form


def test_the_preview_asks_for_the_sentence(login):
    req = make_request("alice")
    client = login("finn")
    ask = lambda args: client.post(f"/inbox/{req.pk}/", {"action": "check", "arguments_json": json.dumps(args)},  # noqa: E731
                                   HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()
    assert ask(edited(currency="EUR")) == {"refusal": EURO}
    assert ask(edited(amount=10.0)) == {"refusal": ""}
    assert ask({"nonsense": 1}) == {"refusal": ""}  # not valid: the editor says why
    assert ask(edited(from_account="0987654321", to_account="0987654321")) == {"refusal": ""}  # bob's: not read


@pytest.fixture
def alices_files(settings, tmp_path):
    """alice's sandbox (each user's "/" is a folder of their own) with two notes in it."""
    settings.AGUI_SANDBOX_DIR = tmp_path / "sandbox"
    own = tmp_path / "sandbox" / "users" / str(user("alice").pk) / "notes"
    own.mkdir(parents=True)
    (own / "a.txt").write_text("a")
    (own / "b.txt").write_text("b")
    return own


RENAME = {"source": "/notes/a.txt", "destination": "/notes/c.txt"}


@pytest.mark.parametrize(("destination", "said"), [
    ("/notes/a.txt", "/notes/a.txt is both the file to rename and its new name: give it another new path."),
    ("notes//./a.txt", "/notes/a.txt is both the file to rename and its new name: give it another new path."),
    ("/notes/b.txt", "/notes/b.txt already exists, and a rename never writes over a file: give it another new path."),
])
def test_a_rename_edited_onto_a_file_is_refused(demo, alices_files, destination, said):
    req = make_request("alice", tool="rename_file", arguments=RENAME, group=None)
    with pytest.raises(services.InvalidArguments) as refused:
        services.decide(req.pk, user("alice"), "approve", arguments={**RENAME, "destination": destination})
    assert refused.value.message == said
    assert (alices_files / "b.txt").read_text() == "b"
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.PENDING


def test_a_rename_edited_onto_a_new_name_is_approved(demo, alices_files):
    req = make_request("alice", tool="rename_file", arguments=RENAME, group=None)
    decided = services.decide(req.pk, user("alice"), "approve", arguments={**RENAME, "destination": "/notes/d.txt"})
    assert decided.status == ApprovalRequest.Status.MODIFIED


def test_another_persons_files_decide_nothing(demo, alices_files, settings):
    """bob's sandbox is his own: his /notes/b.txt does not stand in the way of his rename (alice's does not
    exist for him), and his edit is approved."""
    req = make_request("bob", tool="rename_file", arguments=RENAME, group=None)
    bobs = settings.AGUI_SANDBOX_DIR / "users" / str(user("bob").pk) / "notes"
    bobs.mkdir(parents=True)
    (bobs / "a.txt").write_text("bob's")
    decided = services.decide(req.pk, user("bob"), "approve", arguments={**RENAME, "destination": "/notes/b.txt"})
    assert decided.status == ApprovalRequest.Status.MODIFIED
