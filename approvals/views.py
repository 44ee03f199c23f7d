"""The inbox pages: the list (live through /ws/inbox/) and the detail with the decision form."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render

from . import services
from .access import is_reviewer
from .models import ApprovalRequest

STATUS_FILTERS = {
    "pending": [ApprovalRequest.Status.PENDING],
    "decided": [s for s in ApprovalRequest.Status.values if s != ApprovalRequest.Status.PENDING],
    "all": None,
}


def reviewer_required(view):
    @login_required
    def wrapped(request, *args, **kwargs):
        if not is_reviewer(request.user):
            raise PermissionDenied("the inbox is for reviewers")
        return view(request, *args, **kwargs)

    return wrapped


@reviewer_required
def inbox(request):
    status = request.GET.get("status", "pending")
    if status not in STATUS_FILTERS:
        status = "pending"
    visible = services.visible_to(request.user)
    qs = visible
    if STATUS_FILTERS[status]:
        qs = qs.filter(status__in=STATUS_FILTERS[status])
    page = Paginator(qs.order_by("-created_at"), 50).get_page(request.GET.get("page"))
    pending_count = visible.filter(status=ApprovalRequest.Status.PENDING).count()
    params = request.GET.copy()
    params.pop("partial", None)
    context = {"approvals": page, "page": page, "status": status, "pending_count": pending_count,
               "query_string": params.urlencode()}
    if request.GET.get("partial") == "rows":
        response = render(request, "approvals/_rows.html", context)
        response["X-Pending-Count"] = str(pending_count)
        return response
    return render(request, "approvals/inbox.html", context)


def form_fields(schema, arguments, errors):
    """One input per top-level argument, typed from the tool's JSON schema."""
    fields = []
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    for name, prop in props.items():
        value = arguments.get(name, prop.get("default"))
        kind = prop.get("type")
        if "enum" in prop:
            kind = "enum"
        elif kind not in {"number", "integer", "string", "boolean"}:
            kind = "json"
        shown = json.dumps(value) if kind == "json" else ("" if value is None else str(value).lower() if kind == "boolean" else str(value))
        fields.append({
            "name": name, "label": name.replace("_", " "), "kind": kind, "value": shown,
            "choices": prop.get("enum", []), "error": "; ".join(errors.get(name, [])) or None,
            "required": name in required, "description": prop.get("description", ""),
        })
    return fields


def parse_fields(schema, post):
    """Form strings -> typed arguments; raises ValueError with {field: [msg]} on bad input."""
    out, errors = {}, {}
    for name, prop in schema.get("properties", {}).items():
        key = f"arg__{name}"
        if key not in post:
            continue
        raw = post[key].strip()
        kind = "enum" if "enum" in prop else prop.get("type")
        try:
            if raw == "" and name not in schema.get("required", []):
                continue
            if kind == "number":
                out[name] = float(raw)
            elif kind == "integer":
                out[name] = int(raw)
            elif kind == "boolean":
                out[name] = raw.lower() in {"true", "1", "yes", "on"}
            elif kind in ("string", "enum"):
                out[name] = raw
            else:
                out[name] = json.loads(raw)
        except (ValueError, json.JSONDecodeError):
            errors[name] = [f"not a valid {kind}"]
    if errors:
        raise ValueError(errors)
    return out


@reviewer_required
def detail(request, approval_id):
    approval = services.visible_to(request.user).filter(pk=approval_id).select_related("decided_by").first()
    if approval is None:
        raise Http404("no such request")
    current = approval.final_arguments if approval.final_arguments is not None else approval.arguments
    errors, form_error, feedback_error = {}, None, None
    feedback_value = ""
    if request.method == "POST":
        action = request.POST.get("action")
        feedback_value = request.POST.get("feedback", "")
        try:
            edited = parse_fields(approval.schema, request.POST) if action == "approve" else None
            decided = services.decide(approval.pk, request.user, action, arguments=edited, feedback=feedback_value)
        except ValueError as exc:
            errors, form_error = exc.args[0], "Some arguments are not valid."
            current = {**current, **{k: request.POST.get(f"arg__{k}") for k in errors}}
        except services.DecisionError as exc:
            errors = exc.errors if isinstance(exc, services.InvalidArguments) else {}
            feedback_error = "; ".join(exc.errors.get("feedback", [])) or None
            form_error = exc.message
            if isinstance(exc, services.InvalidArguments):
                current = {**current, **{k: request.POST.get(f"arg__{k}", current.get(k)) for k in approval.schema.get("properties", {})}}
        else:
            messages.success(request, f"{decided.tool_name}: {decided.get_status_display()}.")
            return redirect("/inbox/")
        approval.refresh_from_db()
    return render(request, "approvals/detail.html", {
        "approval": approval,
        "arguments_json": json.dumps(approval.arguments, indent=2),
        "decisions": approval.decisions.select_related("user"),
        "fields": form_fields(approval.schema, current, errors),
        "can_decide": approval.is_pending and services.can_decide(request.user, approval),
        "form_error": form_error,
        "feedback_value": feedback_value,
        "feedback_error": feedback_error,
    }, status=400 if form_error else 200)
