"""The audit page's account and group events (approvals/account_audit.py): their sentence, and the
filter's actions a reader may find rows of."""

from django import template

from approvals import account_audit
from approvals.access import is_admin

register = template.Library()


@register.filter
def what_happened(event):
    """"finn added to finance", "bob switched off": "" for the events other than accounts' and groups'."""
    return account_audit.summary(event)


@register.filter
def readable_by(actions, user):
    """The action choices `user` may find rows of: account and group events are staff's only
    (selectors.audit_events), so a reviewer's filter does not offer them."""
    if is_admin(user):
        return actions
    return [(value, label) for value, label in actions if value not in account_audit.ACCOUNT_ACTIONS]
