"""Triage in the inbox pages: a decision held for its undo window (sent by the server once, recalled
by Undo, refused at once when it would be refused), the next request after a decision, the reading
pane, presence over the inbox socket, the evidence beside a request (tool results, the objects it
touches as they are now, the reviewer's view of the conversation), and the list's words."""

import json
import re
import uuid
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent, Decision, HeldDecision
from approvals.routing import websocket_urlpatterns as inbox_ws
from approvals.templatetags.inbox_tags import age
from tests.inbox_helpers import backdate, make_request, user


@pytest.fixture
def undo_window(settings):
    settings.AGUI_UNDO_SECONDS = 5


def later(seconds=6):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.mark.django_db
def test_a_decision_is_held_then_sent_once_and_the_next_request_follows(login, undo_window):
    older = make_request("alice", description="Older one")
    backdate(older, created=timezone.now() - timedelta(minutes=5))
    req = make_request("alice", description="Pay the rent")
    finn = login("finn")
    response = finn.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": ""})
    held = HeldDecision.objects.get(request=req)
    # on to the next request down the list, with the Undo of this one
    assert response.status_code == 302 and response["Location"] == f"/inbox/{older.pk}/?held={held.pk}"
    req.refresh_from_db()
    assert req.status == "pending" and not Decision.objects.filter(request=req).exists()
    page = finn.get(response["Location"]).content.decode()
    assert 'id="undo-toast"' in page and "Approved: Pay the rent" in page
    # it is the reviewer's already: out of their waiting list and count
    rows = finn.get("/inbox/?partial=rows")
    assert req.pk not in rows.content.decode() and rows["X-Pending-Count"] == "1"

    assert services.release(held.pk) is None  # the window is still open
    decided = services.release(held.pk, now=later())
    assert decided.status == "approved" and decided.decided_by == user("finn")
    assert services.release(held.pk, now=later()) is None  # at most once
    assert Decision.objects.filter(request=req).count() == 1
    assert not HeldDecision.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_reviewer_hears_whether_a_held_decision_was_sent_or_someone_else_came_first(
        login, undo_window, monkeypatch):
    """The Undo toast used to say "Sent." when its window closed, whatever the server then did: a
    reviewer whose approval came second to another's rejection was told it was sent."""
    from approvals import notify

    told = []
    monkeypatch.setattr(notify, "_send", lambda targets, notice: told.append(notice))
    mine, raced = make_request("alice", group="reviewers"), make_request("alice", group="reviewers")
    finn = login("finn")
    for req in (mine, raced):
        finn.post("/inbox/bulk/", {"ids": [req.pk], "decision": "approve"}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    login("rita").post("/inbox/bulk/", {"ids": [raced.pk], "decision": "reject", "feedback": "No"},
              HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    held = {h.request_id: h.pk for h in HeldDecision.objects.filter(user=user("finn"))}
    services.release(HeldDecision.objects.get(user=user("rita")).pk, now=later())  # rita's window closed first
    told.clear()
    for request_id in (mine.pk, raced.pk):
        services.release(held[request_id], now=later())
    outcomes = [(n["type"], n["held"], n.get("by")) for n in told if n["type"] in ("approval.sent", "approval.not_sent")]
    assert outcomes == [("approval.sent", held[mine.pk], None), ("approval.not_sent", held[raced.pk], "rita")]
    assert ApprovalRequest.objects.get(pk=raced.pk).status == "rejected"


@pytest.mark.django_db
def test_the_beat_sweep_sends_what_a_closed_tab_left_behind(login, undo_window):
    req = make_request("alice")
    login("finn").post("/inbox/bulk/", {"ids": [req.pk], "decision": "reject", "feedback": "Not this month"},
                       HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    HeldDecision.objects.update(due_at=timezone.now() - timedelta(seconds=1))  # the window closed; nobody is there
    services.release_due()
    req.refresh_from_db()
    assert (req.status, req.feedback) == ("rejected", "Not this month")


@pytest.mark.django_db
def test_undo_recalls_the_decision(login, undo_window):
    req = make_request("alice", description="Pay the plumber")
    finn = login("finn")
    data = finn.post("/inbox/bulk/", {"ids": [req.pk], "decision": "approve"},
                     HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()
    assert data["succeeded"] == 1 and len(data["held"]) == 1 and data["undo_seconds"] == 5
    undone = finn.post("/inbox/undo/", {"held": data["held"][0]}, HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()
    assert undone == {"recalled": [req.pk], "too_late": False}
    assert services.release(int(data["held"][0]), now=later()) is None
    req.refresh_from_db()
    assert req.status == "pending"
    assert req.pk in finn.get("/inbox/?partial=rows").content.decode()  # waiting for finn again
    # too late: nothing to recall
    again = finn.post("/inbox/undo/", {"held": data["held"][0]}, HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()
    assert again == {"recalled": [], "too_late": True}


@pytest.mark.django_db
def test_someone_elses_held_decision_cannot_be_undone(login, undo_window):
    req = make_request("alice", group="reviewers")
    held = services.hold(req.pk, user("finn"), "approve")
    assert login("rita").post("/inbox/undo/", {"held": held.pk},
                              HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()["recalled"] == []
    assert HeldDecision.objects.filter(pk=held.pk).exists()


@pytest.mark.django_db
def test_a_second_tab_cannot_replace_a_held_decision_with_another(login, undo_window):
    """Approve in one tab, Reject in another inside the window: the Reject replaced the held Approve
    under the same id, and when the window closed both tabs heard "Sent." of the Reject. The second
    is refused, saying so; the same decision again (a double click, a second tab) is the one held."""
    req = make_request("alice")
    finn = login("finn")
    assert finn.post(f"/inbox/{req.pk}/", {"action": "approve"}).status_code == 302
    [held] = HeldDecision.objects.all()
    other = finn.post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "no, wrong account"},
                      HTTP_X_REQUESTED_WITH="XMLHttpRequest", HTTP_ACCEPT="application/json")
    assert other.status_code == 400 and other.json()["code"] == "already_held"
    assert "You decided this request a moment ago (approve)" in other.json()["message"]
    again = services.hold(req.pk, user("finn"), "approve")
    assert again.pk == held.pk and again.due_at == held.due_at
    [kept] = HeldDecision.objects.all()
    assert (kept.pk, kept.decision, kept.feedback) == (held.pk, "approve", "")
    services.release(held.pk, now=later())
    assert ApprovalRequest.objects.get(pk=req.pk).status == "approved"


@pytest.mark.django_db
def test_a_refusal_shows_at_once_and_nothing_is_held(login, undo_window):
    req = make_request("alice")
    response = login("finn").post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": ""})
    assert response.status_code == 400 and "required to reject" in response.content.decode()
    bad = login("finn").post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": json.dumps(
        {"from_account": "1234567890", "to_account": "0987654321", "amount": -5, "currency": "USD"})})
    assert bad.status_code == 400
    assert not HeldDecision.objects.exists()
    # the dry run left nothing behind: no decision, no audit row beyond the request's own
    assert not Decision.objects.exists()
    assert list(AuditEvent.objects.filter(request=req).values_list("action", flat=True)) == ["requested"]


@pytest.mark.django_db
def test_a_held_decision_overtaken_by_another_reviewer_is_dropped(demo, undo_window):
    req = make_request("alice", group="reviewers")
    held = services.hold(req.pk, user("finn"), "approve")
    services.decide(req.pk, user("rita"), "reject", feedback="No")
    assert services.release(held.pk, now=later()) is None
    req.refresh_from_db()
    assert req.status == "rejected" and req.decided_by == user("rita")
    assert not HeldDecision.objects.exists()


@pytest.mark.django_db
def test_a_held_decision_of_an_account_switched_off_meanwhile_is_dropped(demo, undo_window):
    """Its maker's membership was checked again when it was sent, their account's being on was not."""
    req = make_request("alice", group="reviewers")
    finn = user("finn")
    held = services.hold(req.pk, finn, "approve")
    type(finn).objects.filter(pk=finn.pk).update(is_active=False)
    assert services.release(held.pk, now=later()) is None
    req.refresh_from_db()
    assert req.status == "pending" and not req.decisions.exists() and not HeldDecision.objects.exists()


def _deadline_passes(req):
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


@pytest.mark.django_db
def test_a_decision_held_in_time_is_sent_though_the_deadline_passes_inside_its_window(login, undo_window):
    req = make_request("alice", description="Pay before noon")
    finn = login("finn")
    assert finn.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": ""}).status_code == 302
    _deadline_passes(req)
    # the beat's sweep and the deadline's own task find it held: not expired under the reviewer
    services.process_deadlines(req.pk)
    assert not services.expire(req.pk)
    req.refresh_from_db()
    assert req.status == "pending"
    decided = services.release(HeldDecision.objects.get(request=req).pk, now=later())
    assert decided.status == "approved" and decided.decided_by == user("finn")
    assert sorted(AuditEvent.objects.filter(request=req).values_list("action", flat=True)) == ["decided", "requested"]


@pytest.mark.django_db
def test_a_held_decision_undone_after_the_deadline_leaves_the_request_expired(login, undo_window):
    req = make_request("alice")
    finn = login("finn")
    data = finn.post("/inbox/bulk/", {"ids": [req.pk], "decision": "approve"},
                     HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()
    _deadline_passes(req)
    assert finn.post("/inbox/undo/", {"held": data["held"][0]},
                     HTTP_X_REQUESTED_WITH="XMLHttpRequest").json()["recalled"] == [req.pk]
    req.refresh_from_db()
    assert req.status == "expired" and not Decision.objects.filter(request=req).exists()


@pytest.mark.django_db
def test_a_late_decision_beside_a_held_one_is_refused_and_the_held_one_stands(demo, undo_window):
    req = make_request("alice", group="reviewers")
    held = services.hold(req.pk, user("finn"), "approve")
    _deadline_passes(req)
    with pytest.raises(services.RequestExpired):
        services.decide(req.pk, user("rita"), "reject", feedback="too late")
    assert services.release(held.pk, now=later()).status == "approved"


@pytest.mark.django_db
def test_a_held_approval_is_not_counted_for_arguments_edited_inside_its_window(login, undo_window):
    req = make_request("alice", required=2)  # finance: finn and (here) rita
    user("rita").groups.add(req.approver_group)
    seen = dict(req.arguments)
    rita = login("rita")  # approves what her page shows, held for the undo window
    assert rita.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": json.dumps(seen)}).status_code == 302
    held = HeldDecision.objects.get(request=req)
    services.decide(req.pk, user("finn"), "approve", arguments={**seen, "amount": 900.0})  # 1 of 2
    assert services.release(held.pk, now=later()) is None  # not sent: rita never saw 900
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments["amount"] == 900.0
    assert list(req.decisions.values_list("user__username", flat=True)) == ["finn"]
    assert req.pk in rita.get("/inbox/?partial=rows").content.decode()  # hers to decide again
    # with nobody's edit in between, a held approval counts as before
    held = services.hold(req.pk, user("rita"), "approve")
    assert services.release(held.pk, now=later()).status == "modified"


@pytest.mark.django_db
def test_a_bulk_approval_is_of_the_requests_as_asked_not_of_an_edit_it_never_read(login, api, undo_window):
    """The list and the API's bulk-decide show requests as asked: a bulk approval of one finn had edited to
    900.00 counted rita's approval for 900.00, the second of a quorum of two, though she never read it."""
    edited, plain = make_request("alice", required=2), make_request("alice", required=2)
    user("rita").groups.add(edited.approver_group)
    services.decide(edited.pk, user("finn"), "approve", arguments={**edited.arguments, "amount": 900.0})  # 1 of 2
    resp = login("rita").post("/inbox/bulk/", {"ids": [edited.pk, plain.pk], "decision": "approve"},
                              HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    results = {r["id"]: r for r in resp.json()["results"]}
    assert results[edited.pk]["ok"] is False and results[edited.pk]["code"] == "arguments_changed"
    assert results[plain.pk]["ok"] is True
    assert not HeldDecision.objects.filter(request=edited).exists()
    resp = api("rita").post("/api/approvals/bulk-decide/", {"ids": [edited.pk], "decision": "approve"},
                            format="json")
    assert resp.json()["results"][0]["code"] == "arguments_changed"
    edited.refresh_from_db()
    assert edited.status == "pending" and list(edited.decisions.values_list("user__username", flat=True)) == ["finn"]
    # a rejection needs no reading of the edit
    resp = api("rita").post("/api/approvals/bulk-decide/", {"ids": [edited.pk], "decision": "reject",
                                                             "feedback": "no"}, format="json")
    assert resp.json()["results"][0] == {"id": edited.pk, "ok": True, "status": "rejected"}


@pytest.mark.django_db
def test_the_request_pages_approval_is_of_the_arguments_it_showed(login, undo_window):
    req = make_request("alice", required=2)
    user("rita").groups.add(req.approver_group)
    rita = login("rita")
    page = rita.get(f"/inbox/{req.pk}/").content.decode()
    shown = re.search(r'name="seen" id="seen-field" value="([0-9a-f]{64})"', page)
    seen = shown[1] if shown else ""
    services.decide(req.pk, user("finn"), "approve", arguments={**req.arguments, "amount": 900.0})  # meanwhile
    # her unchanged form: an approval of what she read, not an edit back to it nor one of 900
    stale = rita.post(f"/inbox/{req.pk}/", {"action": "approve", "seen": seen,
                                             "arguments_json": json.dumps(req.arguments)})
    assert stale.status_code == 400 and "edited after you read them" in stale.content.decode()
    assert not HeldDecision.objects.exists()
    assert list(req.decisions.values_list("user__username", flat=True)) == ["finn"]


@pytest.mark.django_db
def test_inbox_zero_and_the_request_page_after_the_last_one(login, undo_window):
    req = make_request("alice")
    finn = login("finn")
    response = finn.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": ""})
    assert response["Location"].startswith("/inbox/?held=")
    page = finn.get(response["Location"]).content.decode()
    assert "You're all caught up" in page and 'id="undo-toast"' in page
    assert 'id="bulk-bar" aria-label="Decide the selected requests" role="group" hidden' in page


@pytest.mark.django_db
def test_the_page_of_a_held_request_offers_undo_not_the_form(login, undo_window):
    req = make_request("alice")
    held = services.hold(req.pk, user("finn"), "approve")
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="decide-form"' not in page and "You approved this request" in page
    assert f'name="held" value="{held.pk}"' in page


@pytest.mark.django_db
def test_the_reading_pane(login):
    req = make_request("alice", description="Refund the grinder", reason="Order 12346 arrived broken.",
                       excerpt=[{"role": "user", "content": "My grinder is broken"},
                                {"role": "tool", "name": "lookup_order_details", "content": '{"status": "delivered"}'},
                                {"role": "assistant", "content": "Order 12346 arrived broken."}])
    body = login("finn").get(f"/inbox/{req.pk}/?partial=preview").content.decode()
    assert body.lstrip().startswith("<article") and "<html" not in body
    assert 'id="preview-approve"' in body and "Refund the grinder" in body
    assert "result of <code>lookup_order_details</code>" in body
    # the assistant's sentence is the reason; the excerpt does not say it again
    assert body.count("Order 12346 arrived broken.") == 1


@pytest.mark.django_db
def test_evidence_objects_as_they_are_now_and_the_conversation_link(login):
    req = make_request("alice", tool="submit_refund", agent="support", group="support",
                       arguments={"order_id": "12345", "amount": 129.99, "refund_description": "Never arrived"})
    page = login("rita").get(f"/inbox/{req.pk}/").content.decode()
    assert "<strong><bdi>Order 12345</bdi></strong>" in page and "(alice's own)" in page
    # asked of the tool now: the order's item, amount and state beside the request
    assert "Wireless Headphones, 129.99 USD, delivered" in page
    from agents.catalog.models import Order
    Order.objects.filter(number="12345").update(status="refunded")
    assert "Wireless Headphones, 129.99 USD, refunded" in login("rita").get(f"/inbox/{req.pk}/").content.decode()
    assert f'href="/inbox/{req.pk}/conversation/"' in page


@pytest.mark.django_db
def test_the_conversation_is_for_those_who_decide(login, demo):
    from agents.models import Message, Thread
    from agents.runtime.runner import conversation_excerpt

    thread = Thread.objects.create(owner=demo["alice"], agent="support")
    call_id = f"call-{uuid.uuid4().hex[:8]}"
    rows = [("user", "Refund order 12345 please", None, ""),
            ("assistant", "", [{"id": "c1", "type": "function", "function": {
                "name": "lookup_order_details", "arguments": '{"order_id": "12345"}'}}], ""),
            ("tool", '{"order_id": "12345", "status": "delivered", "amount": "129.99 USD"}', None, "c1"),
            ("assistant", "I'll refund 129.99.", [{"id": call_id, "type": "function", "function": {
                "name": "submit_refund", "arguments": '{"order_id": "12345"}'}}], "")]
    for seq, (role, content, calls, call_ref) in enumerate(rows, start=1):
        Message.objects.create(thread=thread, seq=seq, role=role, content=content, tool_calls=calls,
                               tool_call_id=call_ref)
    excerpt = conversation_excerpt(thread)
    assert {"role": "tool", "name": "lookup_order_details",
            "content": '{"order_id": "12345", "status": "delivered", "amount": "129.99 USD"}'} in excerpt

    req = make_request("alice", tool="submit_refund", agent="support", group="support", thread=thread.pk,
                       arguments={"order_id": "12345", "amount": 129.99, "refund_description": "Never arrived"})
    ApprovalRequest.objects.filter(pk=req.pk).update(tool_call_ref=call_id)
    page = login("rita").get(f"/inbox/{req.pk}/conversation/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Result of <code>lookup_order_details</code>" in text and "&quot;delivered&quot;" in text
    assert "this request</span> Calls <code>submit_refund</code>" in text
    assert login("finn").get(f"/inbox/{req.pk}/conversation/").status_code in (403, 404)  # not support's reviewer
    assert login("bob").get(f"/inbox/{req.pk}/conversation/").status_code == 403
    assert login("admin").get(f"/inbox/{req.pk}/conversation/").status_code == 200


def test_ages_never_say_zero_minutes():
    now = timezone.now()
    assert age(now) == "just now" and age(now - timedelta(seconds=59), "short") == "just now"
    assert age(now - timedelta(minutes=3, seconds=10)) == "3 min ago"
    assert age(now - timedelta(hours=2, minutes=5), "short") == "2 h 5 min"
    assert age(now - timedelta(days=3)) == "3 days ago"


@pytest.mark.django_db
def test_the_decided_view_names_the_decider_and_the_audit_reads_as_words(login):
    req = make_request("alice", description="Pay the dentist")
    services.decide(req.pk, user("finn"), "reject", feedback="Twice this month")
    finn = login("finn")
    page = finn.get("/inbox/?status=decided").content.decode()
    assert ">Decided by</th>" in page and "<strong>finn</strong> · just now" in page
    assert "Rejected" in page and "Approved with edits" in finn.get("/inbox/?status=all").content.decode()
    audit = finn.get(f"/audit/?request={req.pk}").content.decode()
    assert ">Pay the dentist</bdi></a>" in audit and "approvals needed" in audit and "required:" not in audit
    assert "UTC" in audit


@pytest.mark.django_db(transaction=True)
async def test_presence_who_else_has_the_request_open(demo):
    req = await sync_to_async(make_request)("alice", group="reviewers")

    def comm(name):
        c = WebsocketCommunicator(URLRouter(inbox_ws), "/ws/inbox/")
        c.scope["user"] = demo[name]
        return c

    finn, rita, bob_tab = comm("finn"), comm("rita"), comm("finn")
    for c in (finn, rita, bob_tab):
        assert (await c.connect())[0]
    told = {}

    async def tabs_seen(c, count):
        """The tabs c has been told are viewing (joined at once, two may hear of each other twice)."""
        seen = told.setdefault(id(c), {})
        while len(seen) < count:
            m = await c.receive_json_from(timeout=5)
            if m["type"] != "approval.viewers":
                continue  # the request's own notice
            assert m["id"] == req.pk and m["event"] == "join"
            seen[m["key"]] = m["who"]
        return seen

    await finn.send_json_to({"type": "viewing", "id": req.pk})
    await rita.send_json_to({"type": "viewing", "id": req.pk})
    assert list((await tabs_seen(finn, 1)).values()) == ["rita"]
    assert list((await tabs_seen(rita, 1)).values()) == ["finn"]
    # finn's second tab: rita sees two tabs of finn's; finn is not told about himself
    await bob_tab.send_json_to({"type": "viewing", "id": req.pk})
    assert list((await tabs_seen(bob_tab, 1)).values()) == ["rita"]
    rita_sees = await tabs_seen(rita, 2)
    assert sorted(rita_sees.values()) == ["finn", "finn"]
    await rita.disconnect()

    async def leave_of(c):
        while True:
            m = await c.receive_json_from(timeout=5)
            if m.get("event") == "leave":
                return m

    assert (await leave_of(finn))["who"] == "rita"
    assert (await leave_of(bob_tab))["who"] == "rita"
    assert await finn.receive_nothing(timeout=0.3)  # no word about his own second tab
    # a request one may not see: no presence at all
    other = await sync_to_async(make_request)("alice", group="oncall")
    await bob_tab.send_json_to({"type": "viewing", "id": other.pk})
    assert await bob_tab.receive_nothing(timeout=0.3)
    assert await finn.receive_nothing(timeout=0.3)
    # a frame of another type is answered (it was ignored), and the socket goes on
    await finn.send_json_to({"type": "view", "id": req.pk})
    reply = await finn.receive_json_from(timeout=5)
    assert reply["type"] == "error" and reply["code"] == "unknown_type" and "viewing" in reply["message"]
    for c in (finn, bob_tab):
        await c.disconnect()


@pytest.mark.django_db
@pytest.mark.parametrize("held", ["\u00b2", "1\u00b2", "9" * 25, "\u0661\u0662"])
def test_a_mangled_held_id_is_ignored(login, undo_window, held):
    # "²".isdigit() is true but int() refuses it, and 25 digits overflow the database's integer:
    # both were 500s; a mangled link still shows its page, and Undo recalls nothing
    req = make_request("alice", description="Pay the rent")
    kept = services.hold(req.pk, user("finn"), "approve")
    finn = login("finn")
    assert finn.get(f"/inbox/?held={held}").status_code == 200
    assert finn.get(f"/inbox/{req.pk}/?held={held}").status_code == 200
    undone = finn.post("/inbox/undo/", {"held": f"{held},{held}"}, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert undone.status_code == 200 and undone.json() == {"recalled": [], "too_late": True}
    assert finn.post("/inbox/undo/", {"held": held}).status_code == 302
    assert HeldDecision.objects.filter(pk=kept.pk).exists()


@pytest.mark.django_db(transaction=True)
async def test_an_open_inbox_joins_its_groups_again_after_the_layer_lost_them(demo, monkeypatch):
    """channels_redis drops a membership after its group_expiry (a day) and an emptied Redis drops them
    all: the inbox socket stayed open and heard no new request, no logout, until the page was reloaded."""
    import redis
    from channels.layers import get_channel_layer
    from django.conf import settings

    from agui_project import sockets
    from approvals import notify

    monkeypatch.setattr(sockets, "REJOIN_SECONDS", 0.05)
    finn = WebsocketCommunicator(URLRouter(inbox_ws), "/ws/inbox/")
    finn.scope["user"] = demo["finn"]
    assert (await finn.connect())[0]
    layer = get_channel_layer()
    memberships = redis.Redis.from_url(settings.REDIS_URL)
    memberships.delete(*memberships.keys(f"{layer.prefix}:group:*"))  # emptied, or every membership expired

    notice = {"type": "inbox.notice", "notice": {"type": "approval.requested", "id": "after-flush"}}
    for _ in range(100):  # each try waits for a frame; the socket joins again within a few tries
        await layer.group_send(notify.group_for_user(demo["finn"].pk), notice)
        if not await finn.receive_nothing(timeout=0.2):
            break
    assert await finn.receive_json_from() == notice["notice"]
    await finn.disconnect()


@pytest.mark.django_db
def test_a_reviewer_reads_what_a_tool_did_or_why_it_did_not_run_never_the_models_instructions(login, demo):
    """The excerpt and the whole conversation showed a rejected call's message as the model reads it
    ("Adjust your plan: do not try to reach the same goal another way..."); they say it as the chat's
    card does, with the reviewer's words, in the reader's language; a lookup's result is still the evidence."""
    from agents.models import Message, Run, Thread, ToolCall
    from agents.runtime.runner import conversation_excerpt, rejection_text

    thread = Thread.objects.create(owner=demo["alice"], agent="support")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING)
    asked = [{"id": i, "type": "function", "function": {"name": n, "arguments": '{"order_id": "12345"}'}}
             for i, n in (("c-look", "lookup_order_details"), ("c-refund", "submit_refund"))]
    said = Message.objects.create(thread=thread, seq=1, role="assistant", content="", tool_calls=asked, run=run)
    looked = ToolCall.objects.create(id="c-look", run=run, thread=thread, message=said, name="lookup_order_details",
                                     arguments={"order_id": "12345"}, status=ToolCall.Status.SUCCEEDED,
                                     result='{"order_id": "12345", "status": "delivered"}')
    refused = ToolCall.objects.create(id="c-refund", run=run, thread=thread, message=said, name="submit_refund",
                                      arguments={"order_id": "12345"}, status=ToolCall.Status.REJECTED,
                                      feedback="It arrived; ask for a photo first.")
    Message.objects.create(thread=thread, seq=2, role="tool", content=looked.result, tool_call_id="c-look", run=run)
    Message.objects.create(thread=thread, seq=3, role="tool", content=rejection_text(refused), tool_call_id="c-refund",
                           run=run)
    Message.objects.create(thread=thread, seq=4, role="tool", content="from the browser: done", tool_call_id="c-app",
                           run=run)  # a client's own tool: no call of ours behind it

    excerpt = conversation_excerpt(thread)
    results = [m for m in excerpt if m["role"] == "tool"]
    assert [m["content"] for m in results] == [
        '{"order_id": "12345", "status": "delivered"}',
        "Rejected, so it was not run. The reviewer wrote: “It arrived; ask for a photo first.”",
        "from the browser: done"]
    assert "said" not in results[0] and "said" not in results[2]
    assert results[1]["said"]["fr"]["content"] == (
        "Rejeté, donc non exécuté. L’approbateur a écrit : « It arrived; ask for a photo first. »")

    req = make_request("alice", tool="submit_refund", agent="support", group="support", thread=thread.pk,
                       arguments={"order_id": "12345", "amount": 129.99, "refund_description": "Never arrived"},
                       excerpt=excerpt)
    for url in (f"/inbox/{req.pk}/", f"/inbox/{req.pk}/conversation/"):
        page = login("rita").get(url).content.decode()
        assert "Adjust your plan" not in page and "explicitly rejected" not in page, url
        assert "Rejected, so it was not run. The reviewer wrote: “It arrived; ask for a photo first.”" in page, url
        assert "delivered" in page and "from the browser: done" in page, url
        french = login("rita").get(url, HTTP_ACCEPT_LANGUAGE="fr").content.decode()
        assert "Rejeté, donc non exécuté. L’approbateur a écrit : « It arrived; ask for a photo first. »" in french, url


@pytest.mark.django_db(transaction=True)
def test_a_call_the_model_gave_no_reason_for_says_so_in_the_readers_language(login, demo, fake_llm):
    """The runner stored "The agent gave no reason." as the request's reason: English on every reviewer's page."""
    from agents import services as agent_services
    from tests.helpers import run_prompt

    fake_llm.push({"tool_calls": [{"id": "call_quiet", "name": "transfer_money", "arguments": json.dumps(
        {"from_account": "1234567890", "to_account": "0987654321", "amount": 20})}]})
    thread = agent_services.create_thread(demo["alice"], "banking")
    run_prompt(thread, demo["alice"], "Send bob 20")
    req = ApprovalRequest.objects.get(thread_ref=thread.pk)
    assert req.reason == ""
    page = login("finn").get(f"/inbox/{req.pk}/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "gave no reason" not in page
    assert '<dt>Pourquoi l’agent demande</dt><dd class="prewrap"><bdi>—</bdi></dd>' in page
