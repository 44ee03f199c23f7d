"""The detail page (quorum, audit trail, conversation, shared state, the arguments editor's server
side) and deciding from the inbox: one, with edits, rejected, and in bulk with one reason."""

import json
import re

import pytest
from django.contrib.auth.models import Group

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent, Decision, HeldDecision
from state import services as state_services
from tests.inbox_helpers import make_request, user

pytestmark = pytest.mark.django_db


def json_script(body, element_id):
    match = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', body, re.S)
    assert match, element_id
    return json.loads(match.group(1))


def test_detail_shows_everything_a_reviewer_needs(login):
    req = make_request("alice", thread="thread-7", reason="The user asked to pay rent.",
                       excerpt=[{"role": "user", "content": "Pay my rent please"},
                                {"role": "assistant", "content": "I'll transfer 500.00 USD"}])
    state_services.replace("thread:thread-7", {"balance": 5432.1, "payee": "landlord"}, source="agent")
    body = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    for text in ("The user asked to pay rent.", "test impact", "test: mode always", "Pay my rent please",
                 "I&#x27;ll transfer 500.00 USD", "&quot;payee&quot;: &quot;landlord&quot;", "v1",
                 "Approvals 0 of 1", "Requested", 'class="countdown countdown-big"', 'id="decide-form"',
                 'name="arguments_json"'):
        assert text in body, text
    assert json_script(body, "approval-schema")["properties"]["amount"]["type"] == "number"
    assert json_script(body, "approval-current")["amount"] == 500.0


def test_quorum_progress_and_audit_trail(login, demo):
    finance = Group.objects.get(name="finance")
    demo["rita"].groups.add(finance)
    req = make_request("alice", required=2)
    services.decide(req.pk, user("rita"), "approve")
    body = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert "Approvals 1 of 2" in body and 'max="2" value="1"' in body  # the <progress> bar
    assert "1 more approval needed from finance" in body
    trail = body[body.index('id="audit-heading"'):]
    assert trail.index("Requested") < trail.index("Decided") and "rita" in trail
    # an edit withdraws rita's approval: she shows as withdrawn, the count starts again
    resp = login("finn").post(f"/inbox/{req.pk}/", {
        "action": "approve", "arguments_json": json.dumps({**req.arguments, "amount": 450})})
    assert resp.status_code == 302
    body = login("finn").get(f"/inbox/{req.pk}/?partial=live").content.decode()
    assert "Approvals 1 of 2" in body and "<del>rita</del>" in body and "withdrawn by an edit" in body
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_approve_with_edits_from_the_json_field(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {
        "action": "approve", "arguments_json": json.dumps({**req.arguments, "amount": 450}), "next": "/inbox/?status=all"})
    assert resp.status_code == 302 and resp["Location"] == "/inbox/?status=all"
    req.refresh_from_db()
    assert req.status == "modified" and req.final_arguments["amount"] == 450.0
    edited = AuditEvent.objects.get(request=req, action="edited")
    assert edited.before["arguments"]["amount"] == 500.0 and edited.after["arguments"]["amount"] == 450.0


def test_the_decisions_panel_says_which_approval_changed_the_arguments(login, demo):
    """finn's approval of 450 instead of the model's 500 was listed as plain "Approved" beside rita's
    approval of the arguments as asked."""
    demo["rita"].groups.add(Group.objects.get(name="finance"))
    req = make_request("alice", required=2)
    services.decide(req.pk, user("rita"), "approve")
    services.decide(req.pk, user("finn"), "approve", arguments={**req.arguments, "amount": 450})
    body = login("finn").get(f"/inbox/{req.pk}/?partial=live").content.decode()
    panel = body[body.index('id="decisions-heading"'):body.index('id="audit-heading"')]
    said = dict(re.findall(r"<strong>(\w+)</strong> <span class=\"badge[^\"]*\">([^<]+)</span>", panel))
    assert said == {"rita": "Approved", "finn": "Approved with edits"}, panel


def test_unchanged_arguments_are_a_plain_approval(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve",
                                                    "arguments_json": json.dumps(req.arguments, indent=4)})
    assert resp.status_code == 302
    assert ApprovalRequest.objects.get(pk=req.pk).status == "approved"


def test_server_errors_come_back_next_to_their_fields(login):
    req = make_request("alice", tool="generate_task_steps")
    bad = {"steps": [{"description": "", "status": "pending"}, {"description": "ok", "status": "later"}]}
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": json.dumps(bad)})
    assert resp.status_code == 400
    body = resp.content.decode()
    errors = json_script(body, "approval-errors")
    assert set(errors) == {"steps.0.description", "steps.1.status"}
    assert "<code><bdi>steps.0.description</bdi></code>" in body  # also listed for a page without JavaScript
    # the reviewer's draft is kept, not replaced by the original
    assert json.loads(re.search(r'id="arguments-json"[^>]*>(.*?)</textarea>', body, re.S).group(1)
                      .replace("&quot;", '"')) == bad
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_an_argument_typed_twice_is_refused_not_read_past(login):
    """JSON keeps the last of two equal keys: "amount" typed twice approved the second value silently."""
    req = make_request("alice")
    text = json.dumps(req.arguments)[:-1] + ', "amount": 900.0}'
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": text})
    assert resp.status_code == 400 and "The arguments name &quot;amount&quot; twice" in resp.content.decode()
    assert "900.0" in resp.content.decode()  # the draft is kept
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments is None
    assert not HeldDecision.objects.filter(request=req).exists()
    nested = {"steps": [{"description": "a", "status": "pending"}]}
    step = make_request("alice", tool="generate_task_steps")
    text = json.dumps(nested).replace('"status": "pending"', '"status": "pending", "status": "done"')
    resp = login("finn").post(f"/inbox/{step.pk}/", {"action": "approve", "arguments_json": text})
    assert resp.status_code == 400 and "&quot;status&quot; twice" in resp.content.decode()


def test_an_invalid_edit_names_each_argument_by_its_label(login):
    """The refusal listed `amount` (the key, in code type) under "invalid arguments"."""
    req = make_request("alice")
    edited = {**req.arguments, "amount": -5}
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": json.dumps(edited)})
    body = resp.content.decode()
    assert resp.status_code == 400 and "The edited arguments are not valid" in body
    assert "<li>Amount: Must be greater than 0.</li>" in body and "<code>amount</code>" not in body
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_invalid_json_is_refused_with_a_message(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": '{"amount": 4'})
    assert resp.status_code == 400 and b"not valid JSON" in resp.content
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": "[1, 2]"})
    assert resp.status_code == 400 and b"must be a JSON object" in resp.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_a_number_json_cannot_read_is_refused_with_a_message(login):
    # an integer of 5000 digits: json.loads raises a plain ValueError, which was a 500
    req = make_request("alice")
    text = '{"from_account": "1234567890", "to_account": "0987654321", "currency": "USD", "amount": %s}' % ("9" * 5000)
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": text})
    assert resp.status_code == 400 and b"more than 4300 digits" in resp.content and b"sys." not in resp.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert not HeldDecision.objects.filter(request=req).exists() and not Decision.objects.filter(request=req).exists()


def test_reject_needs_feedback_and_the_agent_gets_it(login):
    req = make_request("alice")
    client = login("finn")
    assert client.post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "  "}).status_code == 400
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert client.post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "Wrong payee"}).status_code == 302
    req.refresh_from_db()
    assert req.status == "rejected" and req.feedback == "Wrong payee"


def test_next_never_leaves_the_inbox(login):
    req = make_request("alice")
    resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "next": "https://evil.example/inbox/"})
    assert resp["Location"] == "/inbox/"


def test_requester_sees_four_eyes_note_not_the_form(login, demo):
    req = make_request("finn", group="finance")
    body = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="decide-form"' not in body and "four eyes" in body


def test_bulk_reject_with_one_reason(login):
    reqs = [make_request("alice") for _ in range(3)]
    client = login("finn")
    refused = client.post("/inbox/bulk/", {"ids": [r.pk for r in reqs], "decision": "reject", "feedback": ""},
                          HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert refused.status_code == 400 and "reason" in refused.json()["message"]
    assert ApprovalRequest.objects.filter(status="pending").count() == 3
    resp = client.post("/inbox/bulk/", {"ids": [r.pk for r in reqs], "decision": "reject",
                                        "feedback": "Not this week"}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert resp.json()["succeeded"] == 3 and resp.json()["failed"] == 0
    for r in reqs:
        r.refresh_from_db()
        assert (r.status, r.feedback, r.decided_by.username) == ("rejected", "Not this week", "finn")


def test_bulk_reports_each_item_and_works_without_javascript(login):
    ok = make_request("alice")
    done = make_request("alice")
    services.decide(done.pk, user("finn"), "approve")
    resp = login("finn").post("/inbox/bulk/", {"ids": [ok.pk, done.pk], "decision": "approve",
                                               "next": "/inbox/?status=all"}, follow=True)
    assert resp.redirect_chain[-1][0] == "/inbox/?status=all"
    messages = [str(m) for m in resp.context["messages"]]
    assert "1 request approved." in messages and any("already" in m for m in messages)
    assert ApprovalRequest.objects.get(pk=ok.pk).status == "approved"


def test_everything_shown_is_escaped(login):
    payload = "<script>alert('x')</script>"
    req = make_request("alice", description=payload, reason=payload, thread="thread-x",
                       arguments={"from_account": "1234567890", "to_account": payload, "amount": 1.0,
                                  "currency": "USD"},
                       excerpt=[{"role": "user", "content": payload}, {"role": payload, "content": "hi"}])
    state_services.replace("thread:thread-x", {"note": payload}, source="agent")
    services.decide(req.pk, user("finn"), "reject", feedback=payload)
    client = login("admin")
    for url in (f"/inbox/{req.pk}/", f"/inbox/{req.pk}/?partial=live", "/inbox/?scope=all&status=all",
                "/audit/", "/inbox/stats/"):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body, url
    body = client.get(f"/inbox/{req.pk}/").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body
    # inside JSON script elements the < is escaped too (json_script)
    assert "\\u003Cscript\\u003E" in body


def test_the_message_after_a_decision_is_in_the_readers_language(login, demo):
    """With no undo window (AGUI_UNDO_SECONDS=0) the page says what happened in a flash message:
    it was an English f-string on every language; a marking gettext shows both are looked up."""
    from unittest import mock

    from django.utils import translation

    finance = Group.objects.get(name="finance")
    demo["rita"].groups.add(finance)
    first, second = make_request("alice", required=2), make_request("alice")
    with mock.patch.object(translation._trans, "gettext", side_effect=lambda s: f"«{s}»"):
        shown = []
        for req in (first, second):
            resp = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve"}, follow=True)
            shown += [str(m) for m in resp.context["messages"]]
    assert "«transfer_money: your approval is recorded (1 of 2).»" in shown, shown
    assert any(m.startswith("«transfer_money: ") for m in shown if "recorded" not in m), shown


def test_an_answer_with_guidance_is_not_listed_as_an_approval(login):
    """The Decisions panel said "Approved" (green) for a reviewer who answered with guidance, so
    the call did not run; the stats page's fast decisions said "approved after" for it too."""
    req = make_request("alice")
    ApprovalRequest.objects.filter(pk=req.pk).update(allowed_decisions=["approve", "reject", "respond"])
    services.decide(req.pk, user("finn"), "respond", feedback="Ask the customer first.")  # at once: fast
    live = login("finn").get(f"/inbox/{req.pk}/?partial=live").content.decode()
    panel = live[live.index('id="decisions-heading"'):]
    panel = panel[:panel.index("</section>")]
    assert "Answered with guidance" in panel and "Approved" not in panel and "badge-ok" not in panel
    assert "Ask the customer first." in panel
    stats = login("finn").get("/inbox/stats/?days=1").content.decode()
    fast = stats[stats.index('id="fast-heading"'):]
    assert "finn answered after" in fast and "finn approved after" not in fast


def test_the_audit_trail_says_the_policy_words_in_the_readers_language():
    """A request's trail and the audit page showed the engine's stored words ("risk: high",
    "decision: respond", "mode: always") on every language's page."""
    from types import SimpleNamespace

    from django.utils import translation

    from approvals.templatetags.inbox_tags import changes

    event = SimpleNamespace(before=None, after={
        "risk": "high", "decision": "respond", "mode": "always", "approver_kind": "group",
        "timeout_action": "reject", "status": "pending", "feedback": "high"})
    with translation.override("fr"):
        shown = {c["key"]: str(c["after"]) for c in changes(event)}
    assert shown == {"risk": "Élevé", "decision": "Répondu par des consignes",
                     "mode": "Toujours demander : une personne décide de chaque appel",
                     "approver_kind": "Groupe", "timeout_action": "Rejeter", "status": "En attente",
                     "feedback": "high"}, shown


def test_the_engines_own_reasons_are_not_shown_as_a_reviewers_feedback(login, demo):
    """An expired request's page quoted "timed out: nobody decided before the deadline, so the
    action was not taken" (the sentence for the model, English on every page) as if a reviewer had
    written it, and the requester's card added it as a "Note"; a reviewer's words still show."""
    from datetime import timedelta

    from django.utils import timezone

    from agents import presenters

    expired, stopped, rejected = make_request("alice"), make_request("alice"), make_request("alice")
    ApprovalRequest.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert services.expire(expired.pk)
    services.cancel(stopped.pk, user("alice"), reason="the user stopped the run")
    services.decide(rejected.pk, user("finn"), "reject", feedback="Wrong account.")
    def outcome(req, **headers):  # the section that says how it ended (the audit trail keeps the record)
        page = login("finn").get(f"/inbox/{req.pk}/", **headers).content.decode()
        return page[page.index('id="outcome"'):page.index("</section>", page.index('id="outcome"'))]

    said = outcome(expired, HTTP_ACCEPT_LANGUAGE="fr")
    assert "timed out" not in said and "personne n’a décidé avant l’échéance" in said
    assert "the user stopped the run" not in outcome(stopped)
    assert "Wrong account." in outcome(rejected)
    cards = {r.pk: presenters.approval(ApprovalRequest.objects.get(pk=r.pk)) for r in (expired, stopped, rejected)}
    assert "feedback" not in cards[expired.pk] and "feedback" not in cards[stopped.pk]
    assert cards[rejected.pk]["feedback"] == "Wrong account."


@pytest.mark.parametrize("url", ["/inbox/{pk}/?partial=preview", "/inbox/{pk}/", "/inbox/?partial=rows"])
def test_a_countdown_ticks_without_being_read_out(client, demo, url):
    """The reading pane is a polite live region (a request opened in it is read out), and its "expires
    in" countdown changed every second inside it: a screen reader announced it every second. A timer's
    changes are not announced (role timer, aria-live off); the pane's other changes still are."""
    from tests.inbox_helpers import make_request

    req = make_request("alice")
    client.force_login(demo["finn"])
    body = client.get(url.format(pk=req.pk)).content.decode()
    countdowns = re.findall(r'<span[^>]*class="countdown[^"]*"[^>]*>', body)
    assert countdowns and all('role="timer"' in c and 'aria-live="off"' in c for c in countdowns), countdowns
