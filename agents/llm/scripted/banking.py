"""The offline demo model's part for the banking agent (agents/catalog/banking.py)."""

import re

from django.utils.translation import gettext as _

from agents.catalog import money

from .common import ARGS_PACE, call

_AMOUNT = r"\$?\s*(?P<amount>\d[\d,]*(?:\.\d+)?)\s*(?P<cur>usd|eur|gbp|dollars?|euros?|pounds?)?"
_TRANSFER = re.compile(
    rf"(?:transfer|send|move|pay)\s+{_AMOUNT}.*?from\s+(?:account\s+)?(?P<src>\d{{6,20}})"
    r".*?to\s+(?:account\s+)?(?P<dst>\d{6,20})",
    re.I | re.S,
)
_CURRENCY = {"usd": "USD", "dollar": "USD", "dollars": "USD", "eur": "EUR", "euro": "EUR", "euros": "EUR",
             "gbp": "GBP", "pound": "GBP", "pounds": "GBP"}


def banking_reply(text, names):
    match = _TRANSFER.search(text)
    if match and "transfer_money" in names:
        amount = float(match["amount"].replace(",", ""))
        currency = _CURRENCY.get((match["cur"] or "usd").lower(), "USD")
        args = {"from_account": match["src"], "to_account": match["dst"], "amount": amount, "currency": currency}
        return {
            "text": _("I'll transfer %(amount)s %(currency)s from account %(src)s to account %(dst)s. Transfers are "
                      "reviewed before they happen.") % {"amount": money.shown(amount), "currency": currency,
                                                          "src": match["src"], "dst": match["dst"]},
            "tool_calls": [call("transfer_money", args)],
        }
    sub = re.search(r"\b(sub_[A-Za-z0-9_]+)", text)
    if sub and re.search(r"cancel", text, re.I) and "cancel_subscription" in names:
        return {
            "text": _("I can cancel subscription %(sub)s for you; please confirm.") % {"sub": sub[1]},
            "tool_calls": [call("cancel_subscription", {"subscription_id": sub[1]})], "args_pace": ARGS_PACE,
        }
    acct = re.search(r"\b(\d{6,20})\b", text)
    if acct and re.search(r"balance", text, re.I) and "check_balance" in names:
        return {"text": _("Let me check that balance."), "tool_calls": [call("check_balance", {"account": acct[1]})]}
    return None
