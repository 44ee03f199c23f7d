"""The offline demo model's part for the support workflow (triage_agent, refund_agent, order_agent).

A pure function of the conversation: the speaking agent comes from its system prompt ("You are
refund_agent"), what it may do from the tools offered, and what is already done from the tool
calls and results in the history (of the current case: after the last "case complete.").
"""

import json
import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from agents.catalog import money
from agents.catalog.workflow import case_complete, ends_case

from .common import call, retell, retell_result, text_of

AGENT = re.compile(r"\bYou are (triage_agent|refund_agent|order_agent)\b")
ORDER = re.compile(r"\b(\d{4,12})\b")
ANSWER_PREFIX = "The person answered: "
REFUND_WORDS = re.compile(r"\b(refund|money back|reimburse)", re.I)
REPLACE_WORDS = re.compile(r"\b(replace|replacement|exchange|damaged|broken|wrong item|send (?:me )?(?:a )?new)", re.I)
WANTS_REPLACEMENT = re.compile(r"\b(replace|replacement|exchange)", re.I)  # said in so many words
SHIPPING = re.compile(r"\b(standard|express)\b", re.I)
ORDER_SCHEMA = {"type": "string", "pattern": r"^\d{4,12}$"}
# what the order agent asks for, by the details it lacks
NEEDED = {
    ("order_id", "shipping_preference"): gettext_noop("To send the replacement I need: the order number and how to "
                                                      "ship it (standard or express)."),
    ("order_id",): gettext_noop("To send the replacement I need: the order number."),
    ("shipping_preference",): gettext_noop("To send the replacement I need: how to ship it (standard or express)."),
}


def _case(messages):
    """The conversation since the last finished or cancelled case (system messages dropped)."""
    convo = [m for m in messages if m.get("role") != "system"]
    for i in range(len(convo) - 1, -1, -1):
        m, text = convo[i], text_of(convo[i].get("content"))
        if (m["role"] == "assistant" and ends_case(text)) or (
                m["role"] == "tool" and "the workflow ends here" in text and i < len(convo) - 1):
            return convo[i + 1:]
    return convo


def _calls(convo):
    """[(name, arguments, result or None)] in order."""
    results = {m.get("tool_call_id"): text_of(m.get("content")) for m in convo if m["role"] == "tool"}
    out = []
    for m in convo:
        for c in m.get("tool_calls") or []:
            try:
                args = json.loads(c["function"]["arguments"] or "{}")
            except json.JSONDecodeError:
                args = {}
            out.append((c["function"]["name"], args, results.get(c["id"])))
    return out


def _answers(calls):
    """What the person answered to request_info, as dicts (a plain answer is {"answer": text})."""
    out = []
    for name, _args, result in calls:
        if name == "request_info" and result and result.startswith(ANSWER_PREFIX):
            raw = result[len(ANSWER_PREFIX):]
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
            out.append(value if isinstance(value, dict) else {"answer": str(value)})
    return out


def _facts(convo):
    calls = _calls(convo)
    users = [text_of(m.get("content")) for m in convo if m["role"] == "user"]
    # a starter prompt as the person typed it (model._read_in_english keeps it): what they asked, in their words
    typed = [m.get("typed") or text_of(m.get("content")) for m in convo if m["role"] == "user"]
    answers = _answers(calls)
    said = " ".join(users + [" ".join(str(v) for v in a.values()) for a in answers])
    order = next((str(a["order_id"]) for a in reversed(answers) if a.get("order_id")), None)
    if order is None:
        found = ORDER.findall(said)
        order = found[-1] if found else None
    shipping = SHIPPING.search(said)
    return {
        "calls": calls, "users": users, "order": order, "shipping": shipping[1].lower() if shipping else None,
        "request": typed[0] if typed else "",
    }


def _last_call(convo, name):
    return next(((args, result) for n, args, result in reversed(_calls(convo)) if n == name), None)


def support_reply(messages, names):
    system = text_of(messages[0].get("content")) if messages and messages[0].get("role") == "system" else ""
    agent = AGENT.search(system)
    if not agent:
        return None
    convo = _case(messages)
    return {"triage_agent": _triage, "refund_agent": _refund, "order_agent": _order}[agent[1]](convo, names)


def _triage(convo, names):
    last = next((m for m in reversed(convo) if m["role"] == "user"), {})
    last_user, typed = text_of(last.get("content")), last.get("typed") or text_of(last.get("content"))
    if convo and convo[-1]["role"] == "tool":  # a case handed back to triage: nothing else was asked
        return {"text": case_complete(_("Thanks for your patience: everything you asked for is taken care of."))}
    # the summaries are for the next agent (a model, in English), quoting the person's own words
    if REFUND_WORDS.search(last_user) and "handoff_to_refund_agent" in names:
        return {"text": _("I'm passing your case to our refunds specialist."),
                "tool_calls": [call("handoff_to_refund_agent", {"summary": f"Refund request: {typed[:300]}"})]}
    if REPLACE_WORDS.search(last_user) and "handoff_to_order_agent" in names:
        return {"text": _("I'm passing your case to our orders team for a replacement."),
                "tool_calls": [call("handoff_to_order_agent", {"summary": f"Replacement: {typed[:300]}"})]}
    return {"text": _("I can help with refunds and replacements. Tell me what happened with your order.")}


def _result_failed(result):
    lower = (result or "").lower()
    return lower.startswith("error") or "rejected" in lower or "not executed" in lower or "timed out" in lower


def _ask(message, schema):
    """A question to the person (the chat's question form shows `message`), in their language."""
    return {"text": _("I need one detail from you first."),
            "tool_calls": [call("request_info", {"message": message, "response_schema": schema})]}


def _lookup_or_fail(facts, convo):
    """A lookup call, a failure reply, or None when the order is known and looked up."""
    looked = _last_call(convo, "lookup_order_details")
    if looked is None or looked[0].get("order_id") != facts["order"]:
        return {"text": _("Let me look up order %(order)s.") % {"order": facts["order"]},
                "tool_calls": [call("lookup_order_details", {"order_id": facts["order"]})]}
    if _result_failed(looked[1]):
        return {"text": case_complete(_("I could not find order %(order)s on your account (%(why)s). Please start "
                                        "again with the right order number.") % {
            "order": facts["order"], "why": retell_result(looked[1][len("Error: "):] if looked[1].startswith("Error: ")
                                                          else looked[1]).rstrip(".。")})}
    return None


def _refund(convo, names):
    facts = _facts(convo)
    refund = _last_call(convo, "submit_refund")
    if refund and refund[1] is not None:
        args, result = refund
        if _result_failed(result):
            return {"text": case_complete(_("The refund was not made: %(why)s I won't try to get it another way.") % {
                "why": retell(result)})}
        if WANTS_REPLACEMENT.search(" ".join(facts["users"])) and "handoff_to_order_agent" in names:
            return {"text": _("%(result)s I'm passing you to our orders team for the replacement.") % {
                        "result": retell(result)},
                    "tool_calls": [call("handoff_to_order_agent", {"summary": f"Refunded order {args['order_id']}; "
                                                                               "the customer wants a replacement"})]}
        return {"text": case_complete(_("%(result)s The money will be back on your card in 3-5 business days.") % {
            "result": retell(result)})}
    if not facts["order"]:
        return _ask(_("What is the number of the order you want refunded?"),
                    {"type": "object", "properties": {"order_id": ORDER_SCHEMA}, "required": ["order_id"],
                     "additionalProperties": False})
    step = _lookup_or_fail(facts, convo)
    if step:
        return step
    details = json.loads(_last_call(convo, "lookup_order_details")[1])
    amount = float(details["amount"].split()[0])
    return {"text": _("Order %(order)s (%(item)s, %(amount)s %(currency)s) qualifies for a full refund. I'm submitting "
                      "it; the support team reviews refunds first.") % {
                "order": details["order_id"], "item": details["item_name"], "amount": money.shown(amount),
                "currency": details["amount"].split()[-1]},
            "tool_calls": [call("submit_refund", {"order_id": details["order_id"], "amount": amount,
                                                   "refund_description": (facts["request"] or "Refund requested")[:500]})]}


def _order(convo, names):
    facts = _facts(convo)
    replacement = _last_call(convo, "submit_replacement")
    if replacement and replacement[1] is not None:
        result = replacement[1]
        if _result_failed(result):
            return {"text": case_complete(_("The replacement was not sent: %(why)s") % {"why": retell(result)})}
        return {"text": case_complete(retell(result))}
    missing = {}
    if not facts["order"]:
        missing["order_id"] = ORDER_SCHEMA
    if not facts["shipping"]:
        missing["shipping_preference"] = {"type": "string", "enum": ["standard", "express"]}
    if missing:
        return _ask(_(NEEDED[tuple(sorted(missing))]),
                    {"type": "object", "properties": missing, "required": sorted(missing),
                     "additionalProperties": False})
    step = _lookup_or_fail(facts, convo)
    if step:
        return step
    return {"text": _("I'm arranging a replacement for order %(order)s; please confirm it.") % {"order": facts["order"]},
            "tool_calls": [call("submit_replacement", {
                "order_id": facts["order"], "shipping_preference": facts["shipping"],
                "replacement_note": (facts["request"] or "Replacement requested")[:500]})]}
