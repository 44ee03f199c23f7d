"""The pages behind the mail's Approve / Reject links, and the person's mail setting.

A GET only shows the request and a confirmation button (mail scanners and previews follow links);
the POST decides through approvals.services.decide as the link's recipient.

Sign-in: by default the link itself stands for its recipient, for this one decision. People
approve from a phone's mail app, where a sign-in page would defeat the point of the mail, and the
link is as narrow as a credential can be: signed with SECRET_KEY, bound to one request and one
person, used once, dead as soon as the request is settled or past its deadline, and it still
passes every rule of the service (four eyes, group membership now, quorum, feedback to reject).
Someone else signed in on the browser is refused rather than silently acting as the recipient.
AGUI_MAIL_LINKS_REQUIRE_SIGN_IN=1 asks the recipient to sign in first, for sites that want it.
"""

import json
from urllib.parse import quote

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from agui_project.answer_first import answer_first

from . import mail_links, selectors, services
from .access import is_reviewer
from .models import MailLink, NotificationSetting, arguments_hash
from .templatetags.inbox_tags import as_read

FEEDBACK_MAX = 5000


def _refused(request, error):
    return render(request, "approvals/mail_refused.html",
                  {"heading": error.heading, "message": error.message, "code": error.status}, status=error.status)


def _not_theirs(recipient, req):
    """The refusal of a link whose recipient may not decide its request (any more): a page without the
    request, whose arguments, reason and impact (as edited since) they may no longer read, as the inbox
    and the API answer 404 to someone who lost the group or whose group the request was routed from."""
    # in the reader's language, as every page (the link's recipient may be one who lost the group)
    return mail_links.LinkError(403, _("This link no longer works"), (
        _("You asked for this call yourself, so someone else must decide it (four eyes).")
        if recipient.pk == req.requester_id else
        _("You are no longer among the people who may decide this request.")))


def _decide(token, user, feedback, decision, seen=""):
    """Decide as the link's recipient and stamp the link used in the same transaction (a refused
    decision leaves it usable: e.g. a reject without the feedback the policy asks for). The inbox's
    notices follow the page (agui_project/answer_first.py)."""
    with answer_first(), transaction.atomic():
        checked = mail_links.check(token, user, lock=True)
        try:
            req = services.decide(checked.request.pk, checked.link.user, decision, feedback=feedback,
                                  via="mail link", seen=seen)
        except services.NotPending:
            raise mail_links.LinkError(410, _("This link has expired"), _("The request's deadline passed before "
                                       "your decision, so it was settled by its policy.")) from None
        MailLink.objects.filter(pk=checked.link.pk).update(used_at=timezone.now(), used_decision=decision)
    return req


@never_cache
@require_http_methods(["GET", "POST"])
def confirm(request, token):
    if settings.AGUI_MAIL_LINKS_REQUIRE_SIGN_IN and not request.user.is_authenticated:
        return redirect(f"{settings.LOGIN_URL}?next={quote(request.path)}")
    try:
        checked = mail_links.check(token, request.user)
    except mail_links.LinkError as exc:
        return _refused(request, exc)
    req, recipient = checked.request, checked.link.user
    context = {"approval": req, "decision": checked.decision, "recipient": recipient, "feedback": "",
               "arguments": json.dumps(as_read(req.current_arguments), indent=2, ensure_ascii=False, sort_keys=True),
               "seen": arguments_hash(req.current_arguments),  # what the page shows is what its button approves
               "quorum": selectors.quorum(approval=req), "feedback_required":
               checked.decision == "reject" and req.approver_kind == "group",
               # either link of the mail may instead answer with guidance, when the policy offers it
               "can_respond": req.allows("respond")}
    if not services.can_decide(recipient, req):
        return _refused(request, _not_theirs(recipient, req))
    if request.method == "GET":
        return render(request, "approvals/mail_confirm.html", context)
    feedback = request.POST.get("feedback", "")[:FEEDBACK_MAX]
    # the link's own decision, or guidance instead (services.decide refuses it where the policy does not offer it)
    decision = "respond" if request.POST.get("answer") == "respond" else checked.decision
    try:
        decided = _decide(token, request.user, feedback, decision, seen=request.POST.get("seen", "")[:64])
    except mail_links.LinkError as exc:
        return _refused(request, exc)
    except services.Forbidden:
        return _refused(request, _not_theirs(recipient, req))
    except services.DecisionError as exc:
        errors = getattr(exc, "errors", {}) or {}
        return render(request, "approvals/mail_confirm.html", {
            **context, **({"guidance": feedback} if decision == "respond" else {"feedback": feedback}),
            "form_error": exc.message, "responding": decision == "respond",
            "feedback_error": "; ".join(errors.get("feedback", [])) or None}, status=exc.status_code)
    return render(request, "approvals/mail_done.html", {
        "approval": decided, "decision": decision, "recipient": recipient,
        "quorum": selectors.quorum(approval=decided)})


@login_required
@require_http_methods(["GET", "POST"])
def notification_settings(request):
    current = mail_links.mail_setting(request.user)
    if request.method == "POST":
        value = request.POST.get("mail", "")
        if value in NotificationSetting.Mail.values:
            mail_links.set_mail_setting(request.user, value)
            messages.success(request, _("Your mail setting is saved."))
            return redirect("inbox-settings")
        return render(request, "approvals/mail_settings.html", {
            "choices": NotificationSetting.Mail.choices, "current": current, "is_reviewer": is_reviewer(request.user),
            "error": _("Choose one of the options.")}, status=400)
    return render(request, "approvals/mail_settings.html", {
        "choices": NotificationSetting.Mail.choices, "current": current, "is_reviewer": is_reviewer(request.user)})
