"""What became of an approved call, for the request's pages: an approved transfer that then failed
read as done in the inbox (its status, the list and the audit say only "Approved with edits"), while
the requester's chat said it failed.

Approvals knows no runs: the apps whose runs execute approved calls register a reader
(`add_reader`, agents at start-up); an outside agent's outcome is its own report (OutsideCall). When
an outcome is recorded (`signals.tool_outcome`), the pages that have the request open are told
(`approval.ran`) and follow."""

from django.dispatch import receiver
from django.utils.translation import gettext as _

from . import notify
from .models import ApprovalRequest, OutsideCall
from .signals import tool_outcome

_readers = []
RAN_STATUSES = (ApprovalRequest.Status.APPROVED, ApprovalRequest.Status.MODIFIED)


def add_reader(read):
    """`read(request_id)` -> (kind, words) once the request's call ended, else None, in the active
    language: "done" and what the call returned (may be ""), or "failed" and a sentence of why."""
    _readers.append(read)


def outcome(approval):
    """(kind, words) of an approved request's call once it ended (add_reader), else None."""
    if approval.status not in RAN_STATUSES:
        return None
    reported = OutsideCall.objects.filter(request_id=approval.pk).exclude(outcome="").first()
    if reported is not None:  # the agent's own words of it
        detail = reported.outcome_detail.strip()
        if reported.outcome == OutsideCall.Outcome.SUCCEEDED:
            return "done", detail
        if reported.outcome == OutsideCall.Outcome.FAILED:
            return "failed", (_("The agent reports it did not work: %(detail)s") % {"detail": detail} if detail
                              else _("The agent reports it did not work."))
        return "failed", _("The agent does not know whether it finished.")
    return next((found for read in _readers if (found := read(approval.pk))), None)


@receiver(tool_outcome, dispatch_uid="approvals.ran")
def tell_pages(sender, approval_ref="", **kwargs):
    if approval_ref:
        notify.ran_notice(approval_ref)
