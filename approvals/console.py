"""The admins' policy console (/policies/: list, edit with a rule builder, simulator, change history)
and the audit trail (/audit/: filters, keyset pages, CSV export).

Thin: policies are saved only through services.save_policy / delete_policy (validated and
audited), the simulator is approvals.simulate, the audit is read-only.
"""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils import formats
from django.utils.translation import gettext, gettext_lazy

from . import exports, policy_versions, reach, registry, rules, selectors, services, simulate
from . import inbox as inbox_query
from .access import is_admin, may_edit_policy
from .choices import MODE_LABELS
from .filters import AuditPageFilter, parse_moment, parse_row_id
from .forms import DECISION_CHOICES, PolicyForm
from .models import ApproverKind, AuditEvent, Mode, Risk, TimeoutAction, ToolPolicy
from .templatetags.inbox_tags import key_label, said_value
from .views import audit_rows, reviewer_required

POLICY_ACTIONS = [AuditEvent.Action.POLICY_CREATED, AuditEvent.Action.POLICY_CHANGED, AuditEvent.Action.POLICY_DELETED]
SIMULATE_CHOICES = (10, 25, 50, 100, 200)
# the console's words for the policy vocabulary (the stored values stay the engine's)
MODE_SHORT = {Mode.ALWAYS: gettext_lazy("always asks"), Mode.CONDITIONAL: gettext_lazy("asks by rules"), Mode.MODEL: gettext_lazy("rules, then the model"),
              Mode.NEVER: gettext_lazy("never asks"), Mode.DENY: gettext_lazy("blocked")}
OP_LABELS = {
    "eq": gettext_lazy("equals"), "ne": gettext_lazy("does not equal"), "gt": gettext_lazy("is more than"), "gte": gettext_lazy("is at least"), "lt": gettext_lazy("is less than"),
    "lte": gettext_lazy("is at most"), "in": gettext_lazy("is one of"), "not_in": gettext_lazy("is none of"), "contains": gettext_lazy("contains"),
    "matches": gettext_lazy("matches the pattern (regular expression)"), "glob": gettext_lazy("matches the wildcard (like *.txt)"),
}
ACTION_LABELS = {"gate": gettext_lazy("ask a person"), "deny": gettext_lazy("block the call"), "allow": gettext_lazy("let it run")}
NOBODY_DECIDES = {Mode.NEVER: gettext_lazy("nobody (every call runs at once)"), Mode.DENY: gettext_lazy("nobody (every call is blocked)")}
AUDIT_PAGE = 100


def admin_required(view):
    @login_required
    def wrapped(request, *args, **kwargs):
        if not is_admin(request.user):
            raise PermissionDenied(gettext("The policy console is for admins."))
        return view(request, *args, **kwargs)

    return wrapped


# --- the list ---------------------------------------------------------------------------------


@admin_required
def policy_list(request):
    last_change = {}
    for e in (AuditEvent.objects.filter(action__in=POLICY_ACTIONS).select_related("actor")
              .order_by("-created_at")[:500]):
        last_change.setdefault(e.tool_name, e)
    items, counted = [], {}  # each set of groups' deciders counted once for the whole list
    for name, policy, defaults in selectors.policies():
        items.append({"name": name, "policy": policy, "source": "policy" if policy.pk else "default",
                      "registered": defaults is not None, "rules": len(policy.conditions or []),
                      "mode_label": MODE_SHORT.get(policy.mode, policy.mode),
                      "nobody": policy.mode in NOBODY_DECIDES,  # the Mode column says what happens
                      "description": gettext(defaults.summary) if defaults and defaults.summary else "",
                      "changed": last_change.get(name),
                      "short": reach.short_quorums(policy, counted),  # approvals its groups cannot give
                      "server": (defaults.extra or {}).get("server") if defaults else None})  # from an MCP server
    return render(request, "approvals/policies.html", {"items": items, "modes": Mode.choices,
                                                        "pending_count": inbox_query.pending_mine_count(request.user)})


# --- the edit page: save, revert, simulate ------------------------------------------------------


def _paths_for(schema):
    """Argument paths the rule builder suggests (args.amount, args.steps.0.status, ...)."""
    out = []
    defs = (schema or {}).get("$defs", {})

    def walk(node, prefix, depth):
        while isinstance(node, dict) and "$ref" in node:
            node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
        if not isinstance(node, dict) or depth > 4:
            return
        for name, prop in (node.get("properties") or {}).items():
            path = f"{prefix}.{name}"
            out.append(path)
            target = prop
            while isinstance(target, dict) and "$ref" in target:
                target = defs.get(target["$ref"].rsplit("/", 1)[-1], {})
            if isinstance(target, dict) and target.get("type") == "array":
                walk(target.get("items", {}), f"{path}.0", depth + 1)
            else:
                walk(target, path, depth + 1)

    walk(schema or {}, "args", 0)
    return out + [f"user.{f}" for f in rules.USER_FIELDS] + ["agent", "thread", "tool"]


def history(tool_name, limit=50):
    """The policy's changes, newest first, each with the fields that changed (before -> after)."""
    events = (AuditEvent.objects.filter(tool_name=tool_name, action__in=POLICY_ACTIONS)  # audit_tool_idx
              .select_related("actor").order_by("-created_at", "-id")[:limit])
    out = []
    for e in events:
        before, after = e.before or {}, e.after or {}
        fields = sorted(set(before) | set(after), key=lambda f: (f != "mode", f))
        changes = [{"field": key_label(f), "before": said_value(f, before.get(f)), "after": said_value(f, after.get(f))}
                   for f in fields if before.get(f) != after.get(f)]
        out.append({"event": e, "changes": changes})
    return out


@admin_required
def policy_edit(request, tool_name):
    current = selectors.policy_for(tool_name=tool_name)
    if current is None:
        raise Http404("no policy or registered tool by that name")
    defaults = registry.get(tool_name)
    errors, simulation, limit, confirm_loosening, stale = {}, None, 50, "", None
    action = request.POST.get("action", "") if request.method == "POST" else ""
    # the version the page was drawn from: a save or revert of a policy changed since is refused
    # (policy_versions); a form sent without one (an old page, a script) saves as before
    seen = request.POST.get("version") or None
    version = policy_versions.version_of(current)
    form = None
    stored = getattr(current, "pk", None) is not None
    may_save, may_revert = may_edit_policy(request.user, "change" if stored else "add"), may_edit_policy(request.user, "delete")
    if (action in ("save", "save-loosening") and not may_save) or (action == "revert" and not may_revert):
        raise PermissionDenied(str(policy_versions.NOT_YOURS_TO_CHANGE))  # the page offers neither
    if action in ("save", "save-loosening", "simulate"):
        # the draft: a fresh row of this tool, so that what the form leaves out is the model's default
        form = PolicyForm(request.POST, instance=ToolPolicy(tool_name=tool_name))
        valid = form.is_valid()  # typed fields, then the whole policy (ToolPolicy.clean)
        errors = form.error_lists()
        try:
            limit = int(request.POST.get("limit", 50))
        except ValueError:
            limit = 50
        limit = max(1, min(limit, simulate.MAX_CALLS))
        if action == "simulate":
            if valid:  # judge only a draft the engine would accept: a bad rule is reported, not replayed
                simulation = simulate.simulate(form.instance, limit)
        elif seen is not None and seen != version:  # changed since the page was drawn: nothing to confirm
            stale = policy_versions.PolicyChanged(tool_name)
        elif valid and action == "save" and simulate.has_call_source():
            # a save that would give recorded calls less review than they had asks first (the simulator
            # over the same calls), whatever sent it; "save-loosening" is the confirmed save
            simulation = simulate.simulate(form.instance, limit, baseline=current)
            confirm_loosening = simulation.loosening if simulation.loosened_now else ""
        if valid and action != "simulate" and not confirm_loosening and stale is None:
            try:
                policy_versions.save_policy(tool_name, form.values(), request.user, seen=seen)
            except ValidationError as exc:  # a concurrent change made it invalid
                errors = exc.message_dict
            except policy_versions.PolicyChanged as exc:  # changed between this read and the save
                stale = exc
                current = selectors.policy_for(tool_name=tool_name)
                version = policy_versions.version_of(current)
            else:
                # the tag tells the page's draft (static/js/policy-drafts.js) that what was typed is saved
                messages.success(request, gettext("Policy for %(tool)s saved.") % {"tool": tool_name},
                                 extra_tags="draft-done")
                return redirect(f"/policies/{tool_name}/")
    elif action == "revert":
        try:
            if policy_versions.delete_policy(tool_name, request.user, seen=seen):
                messages.success(request, gettext("%(tool)s is back on its code defaults.") % {"tool": tool_name})
        except policy_versions.PolicyChanged as exc:
            messages.error(request, policy_versions.changed_since(exc) + " " + gettext(
                "It was not reverted: the page now shows the policy as it stands."))
        return redirect(f"/policies/{tool_name}/")
    if stale is not None:  # the draft stays in the form; what the policy now says where they differ
        stale = {"said": policy_versions.changed_since(stale), "changes": _differences(current, form.instance)}
    elif form is not None and seen is not None:
        version = seen  # a draft shown again (simulated, refused) is still based on what the page first read
    shown = form.instance if form is not None else current
    conditions_text = (request.POST.get("conditions") if form is not None
                       else json.dumps(current.conditions or [], indent=2, ensure_ascii=False))
    return render(request, "approvals/policy_edit.html", {
        "tool_name": tool_name,
        "policy": shown,
        "source": "policy" if getattr(current, "pk", None) else "default",
        "may_save": may_save, "may_revert": may_revert,
        "defaults": defaults,
        # in the reader's language, for `shown` (escaped once: {% translate … as %} had escaped it already)
        "summary": gettext(defaults.summary) if defaults and defaults.summary else "",
        "schema": defaults.schema if defaults else {},
        "conditions_text": conditions_text,
        "paths": _paths_for(defaults.schema if defaults else {}),
        "ops": rules.OPS,
        "actions": rules.ACTIONS,
        "op_labels": OP_LABELS,
        "action_labels": ACTION_LABELS,
        "rule_label": gettext("rule %(number)s"),  # how the rules' messages begin (the builder finds each one's card)
        "mode_labels": MODE_LABELS,
        "nobody_decides": NOBODY_DECIDES.get(shown.mode, ""),
        "short_quorums": [] if errors else reach.short_quorums(shown),
        "nobody_map": {str(k): v for k, v in NOBODY_DECIDES.items()},
        "confirm_loosening": confirm_loosening,
        "stale": stale,
        "version": version,
        "errors": errors,
        "error_fields": sorted(errors),
        "modes": [(v, MODE_LABELS.get(v, label)) for v, label in Mode.choices],
        "approver_kinds": ApproverKind.choices,
        "risks": Risk.choices,
        "timeout_actions": TimeoutAction.choices,
        "decision_choices": DECISION_CHOICES,
        "groups": list(Group.objects.order_by("name").values_list("name", flat=True)),
        "simulation": simulation,
        "limit": limit,
        "simulate_choices": SIMULATE_CHOICES,
        "has_source": simulate.has_call_source(),
        "history": history(tool_name),
        "pending_count": inbox_query.pending_mine_count(request.user),
    }, status=409 if stale else 400 if errors else 200)


def _differences(current, draft):
    """The fields where the draft differs from the policy as it stands: [{field, now, draft}]."""
    now, mine = services.policy_snapshot(current), services.policy_snapshot(draft)
    return [{"field": key_label(f), "now": said_value(f, now.get(f)), "draft": said_value(f, mine.get(f))}
            for f in services.POLICY_FIELDS if now.get(f) != mine.get(f)]


# --- the audit trail --------------------------------------------------------------------------


def audit_filters(params):
    """The filter form's values as typed (shown again on the page and kept in its links)."""
    return {
        "action": params.get("action", "") if params.get("action", "") in AuditEvent.Action.values else "",
        "actor": params.get("actor", "").strip()[:150],
        "tool": params.get("tool", "").strip()[:100],
        "request": params.get("request", "").strip()[:64],
        "object_ref": params.get("object_ref", "").strip()[:200],
        "since": params.get("since", "").strip()[:40],
        "until": params.get("until", "").strip()[:40],
    }


def audit_queryset(user, f):
    """The audit events `user` may read that match the form `f` (its unreadable values left out)."""
    return AuditPageFilter(f, queryset=selectors.audit_events(user=user)).qs


@reviewer_required
def audit(request):
    f = audit_filters(request.GET)
    qs = audit_queryset(request.user, f)
    after = request.GET.get("after", "")
    if "|" in after:  # a mangled or stale cursor (no such moment, no such id) shows the first page
        stamp, _, last_id = after.partition("|")
        moment, last_id = parse_moment(stamp), parse_row_id(last_id)
        if moment and last_id is not None:
            qs = qs.filter(created_at__lte=moment).filter(
                Q(created_at__lt=moment) | Q(created_at=moment, id__lt=last_id))
    events = list(qs[:AUDIT_PAGE + 1])
    next_after = ""
    if len(events) > AUDIT_PAGE:
        events = events[:AUDIT_PAGE]
        next_after = f"{events[-1].created_at.isoformat()}|{events[-1].pk}"
    params = {k: v for k, v in f.items() if v}
    return render(request, "approvals/audit.html", {
        "filters": f, "params": params, "events": audit_rows(events, request.user),
        "next_after": next_after, "first_page": not after, "actions": selectors.audit_actions(user=request.user),
        "tools": sorted(registry.all_tools()), "pending_count": inbox_query.pending_mine_count(request.user),
        "csv_limit": formats.number_format(exports.CSV_LIMIT, force_grouping=True),
    })


@reviewer_required
def audit_csv(request):
    return exports.audit_csv_response(audit_queryset(request.user, audit_filters(request.GET)),
                                      staff=is_admin(request.user), request=request)
