"""The reviewer pages: the inbox list (filters, search, keyset pages, live through /ws/inbox/),
bulk decisions, the detail page with the arguments editor, and the stats page.

Thin: reads go through approvals.inbox / approvals.stats, every change through approvals.services.
"""

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from agui_project import jsoncheck
from state import services as state_services

from . import inbox as inbox_query
from . import registry, selectors, services, stats
from .access import is_reviewer
from .models import ApprovalRequest, AuditEvent, Decision, arguments_hash

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
            raise PermissionDenied("the inbox is for reviewers")
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
    }
    if request.GET.get("partial") == "rows":
        response = render(request, "approvals/_rows.html", context)
        response["X-Pending-Count"] = str(waiting)
        response["X-Result-Count"] = f"{result.total}{'+' if result.total_capped else ''}"
        response["X-Next-After"] = result.next_after
        return response
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
        error = "Select at least one request."
    elif decision not in Decision.Kind.values:
        error = "Choose approve or reject."
    elif decision == Decision.Kind.REJECT and not feedback:
        # required for every rejection from the inbox: the agent is told why
        error = "Give a reason to reject: the agent sees it."
    if error:
        if wants_json(request):
            return JsonResponse({"message": error, "code": "invalid"}, status=400)
        messages.error(request, error)
        return redirect(safe_next(request))
    results = services.bulk_decide(ids, request.user, decision, feedback=feedback,
                                   visible=selectors.visible_requests(user=request.user))
    ok = [r for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    if wants_json(request):
        return JsonResponse({"results": results, "succeeded": len(ok), "failed": len(failed)})
    verb = "approved" if decision == Decision.Kind.APPROVE else "rejected"
    if ok:
        messages.success(request, f"{len(ok)} request{'s' if len(ok) != 1 else ''} {verb}.")
    for r in failed:
        messages.error(request, f"{r['id'][:8]}: {r['message']}")
    return redirect(safe_next(request))


# --- the detail -------------------------------------------------------------------------------


def thread_state(approval):
    """The thread's shared state (the state app), committed data and version."""
    if not approval.thread_ref:
        return None
    data, version = state_services.snapshot(f"thread:{approval.thread_ref}")
    return {"json": json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False), "version": version,
            "empty": not data}


def audit_rows(events):
    """Audit events with their before/after as one line of JSON each (the detail page, /audit/)."""
    return [{"event": e, "before": _compact(e.before), "after": _compact(e.after)} for e in events]


def _compact(value):
    if value in (None, {}, []):
        return ""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _detail_context(request, approval):
    decisions = list(approval.decisions.select_related("user"))
    approval._prefetched_objects_cache = {"decisions": decisions}  # quorum reads them without a query
    mine = [d for d in decisions if d.user_id == request.user.pk and d.decision == Decision.Kind.APPROVE
            and not d.withdrawn_at and d.arguments_hash == arguments_hash(approval.current_arguments)]
    defaults = registry.get(approval.tool_name)
    return {
        "approval": approval,
        "quorum": selectors.quorum(approval=approval),
        "decisions": decisions,
        "audit": audit_rows(AuditEvent.objects.filter(request=approval).select_related("actor")
                            .order_by("created_at", "id")),
        "can_decide": approval.is_pending and services.can_decide(request.user, approval),
        "already_approved": bool(mine),
        "editable": defaults is not None,
        "pending_count": inbox_query.pending_mine_count(request.user),
    }


@reviewer_required
def detail(request, approval_id):
    approval = selectors.visible_requests(user=request.user).filter(pk=approval_id).select_related("decided_by").first()
    if approval is None:
        raise Http404("no such request")
    if request.GET.get("partial") == "live":  # the panels a notice about this request refreshes
        return render(request, "approvals/_detail_live.html", _detail_context(request, approval))
    current = approval.current_arguments
    errors, form_error, feedback_error = {}, None, None
    feedback_value, draft_text = "", None
    if request.method == "POST":
        action = request.POST.get("action")
        feedback_value = request.POST.get("feedback", "")[:FEEDBACK_MAX]
        draft_text = request.POST.get("arguments_json")
        try:
            edited = None
            if action == "approve" and draft_text is not None and draft_text.strip():
                edited = _parse_arguments(draft_text)
                if edited == current:
                    edited = None  # unchanged: a plain approval (also for tools the engine cannot validate)
            decided = services.decide(approval.pk, request.user, action, arguments=edited, feedback=feedback_value)
        except services.DecisionError as exc:
            errors = exc.errors if isinstance(exc, services.InvalidArguments) else {}
            feedback_error = "; ".join(exc.errors.get("feedback", [])) or None
            form_error = exc.message
        else:
            if decided.status == ApprovalRequest.Status.PENDING:
                q = selectors.quorum(approval=decided)
                messages.success(request, f"{decided.tool_name}: your approval is recorded "
                                          f"({q['have']} of {q['required']}).")
            else:
                messages.success(request, f"{decided.tool_name}: {decided.get_status_display()}.")
            return redirect(safe_next(request))
        approval.refresh_from_db()
    context = _detail_context(request, approval)
    context.update({
        "state": thread_state(approval),
        "excerpt": (approval.context or {}).get("excerpt") or [],
        "objects": (approval.context or {}).get("objects") or [],  # whose accounts, orders, ... it touches
        "schema": approval.schema or {},
        "draft_text": (draft_text if draft_text and draft_text.strip()
                       else json.dumps(current, indent=2, ensure_ascii=False)),
        "errors": errors,
        "error_items": sorted(errors.items()),
        "root_errors": errors.get("__root__", []),
        "form_error": form_error,
        "feedback_value": feedback_value,
        "feedback_error": feedback_error,
        "arguments_json": json.dumps(approval.arguments, indent=2, ensure_ascii=False),
        "current_json": json.dumps(current, indent=2, ensure_ascii=False),
        "edited_before": approval.final_arguments is not None and approval.final_arguments != approval.arguments,
        "next": safe_next(request, default=""),
    })
    return render(request, "approvals/detail.html", context, status=400 if form_error else 200)


def _parse_arguments(text):
    try:
        value = jsoncheck.loads(text)  # typed JSON can hold "\ud800", which no page could show again
    except jsoncheck.Refused as exc:
        raise services.InvalidArguments(exc.refusal.message, {"__root__": [exc.refusal.message]}) from exc
    except json.JSONDecodeError as exc:
        raise services.InvalidArguments(
            "The arguments are not valid JSON.",
            {"__root__": [f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]}) from exc
    if not isinstance(value, dict):
        raise services.InvalidArguments("The arguments must be a JSON object.",
                                        {"__root__": ["must be a JSON object"]})
    return value


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
        "outcome_labels": [("approved", "Approved"), ("modified", "With edits"), ("rejected", "Rejected"),
                           ("expired", "Expired")],
    })
