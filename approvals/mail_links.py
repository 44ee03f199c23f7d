"""One-click decisions by mail: the request mail with signed Approve / Reject links, the links'
checks, and the per-person mail setting. The decision itself is approvals.services.decide, called by the
confirmation page's POST (approvals.mail_views; services import this module to send the mail),
so four eyes, quorum and feedback rules hold.

A link is `signing.dumps({"n": nonce, "d": decision})` with this module's salt, so it cannot be
forged or altered without SECRET_KEY. The nonce names a MailLink row, which binds it to one
request and one recipient and is stamped when used (either link of a mail, once). It dies with
the request: once the request is decided, expired or cancelled, or past its deadline, or (for a
request without one) after AGUI_MAIL_LINK_MAX_AGE_SECONDS.
"""

import json
import logging
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage, get_connection
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from people import selectors as people

from .access import deciders_in
from .choices import ApproverKind
from .models import ApprovalRequest, MailLink, NotificationSetting
from .templatetags.inbox_tags import as_read
from .templatetags.inbox_tags import when as moment

log = logging.getLogger(__name__)
SALT = "approvals.mail-link"
DECISIONS = ("approve", "reject")
Mail = NotificationSetting.Mail


class LinkError(Exception):
    """A link that decides nothing; `status` is the page's HTTP status, `message` its sentence."""

    def __init__(self, status, heading, message):
        super().__init__(message)
        self.status, self.heading, self.message = status, heading, message


# --- who gets mail -------------------------------------------------------------------------------

def mail_setting(user):
    row = NotificationSetting.objects.filter(user=user).values_list("mail", flat=True).first()
    return row or Mail.REQUEST


def set_mail_setting(user, value):
    if value not in Mail.values:
        raise ValueError(f"unknown mail setting {value!r}")
    NotificationSetting.objects.update_or_create(user=user, defaults={"mail": value})


def _muted(kind):
    """The settings under which a person gets no mail of this kind (request | escalation)."""
    return [Mail.NEVER] if kind == "escalation" else [Mail.NEVER, Mail.ESCALATION]


def group_members(group_id, kind, requester=None):
    """Active members of a group with an email address who want this kind of mail; never the
    requester, by account or address (four eyes: access.same_person)."""
    if not group_id:
        return get_user_model().objects.none()
    qs = deciders_in(group_id, requester).exclude(email="").exclude(approval_notifications__mail__in=_muted(kind))
    return qs.distinct().order_by("pk")


# --- links ---------------------------------------------------------------------------------------

def issue(req, user):
    """A new MailLink for this recipient: {"approve": url, "reject": url}, only the decisions the
    tool's policy allows (a guidance answer needs words: the mail points to the inbox for it)."""
    link = MailLink.objects.create(nonce=secrets.token_urlsafe(32), request=req, user=user)
    return {d: absolute(path_for(link.nonce, d)) for d in DECISIONS if req.allows(d)}


def path_for(nonce, decision):
    return f"/inbox/mail/{signing.dumps({'n': nonce, 'd': decision}, salt=SALT)}/"


def absolute(path):
    return f"{settings.AGUI_PUBLIC_URL.rstrip('/')}{path}"


@dataclass
class Checked:
    link: MailLink
    request: ApprovalRequest
    decision: str


def check(token, user=None, *, lock=False):
    """The link's row, request and decision, or LinkError. `user`: who is signed in, if anyone."""
    try:
        payload = signing.loads(token, salt=SALT, max_age=settings.AGUI_MAIL_LINK_MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise LinkError(410, _("This link has expired"), _("The request it was sent for is too old to decide by "
                        "mail. Open the inbox to see where it stands.")) from None
    except signing.BadSignature:
        raise LinkError(400, _("This link is not valid"), _("It may have been cut short or changed on the way. "
                        "Open the mail again and use the whole link, or decide in the inbox.")) from None
    decision = payload.get("d") if isinstance(payload, dict) else None
    qs = MailLink.objects.select_related("request", "request__requester", "request__approver_group", "user")
    if lock:
        qs = qs.select_for_update(of=("self",))
    link = qs.filter(nonce=payload.get("n") if isinstance(payload, dict) else None).first()
    if link is None or decision not in DECISIONS:
        raise LinkError(400, _("This link is not valid"), _("It does not belong to any request this site mailed. "
                        "Decide in the inbox instead."))
    if user is not None and user.is_authenticated and user.pk != link.user_id:
        raise LinkError(403, _("This link was sent to someone else"),
                        _("You are signed in as %(name)s, but this link was mailed to another reviewer and only "
                          "works for them. Sign out first if it is yours, or decide in the inbox.")
                        % {"name": user.get_username()})
    req = link.request
    if not link.user.is_active:  # the link stands for its recipient: not for an account switched off since
        raise LinkError(403, _("This link no longer works"), _("The account it was sent to has been deactivated."))
    if link.used_at:
        when = moment(link.used_at)  # the page's reader's zone, named
        raise LinkError(410, _("This link has already been used"),
                        (_("It approved the request on %(when)s; each mail decides once.")
                         if link.used_decision == "approve" else
                         _("It answered the request with guidance on %(when)s; each mail decides once.")
                         if link.used_decision == "respond" else
                         _("It rejected the request on %(when)s; each mail decides once.")) % {"when": when})
    if req.status != ApprovalRequest.Status.PENDING:
        raise LinkError(410, _("This request is already settled"),
                        _("Its status is “%(status)s”, so the link no longer decides anything.")
                        % {"status": req.get_status_display()})
    if req.expires_at and req.expires_at <= timezone.now():
        raise LinkError(410, _("This link has expired"), _("The request's deadline has passed."))
    return Checked(link, req, decision)


# --- the request mail ----------------------------------------------------------------------------

def request_mails(req):
    """After commit: each member of the request's group (who wants it) gets a mail with links of
    their own. Never fails the caller: a lost mail leaves the request in the inbox."""
    if req.approver_kind != ApproverKind.GROUP or not req.approver_group_id:
        return 0
    try:
        return _send(req, group_members(req.approver_group_id, "request", requester=req.requester),
                     "approvals/mail_request.txt", gettext_lazy("Approval needed: %(tool)s"))
    except Exception:
        log.exception("request mail for %s not sent", req.pk)
        return 0


def escalation_mails(req):
    """After commit: the escalation group's members (who want it) may decide now; their mail has
    links of their own too."""
    if not req.escalation_group_id:
        return 0
    try:
        return _send(req, group_members(req.escalation_group_id, "escalation", requester=req.requester),
                     "approvals/mail_request.txt", gettext_lazy("Escalated: %(tool)s needs a decision"),
                     group=req.escalation_group, escalated=True)
    except Exception:
        log.exception("escalation mail for %s not sent", req.pk)
        return 0


def _send(req, recipients, template, subject, group=None, escalated=False):
    """`subject`: a lazy translation with %(tool)s, made a sentence in each recipient's language."""
    recipients = list(recipients)
    if not recipients:
        return 0
    arguments = json.dumps(as_read(req.current_arguments), indent=2, ensure_ascii=False, sort_keys=True)
    messages = []
    for person in recipients:
        language, zone = people.reader_of(person)
        with translation.override(language), timezone.override(zone or None):  # the deadline in their clock
            body = render_to_string(template, {
                "req": req, "person": person, "links": issue(req, person), "arguments": arguments,
                "inbox_url": absolute(f"/inbox/{req.pk}/"), "settings_url": absolute("/inbox/settings/"),
                "group": group or req.approver_group, "escalated": escalated,
            })
            title = str(subject) % {"tool": req.tool_name}
        messages.append(EmailMessage(f"{settings.EMAIL_SUBJECT_PREFIX}{title}", body,
                                     settings.DEFAULT_FROM_EMAIL, [person.email]))  # one each: no shared To
    return get_connection().send_messages(messages) or 0
