"""The reviewer pages: the inbox list (filters, search, keyset pages, live through /ws/inbox/),
bulk decisions, the detail page with the arguments editor, and the stats page.

Thin: reads go through approvals.inbox / approvals.stats, every change through approvals.services.
"""

import json
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_POST

from agui_project import jsoncheck
from agui_project.queries import one
from agui_project.visible import json_escapes
from people import selectors as people_selectors
from state import services as state_services

from . import argument_errors, exports, ran, reader_schema, refusals, registry, selectors, services, stats
from . import inbox as inbox_query
from .access import is_admin, is_reviewer, same_person
from .filters import parse_row_id
from .models import ApprovalRequest, AuditEvent, Decision, HeldDecision, arguments_hash, said
from .templatetags.inbox_tags import pretty_json

# kept for bench/djtasks.py, which EXPLAINs these filters
STATUS_FILTERS = {
    "pending": [ApprovalRequest.Status.PENDING],
    "decided": [s for s in ApprovalRequest.Status.values if s != ApprovalRequest.Status.PENDING],
    "all": None,
}
FEEDBACK_MAX = 5000


def reviewer_required(view):
    @login_required
    def wrapped(request, *args, **kwargs):
        if not is_reviewer(request.user):
            raise PermissionDenied(_("The inbox is for reviewers."))
        return view(request, *args, **kwargs)

    return wrapped


def wants_json(request):
    return request.headers.get("X-Requested-With") == "XMLHttpRequest" or "application/json" in request.headers.get(
        "Accept", "")


def safe_next(request, default="/inbox/"):
    """Back to where the reviewer was (their filters and page), never off this site."""
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target.startswith("/inbox/") and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return default


# --- the list ---------------------------------------------------------------------------------


@reviewer_required
def inbox(request):
    query = inbox_query.parse(request.GET)
    result = inbox_query.page(request.user, query)
    # the default page counts exactly what the title badge counts: no second count
    same = query.is_default and not result.total_capped
    waiting = result.total if same else inbox_query.pending_mine_count(request.user)
    params = query.params(after="", before="")
    context = {
        "filter_qs": urlencode(params),
        "no_thread_qs": urlencode(query.params(after="", before="", thread="")),
        "next_qs": urlencode({**params, "after": result.next_after}) if result.next_after else "",
        "prev_qs": urlencode({**params, "before": result.prev_before}) if result.prev_before else "",
        "query": query,
        "page": result,
        "rows": result.rows,
        "pending_count": waiting,
        "filter_params": params,
        "choices": inbox_query.choices(request.user),
        "scopes": inbox_query.SCOPES,
        "statuses": inbox_query.STATUSES,
        "ages": inbox_query.AGES,
        "risks": inbox_query.RISKS,
        "bulk_limit": services.BULK_LIMIT,
        "selectable": any(r["can_decide"] for r in result.rows),
        "undo": undo_toast(request),
        "inbox_zero": query.is_default and not result.rows,
    }
    if request.GET.get("partial") == "rows":
        response = render(request, "approvals/_rows.html", context)
        response["X-Pending-Count"] = str(waiting)
        response["X-Result-Count"] = f"{result.total}{'+' if result.total_capped else ''}"
        response["X-Next-After"] = result.next_after
        return response
    context["inbox_keys"] = people_selectors.inbox_keys_on(request.user)  # the reviewer may switch them off
    return render(request, "approvals/inbox.html", context)


@reviewer_required
def summary(request):
    """The title badge's count, and whether one new request waits for this reviewer (notifications)."""
    data = {"waiting": inbox_query.pending_mine_count(request.user)}
    approval_id = request.GET.get("id", "")[:64]
    if approval_id:
        data["for_me"] = inbox_query.is_waiting_for(request.user, approval_id)
    return JsonResponse(data)


@require_POST
@reviewer_required
def bulk(request):
    """Decide one or many requests with one reason (the list's checkboxes, and a/r on a row)."""
    ids = [i for i in request.POST.getlist("ids") if i][:services.BULK_LIMIT]
    decision = request.POST.get("decision", "")
    feedback = request.POST.get("feedback", "").strip()[:FEEDBACK_MAX]
    error = None
    if not ids:
        error = _("Select at least one request.")
    elif decision not in Decision.Kind.values:
        error = _("Choose approve or reject.")
    elif decision == Decision.Kind.REJECT and not feedback:
        # required for every rejection from the inbox: the agent is told why
        error = _("Give a reason to reject: the agent sees it.")
    elif decision == Decision.Kind.RESPOND and not feedback:
        error = _("Write your guidance: the agent reads it instead of running the call.")
    if error:
        if wants_json(request):
            return JsonResponse({"message": error, "code": "invalid"}, status=400)
        messages.error(request, error)
        return redirect(safe_next(request))
    # held for the undo window, then sent by the server (a closed tab loses nothing)
    results = services.hold_many(ids, request.user, decision, feedback=feedback,
                                 visible=selectors.visible_requests(user=request.user))
    ok = [r for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    held = [str(r["held"]) for r in ok if r.get("held")]
    if wants_json(request):
        return JsonResponse({"results": results, "succeeded": len(ok), "failed": len(failed),
                             "held": held, "undo_seconds": settings.AGUI_UNDO_SECONDS})
    if ok and not held:
        done = {Decision.Kind.APPROVE: ngettext("%(count)s request approved.", "%(count)s requests approved.", len(ok)),
                Decision.Kind.RESPOND: ngettext("%(count)s request answered with guidance.",
                                                "%(count)s requests answered with guidance.", len(ok))}.get(
            decision, ngettext("%(count)s request rejected.", "%(count)s requests rejected.", len(ok)))
        messages.success(request, done % {"count": len(ok)})
    names = {r["id"]: said(r, "description") for r in selectors.visible_requests(user=request.user).filter(
        pk__in=[r["id"] for r in failed]).values("id", "description", "said")}
    for r in failed:
        messages.error(request, _("%(what)s: %(why)s") % {"what": names.get(r["id"]) or _("A request"),
                                                           "why": r["message"]})
    return redirect(_with_held(safe_next(request), held))


def _with_held(url, held_ids):
    if not held_ids:
        return url
    return f"{url}{'&' if '?' in url else '?'}held={','.join(held_ids)}"


def _held_ids(params):
    """The held decisions' ids a link or the Undo form names; a mangled one is left out."""
    ids = (parse_row_id(i) for i in params.get("held", "").split(","))
    return [i for i in ids if i is not None][:services.BULK_LIMIT]


def undo_toast(request):
    """The Undo of the decisions the previous page held (?held=ids), while their window is open."""
    ids = _held_ids(request.GET)
    rows = selectors.held_by(user=request.user, ids=ids) if ids else []
    if not rows:
        return None
    verb = {"approve": _("Approved"), "reject": _("Rejected"), "respond": _("Answered with guidance")}[rows[0].decision]
    outcome = verb
    if len(rows) == 1:
        req = rows[0].request
        what = said(req, "description") or req.tool_name
        text = _("%(what)s: %(why)s") % {"what": verb, "why": what}
        if rows[0].decision == "approve" and rows[0].arguments is not None:
            # what was approved, not the agent's headline: it names the amount it asked ("500.00"), not
            # the 450 the reviewer approved
            edits = reader_schema.changes(req.tool_name, req.current_arguments, rows[0].arguments)
            outcome = text = _("Approved with edits: %(changes)s") % {"changes": edits} if edits else _("Approved with edits")
    else:
        what = ngettext("%(count)s request", "%(count)s requests", len(rows)) % {"count": len(rows)}
        text = _("%(what)s: %(why)s") % {"what": verb, "why": what}
    return {"ids": ",".join(str(r.pk) for r in rows), "text": text, "outcome": outcome,
            "due_at": max(r.due_at for r in rows), "request_id": rows[0].request_id,
            # which request a later "Not sent" is about, on a page that is not its own
            "what": what if len(rows) == 1 else ""}


@require_POST
@reviewer_required
def undo(request):
    """Recall held decisions (the Undo button, or u): the requests wait for this reviewer again."""
    ids = _held_ids(request.POST)
    recalled = services.undo(ids, request.user)
    if wants_json(request):
        return JsonResponse({"recalled": recalled, "too_late": not recalled})
    if not recalled:
        messages.error(request, _("Too late to undo: the decision has been sent."))
        return redirect(safe_next(request))
    messages.info(request, _("Undone: nothing was sent.") if len(recalled) == 1
                  else _("Undone: %(count)s requests wait for you again.") % {"count": len(recalled)})
    return redirect(f"/inbox/{recalled[0]}/" if len(recalled) == 1 else safe_next(request))


# --- the detail -------------------------------------------------------------------------------


def thread_state(approval):
    """The thread's shared state (the state app), committed data and version."""
    if not approval.thread_ref:
        return None
    data, version = state_services.snapshot(f"thread:{approval.thread_ref}")
    return {"json": json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False), "version": version,
            "empty": not data}


def audit_rows(events, user):
    """Audit events with their before/after as one line of JSON each (the detail page, /audit/), as
    `user` may read them: outside the admins, without the reviewers' addresses (exports.audit_for, as
    the API and the CSV leave them out)."""
    admin, events = is_admin(user), list(events)
    for e in events:  # on the instances, so the page's filters (its change lines) read them so too
        e.before, e.after = exports.audit_for(e.before, admin), exports.audit_for(e.after, admin)
    return [{"event": e, "before": _compact(e.before), "after": _compact(e.after)} for e in events]


def _compact(value):
    if value in (None, {}, []):
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _detail_context(request, approval):
    decisions = list(approval.decisions.select_related("user"))
    approval._prefetched_objects_cache = {"decisions": decisions}  # quorum reads them without a query
    for d in decisions:  # Decision.with_edits reads the request: this one, not a query per decision
        d.request = approval
    # an approval by another account of this person's (their address) is theirs too: the quorum counts it so
    mine = [d for d in decisions if same_person(request.user, d.user) and d.decision == Decision.Kind.APPROVE
            and not d.withdrawn_at and d.arguments_hash == arguments_hash(approval.current_arguments)]
    defaults = registry.get(approval.tool_name)
    held = selectors.held_by(user=request.user, request=approval) if approval.is_pending else None
    # tools act for the requester: one whose account is switched off may be rejected, not approved
    requester_off = approval.is_pending and not approval.requester.is_active
    return {
        "approval": approval,
        "quorum": selectors.quorum(approval=approval),
        "decisions": decisions,
        "audit": audit_rows(AuditEvent.objects.filter(request=approval).select_related("actor")
                            .order_by("created_at", "id"), request.user),
        "can_decide": approval.is_pending and services.can_decide(request.user, approval) and held is None,
        "held": held,  # this reviewer's decision, inside its undo window
        "already_approved": bool(mine),
        # an outside agent's tool is edited against the schema it was asked with (services.decide)
        "editable": defaults is not None or bool(approval.schema),
        # the answers this tool's policy offers: the form shows only those buttons
        "offers": {d: approval.allows(d) and not (requester_off and d in ("approve", "edit"))
                   for d in ("approve", "edit", "reject", "respond")},
        "requester_off": requester_off,
        "pending_count": inbox_query.pending_mine_count(request.user),
        "ran": ran.outcome(approval),  # an approved call that failed is not left reading as done
    }


@reviewer_required
def detail(request, approval_id):
    approval = one(selectors.visible_requests(user=request.user).filter(pk=approval_id).select_related("decided_by"))
    if approval is None:
        raise Http404("no such request")
    if request.GET.get("partial") == "live":  # the panels a notice about this request refreshes
        return render(request, "approvals/_detail_live.html", _detail_context(request, approval))
    if request.GET.get("partial") == "preview":  # the list's reading pane
        context = {**_detail_context(request, approval), **_evidence(approval)}
        return render(request, "approvals/_preview.html", context)
    current = approval.current_arguments
    errors, form_error, feedback_error = {}, None, None
    feedback_value, draft_text = "", None
    if request.method == "POST" and request.POST.get("action") == "check":
        return JsonResponse({"refusal": _draft_refusal(approval, request.POST.get("arguments_json", ""))})
    if request.method == "POST":
        action = request.POST.get("action")
        feedback_value = request.POST.get("feedback", "")[:FEEDBACK_MAX]
        draft_text = request.POST.get("arguments_json")
        seen = request.POST.get("seen", "")[:64]  # the arguments the page showed (their digest)
        try:
            edited = None
            if action == "approve" and draft_text is not None and draft_text.strip():
                edited = _parse_arguments(draft_text)
                if edited == current or (seen and arguments_hash(edited) == seen):
                    edited = None  # unchanged: a plain approval (also for tools the engine cannot validate)
            # held for the undo window (sent by the server, even if this tab closes)
            decided = services.hold(approval.pk, request.user, action, arguments=edited, feedback=feedback_value,
                                    seen=seen or None)
        except services.DecisionError as exc:
            if wants_json(request):  # the page's script sends the form again the plain way to show why
                return JsonResponse({"message": exc.message, "code": exc.code}, status=400)
            errors = exc.errors if isinstance(exc, services.InvalidArguments) else {}
            feedback_error = "; ".join(exc.errors.get("feedback", [])) or None
            form_error = exc.message
            if isinstance(exc, services.ArgumentsChanged):
                draft_text = None  # the draft was of arguments that no longer stand: show the current ones
        else:
            held = []
            if isinstance(decided, HeldDecision):
                held = [str(decided.pk)]
            elif decided.status == ApprovalRequest.Status.PENDING:
                q = selectors.quorum(approval=decided)
                messages.success(request, _("%(tool)s: your approval is recorded (%(have)s of %(required)s).") % {
                    "tool": decided.tool_name, "have": q["have"], "required": q["required"]})
            else:
                messages.success(request, _("%(what)s: %(why)s") % {
                    "what": decided.tool_name, "why": decided.get_status_display().lower()})
            # triage: on to the next request waiting for this reviewer (the list at inbox zero)
            following = inbox_query.next_waiting(request.user, approval)
            target = f"/inbox/{following.pk}/" if following else "/inbox/"
            if following and safe_next(request, default=""):
                target += "?" + urlencode({"next": safe_next(request)})
            elif not following:
                target = safe_next(request)
            if wants_json(request):  # sent by the page's script: it goes there itself
                return JsonResponse({"location": _with_held(target, held)})
            return redirect(_with_held(target, held))
        approval.refresh_from_db()
    context = _detail_context(request, approval)
    context.update(_evidence(approval))
    labels = reader_schema.labels(approval.tool_name)
    defaults = registry.get(approval.tool_name)
    context.update({
        "undo": undo_toast(request),
        "state": thread_state(approval),
        "schema": reader_schema.described(approval.tool_name, approval.schema or {}),
        "labels": labels,
        "tool_checks": bool(defaults and defaults.refuses),  # the diff preview asks what the tool refuses
        # text-direction controls as JSON escapes ("\\u202e"): the same value, shown instead of obeyed
        "draft_text": json_escapes(draft_text if draft_text and draft_text.strip()
                                   else json.dumps(current, indent=2, ensure_ascii=False)),
        "errors": errors,
        # each field by the label the editor shows it under ("Amount"), the key where it has none
        # the arguments as a whole ("__root__", a name of ours) are said under the JSON box (root_errors)
        "error_items": [(labels.get(path), path, msgs) for path, msgs in sorted(errors.items()) if path != "__root__"],
        "root_errors": errors.get("__root__", []),
        "form_error": form_error,
        "feedback_value": feedback_value,
        "feedback_error": feedback_error,
        "arguments_json": pretty_json(approval.arguments),  # read-only: 500.0 written 500 (as_read)
        "current_json": pretty_json(current),
        "seen": arguments_hash(current),
        "edited_before": approval.edited,
        "next": safe_next(request, default=""),
        "inbox_keys": people_selectors.inbox_keys_on(request.user),  # the reviewer may switch them off
    })
    return render(request, "approvals/detail.html", context, status=400 if form_error else 200)


def _draft_refusal(approval, text):
    """What the tool says it will refuse of the arguments in the editor (the diff preview), or ""."""
    if not approval.is_pending:
        return ""
    try:
        draft = _parse_arguments(text) if text.strip() else approval.current_arguments
    except services.InvalidArguments:  # the editor says what is wrong with the JSON
        return ""
    return refusals.of_draft(approval, draft)


def _evidence(approval):
    """What a reviewer judges by beside the arguments: the conversation up to the call (tool results
    included, less the assistant's sentence that is shown as its reason) and the objects the call
    touches, as they are now."""
    context = approval.context or {}
    reason = (approval.reason or "").strip()
    excerpt = [m for m in context.get("excerpt") or []
               if not (m.get("role") == "assistant" and reason and (m.get("content") or "").strip() == reason)]
    return {
        "excerpt": excerpt,
        "objects": current_objects(approval),
        "conversation_url": f"/inbox/{approval.pk}/conversation/" if approval.thread_ref else "",
    }


def current_objects(approval):
    """Whose accounts, orders, ... the call acts on: asked again of the tool (their state now), else
    as recorded when the call was made."""
    recorded = (approval.context or {}).get("objects") or []
    defaults = registry.get(approval.tool_name)
    if defaults is None or defaults.authorize is None:
        return recorded
    try:
        return defaults.authorize(approval.current_arguments, approval.requester) or recorded
    except registry.ArgumentsInvalid:  # no longer the requester's: show what was recorded
        return recorded


def _parse_arguments(text):
    try:
        value = jsoncheck.loads(text)  # typed JSON can hold "\ud800", which no page could show again
    except jsoncheck.Refused as exc:
        raise services.InvalidArguments(exc.refusal.translated(), {"__root__": [exc.refusal.translated()]}) from exc
    except json.JSONDecodeError as exc:
        raise services.InvalidArguments(
            _("The arguments are not valid JSON."),
            {"__root__": [argument_errors.json_syntax(exc)]}) from exc
    except ValueError as exc:  # what json refuses beyond its grammar (an integer of more than 4300 digits): was a 500
        raise services.InvalidArguments(_("The arguments are not valid JSON."), {"__root__": [_("not valid JSON")]}) from exc
    if not isinstance(value, dict):
        raise services.InvalidArguments(_("The arguments must be a JSON object."),
                                        {"__root__": [_("must be a JSON object")]})
    twice = _named_twice(text)
    if twice is not None:
        message = _("The arguments name %(key)s twice; write each one once.") % {"key": json.dumps(twice)}
        raise services.InvalidArguments(message, {"__root__": [message]})
    return value


def _named_twice(text):
    """A key an object of the typed arguments holds twice, or None. JSON keeps the last silently: the
    reviewer who wrote "amount" twice approved the value they may have read past."""
    found = []

    def pairs(items):
        keys = [k for k, _v in items]
        if not found and len(set(keys)) != len(keys):
            found.append(next(k for i, k in enumerate(keys) if k in keys[:i]))
        return dict(items)

    json.loads(text, object_pairs_hook=pairs)  # parsed and checked already: only the keys are looked at
    return found[0] if found else None


# --- stats ------------------------------------------------------------------------------------


@reviewer_required
def stats_page(request):
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    if days not in stats.DAY_CHOICES:
        days = 30
    tool = request.GET.get("tool", "")[:100]
    agent = request.GET.get("agent", "")[:100]
    data = stats.compute(request.user, days=days, tool=tool, agent=agent)
    return render(request, "approvals/stats.html", {
        **data, "day_choices": stats.DAY_CHOICES, "choices": inbox_query.choices(request.user),
        "fast_seconds": stats.FAST_SECONDS, "pending_count": inbox_query.pending_mine_count(request.user),
        "outcome_labels": [("approved", _("Approved")), ("modified", _("With edits")), ("rejected", _("Rejected")),
                           ("expired", _("Expired"))],
    })
