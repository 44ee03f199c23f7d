"""Mail through Django's mail framework (console in development, locmem in tests): reminders and
operator alerts (request and escalation mails carry links: approvals.mail_links). Sent after
commit; a mail failure never fails the caller."""

import logging

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mass_mail
from django.utils import timezone

from . import mail_links

log = logging.getLogger(__name__)


def group_recipients(group_id, exclude_user_id=None, kind="request"):
    """Active members of a group with an email address who want this kind of mail (request |
    escalation: their notification setting); the requester is never asked (four eyes)."""
    qs = mail_links.group_members(group_id, kind, exclude_user_id=exclude_user_id)
    return sorted(set(qs.values_list("email", flat=True)))


def staff_recipients():
    users = get_user_model().objects.filter(is_staff=True, is_active=True).exclude(email="")
    return sorted(set(users.values_list("email", flat=True)) | {email for _name, email in settings.ADMINS})


def _send(subject, body, recipients):
    if not recipients:
        return 0
    subject = f"{settings.EMAIL_SUBJECT_PREFIX}{subject}"
    messages = [(subject, body, settings.DEFAULT_FROM_EMAIL, [to]) for to in recipients]  # one each: no shared To
    try:
        return send_mass_mail(messages, fail_silently=False)
    except Exception:
        log.exception("mail %r to %s not sent", subject, recipients)
        return 0


def _facts(req):
    left = ""
    if req.expires_at:
        seconds = max(0, int((req.expires_at - timezone.now()).total_seconds()))
        left = f"It expires in {seconds // 60} min {seconds % 60} s ({req.expires_at:%Y-%m-%d %H:%M:%S} UTC); " \
            f"then it is {'approved' if req.timeout_action == 'approve' else 'rejected'} automatically.\n"
    return (
        f"{req.description}\n\n"
        f"Tool: {req.tool_name}\nRisk: {req.risk}\nReversible: {'yes' if req.reversible else 'no'}\n"
        f"Impact: {req.impact or '-'}\nRequested by: {req.requester.get_username()}\n{left}\n"
        f"Decide: {settings.AGUI_PUBLIC_URL.rstrip('/')}/inbox/{req.pk}/\n"
    )


def reminder(req, recipients):
    return _send(f"Reminder: {req.tool_name} awaits your decision", _facts(req), recipients)


def operator_alert(subject, body):
    return _send(subject, body, staff_recipients())
