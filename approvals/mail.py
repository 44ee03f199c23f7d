"""Mail through Django's mail framework (console in development, locmem in tests): reminders and
operator alerts (request and escalation mails carry links: approvals.mail_links). A request's mails
are sent after commit by a task of their own (services.mail_later, deliver); a mail failure never
fails the caller."""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mass_mail
from django.utils import formats, timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from people import selectors

from . import mail_links
from .access import mail_key
from .models import ApprovalRequest, said
from .templatetags.inbox_tags import mail_line

log = logging.getLogger(__name__)


def group_recipients(group_id, requester=None, kind="request", approved=()):
    """Active members of a group with an email address who want this kind of mail (request |
    escalation: their notification setting); the requester is never asked (four eyes), nor those
    whose approval already counts (`approved`: user ids), under any of their accounts (an address is
    a person, as a quorum counts them: access.same_person)."""
    approved = list(approved)
    qs = mail_links.group_members(group_id, kind, requester=requester).exclude(pk__in=approved)
    given = {mail_key(e) for e in get_user_model().objects.filter(pk__in=approved).values_list("email", flat=True)} \
        if approved else set()
    return sorted({e for e in qs.values_list("email", flat=True) if mail_key(e) not in given})


def staff_recipients():
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)) | {email for _name, email in settings.ADMINS})


def _send(compose, recipients):
    """One mail per recipient (no shared To), each composed in its recipient's language and time
    zone: compose() -> (subject, body) runs under translation.override and timezone.override of them."""
    if not recipients:
        return 0
    messages = []
    for to, (language, zone) in selectors.readers_by_email(recipients).items():
        with translation.override(language), timezone.override(zone or None):
            subject, body = compose()
            messages.append((f"{settings.EMAIL_SUBJECT_PREFIX}{subject}", body, settings.DEFAULT_FROM_EMAIL, [to]))
    try:
        return send_mass_mail(messages, fail_silently=False)
    except Exception:
        log.exception("mail %r to %s not sent", messages[0][0], recipients)
        return 0


def _facts(req):
    left = ""
    if req.expires_at:
        seconds = max(0, int((req.expires_at - timezone.now()).total_seconds()))
        values = {"minutes": seconds // 60, "seconds": seconds % 60,
                  "when": formats.date_format(timezone.localtime(req.expires_at), "DATETIME_FORMAT"),
                  "zone": timezone.get_current_timezone_name()}
        left = (_("It expires in %(minutes)s min %(seconds)s s (%(when)s %(zone)s); then it is approved "
                  "automatically.") if req.approves_at_deadline else
                _("It expires in %(minutes)s min %(seconds)s s (%(when)s %(zone)s); then it is rejected "
                  "automatically.")) % values + "\n"
    return "".join([
        f"{mail_line(said(req, 'description'))}\n", edited_line(req), "\n",
        _("Tool: %(tool)s") % {"tool": req.tool_name}, "\n",
        _("Risk: %(risk)s") % {"risk": req.get_risk_display()}, "\n",
        _("Reversible: %(answer)s") % {"answer": _("yes") if req.reversible else _("no")}, "\n",
        _("Impact: %(impact)s") % {"impact": mail_line(said(req, "impact") or "-")}, "\n",
        _("Requested by: %(name)s") % {"name": req.requester.get_username()}, "\n", left, "\n",
        _("Decide: %(url)s") % {"url": f"{settings.AGUI_PUBLIC_URL.rstrip('/')}/inbox/{req.pk}/"}, "\n",
    ])


def edited_line(req):
    """Under a request's headline: a reviewer edited its arguments (and, an outside agent's headline
    being its own words, that the headline is of the call as asked)."""
    if not req.edited:
        return ""
    return (_("A reviewer edited the arguments: what runs is not what the agent asked.") if req.said else
            _("The line above is the agent's own words, written for the arguments it asked; a reviewer has "
              "edited them since.")) + "\n"


def reminder(req, recipients):
    return _send(lambda: (_("Reminder: %(tool)s awaits your decision") % {"tool": req.tool_name}, _facts(req)),
                 recipients)


def operator_alert(compose):
    """compose() -> (subject, body), built in each staff member's language."""
    return _send(compose, staff_recipients())


def nobody_decides(req, group, role):
    """To the admins: nobody in `group` may decide `req` (role: approver | escalation), which would
    otherwise wait, unseen, until its deadline."""
    def compose():
        values = {"group": group, "tool": req.tool_name, "id": req.pk, "requester": req.requester.get_username()}
        said = (_("No one in %(group)s may decide the request of %(requester)s for %(tool)s (%(id)s): the group "
                  "has no active member other than the requester.") if role == "approver" else
                _("The request of %(requester)s for %(tool)s (%(id)s) was escalated to %(group)s, where no one may "
                  "decide it: the group has no active member other than the requester.")) % values
        advice = _("Add someone to the group or change the tool's policy; otherwise the request waits until its "
                   "deadline.")
        return _("Nobody can decide: %(tool)s (request %(id)s)") % values, f"{said}\n{advice}\n\n{_facts(req)}"

    return operator_alert(compose)


def too_few_decide(req, groups, needed, can):
    """To the admins: the people of `groups` who may decide `req` are fewer than the approvals it needs."""
    def compose():
        values = {"groups": ", ".join(groups), "tool": req.tool_name, "id": req.pk, "needed": needed, "can": can,
                  "requester": req.requester.get_username()}
        said = ngettext("The request of %(requester)s for %(tool)s (%(id)s) needs %(needed)s approvals, and only "
                        "%(can)s person may decide it (%(groups)s, the requester left out): it can never be approved.",
                        "The request of %(requester)s for %(tool)s (%(id)s) needs %(needed)s approvals, and only "
                        "%(can)s people may decide it (%(groups)s, the requester left out): it can never be approved.",
                        can) % values
        advice = _("Add people to the group or ask for fewer approvals in the tool's policy; otherwise the request "
                   "waits until its deadline.")
        return _("Too few can decide: %(tool)s (request %(id)s)") % values, f"{said}\n{advice}\n\n{_facts(req)}"

    return operator_alert(compose)


def deliver(kind, req, *args):
    """A request's mails of one kind: request | escalation (with one-click links), reminder (to
    `args[0]`, the recipients its audit row names), nobody (to the staff: `args` the group and its
    role), too_few (to the staff: `args` the groups, the approvals needed and the people who may give
    them). `req`: the request or its id (the task's, read afresh). A request decided since it was
    filed, escalated or reminded of asks no one any more: nothing is sent."""
    if not isinstance(req, ApprovalRequest):
        req = ApprovalRequest.objects.select_related("requester", "approver_group", "escalation_group") \
            .filter(pk=req).first()
        if req is None:
            return 0
    if kind == "nobody":
        return nobody_decides(req, *args)
    if kind == "too_few":
        return too_few_decide(req, *args)
    if req.status != ApprovalRequest.Status.PENDING:
        return 0
    if kind == "request":
        return mail_links.request_mails(req)
    if kind == "escalation":
        return mail_links.escalation_mails(req)
    if kind == "reminder":
        return reminder(req, *args)
    raise ValueError(f"no mail of kind {kind!r}")
