"""The audit page's sentence for an account event (approvals/account_audit.summary)."""

from django import template

from approvals import account_audit

register = template.Library()


@register.filter
def what_happened(event):
    """"finn added to finance", "bob switched off": "" for the events other than accounts' and groups'."""
    return account_audit.summary(event)
