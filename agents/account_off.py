"""What an account switched off (is_active False) leaves behind, ended in one place, whichever way it was
switched off: the admin's form, a script's save(), a bulk update, a directory sync writing SQL.

Tools act for the requester. Before, such an account's pending requests waited in every reviewer's
inbox (approval refused, `requester_inactive`, but nobody told why until they tried) until a deadline,
and its paused runs stayed paused for good. Now its pending requests are withdrawn (cancelled, the
reason in the request's feedback, its audit row and the pages: approvals.models.REQUESTER_OFF), its
queued runs never start, its running ones stop at their next check, and a paused one ends cancelled
(the runner ends a continuation of an account switched off without asking the model). A save() does
it on commit (receivers.on_user_saved); the beat's sweep finds what a save never announced."""

import logging

from django.db.models import Q

from approvals import services as approval_services
from approvals.models import REQUESTER_OFF, ApprovalRequest

from . import services
from .models import Run

log = logging.getLogger(__name__)

LIMIT = 100  # rows per call: the sweep, every AGUI beat period, takes the rest
# what is left to end: a run running, queued for a message, or paused and not yet continued (a paused
# run keeps its status for good once its continuation is made). A queued continuation is left to run:
# it settles the paused calls (each told to the model's history as withdrawn or refused, so the chat
# stays a valid conversation) and then ends cancelled without asking the model (runner._execute)
UNFINISHED = (Q(status=Run.Status.RUNNING) | Q(status=Run.Status.QUEUED, parent_run__isnull=True)
              | Q(status=Run.Status.INTERRUPTED, continuation__isnull=True))


def withdraw(user_ids):
    """End the pending requests and the runs of these accounts, if they are switched off (an account
    switched on again before this ran keeps them). Returns (request ids withdrawn, run ids stopped)."""
    user_ids = sorted({pk for pk in user_ids if pk is not None})
    if not user_ids:
        return [], []
    # the requests first: a paused run then ends through its requests' wake-up, as a Stop's does
    withdrawn = approval_services.withdraw_switched_off(requester_ids=user_ids, limit=LIMIT)
    stopped = []
    for run in Run.objects.filter(UNFINISHED, thread__owner_id__in=user_ids, thread__owner__is_active=False
                                  ).select_related("thread__owner")[:LIMIT]:
        if services.cancel_run(run, None, reason=REQUESTER_OFF):
            stopped.append(run.pk)
    if withdrawn or stopped:
        log.info("accounts %s switched off: requests %s withdrawn, runs %s stopped", user_ids, withdrawn, stopped)
    return withdrawn, stopped


def sweep():
    """Beat: accounts switched off without a save() (queryset.update(), SQL) that still have pending
    requests or unfinished runs."""
    owners = set(ApprovalRequest.objects.filter(status=ApprovalRequest.Status.PENDING, requester__is_active=False)
                 .values_list("requester_id", flat=True)[:LIMIT])
    owners |= set(Run.objects.filter(UNFINISHED, thread__owner__is_active=False)
                  .values_list("thread__owner_id", flat=True)[:LIMIT])
    return withdraw(owners)
