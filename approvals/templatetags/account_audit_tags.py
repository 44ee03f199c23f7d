"""The audit page's account and group events (approvals/account_audit.py) in a sentence."""

from django import template

from approvals import account_audit

register = template.Library()


@register.filter
def what_happened(event):
    """"finn added to finance", "bob switched off": "" for the events other than accounts' and groups'."""
    return account_audit.summary(event)
