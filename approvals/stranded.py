"""Requests left with nobody to decide them, said when it happens: a person taken out of a group, switched
off or deleted (the product's own advice instead of deleting a group) left that group's waiting requests
with nobody who may decide them, and the admins heard of it only at each request's reminder, if it had
one. Whichever way the change is made (the admin's forms and actions, a script), its commit now has the
admins told of each such request (services._warn_if_nobody_decides: the audit row `no_deciders`, the
staff's notice and mail, once per request and group), and the admin's user form says so on its page."""

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.db.models.signals import m2m_changed, post_delete, post_save, pre_delete
from django.dispatch import receiver

from . import access, services
from .choices import ApproverKind
from .models import ApprovalRequest

LIMIT = 200  # requests looked at a change: the rest are told at their reminder, as before


def _waiting_in(group_ids):
    routed = Q(approver_kind=ApproverKind.GROUP, approver_group_id__in=group_ids)
    escalated = Q(escalated_at__isnull=False, escalation_group_id__in=group_ids)
    return (ApprovalRequest.objects.filter(routed | escalated, status=ApprovalRequest.Status.PENDING)
            .select_related("approver_group", "escalation_group", "requester").order_by("created_at"))


def stranded(group_ids):
    """{group name: requests} of the waiting requests of these groups that nobody in them may decide now."""
    found = {}
    for req in _waiting_in(group_ids)[:LIMIT]:
        for group in (req.approver_group, req.escalation_group if req.escalated_at else None):
            if group is not None and group.pk in group_ids and not access.deciders_in(group.pk, req.requester).exists():
                found.setdefault(group.name, []).append(req)
    return found


def tell(group_ids):
    """After the commit of a change that took people out of these groups: each request it stranded is said."""
    group_ids = set(group_ids)
    for requests in stranded(group_ids).values():
        for req in requests:
            with transaction.atomic():
                locked = _waiting_in(group_ids).select_for_update(of=("self",)).filter(pk=req.pk).first()
                if locked is not None:
                    services._warn_if_nobody_decides(locked)


def _after_commit(group_ids):
    if group_ids:
        transaction.on_commit(lambda ids=frozenset(group_ids): tell(ids))


@receiver(m2m_changed, sender="auth.User_groups", dispatch_uid="stranded_memberships")
def _left(sender, instance, action, reverse, pk_set, **kwargs):
    if action == "pre_clear":
        instance._agui_stranded = {instance.pk} if reverse else set(instance.groups.values_list("pk", flat=True))
    elif action == "post_clear":
        _after_commit(getattr(instance, "_agui_stranded", set()))
    elif action == "post_remove":
        _after_commit({instance.pk} if reverse else set(pk_set or ()))


@receiver(post_save, sender=get_user_model(), dispatch_uid="stranded_switched_off")
def _switched_off(sender, instance, **kwargs):
    if not instance.is_active:
        _after_commit(set(instance.groups.values_list("pk", flat=True)))


@receiver(pre_delete, sender=get_user_model(), dispatch_uid="stranded_deleting")
def _deleting(sender, instance, **kwargs):
    instance._agui_stranded = set(instance.groups.values_list("pk", flat=True))


@receiver(post_delete, sender=get_user_model(), dispatch_uid="stranded_deleted")
def _deleted(sender, instance, **kwargs):
    _after_commit(getattr(instance, "_agui_stranded", set()))
