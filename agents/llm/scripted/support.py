"""The offline demo model's part for the support workflow (triage_agent, refund_agent, order_agent).

A pure function of the conversation: the speaking agent comes from its system prompt ("You are
refund_agent"), what it may do from the tools offered, and what is already done from the tool
calls and results in the history (of the current case: after the last "case complete.").
"""

import json
import re

from .common import call, retell, text_of

AGENT = re.compile(r"\bYou are (triage_agent|refund_agent|order_agent)\b")
ORDER = re.compile(r"\b(\d{4,12})\b")
ANSWER_PREFIX = "The person answered: "
REFUND_WORDS = re.compile(r"\b(refund|money back|reimburse)", re.I)
REPLACE_WORDS = re.compile(r"\b(replace|replacement|exchange|damaged|broken|wrong item|send (?:me )?(?:a )?new)", re.I)
WANTS_REPLACEMENT = re.compile(r"\b(replace|replacement|exchange)", re.I)  # said in so many words
SHIPPING = re.compile(r"\b(standard|express)\b", re.I)
ORDER_SCHEMA = {"type": "string", "pattern": r"^\d{4,12}$"}


def _case(messages):
    """The conversation since the last finished or cancelled case (system messages dropped)."""
    convo = [m for m in messages if m.get("role") != "system"]
    for i in range(len(convo) - 1, -1, -1):
        m, text = convo[i], text_of(convo[i].get("content"))
        if (m["role"] == "assistant" and text.strip().lower().endswith("case complete.")) or (
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
    answers = _answers(calls)
    said = " ".join(users + [" ".join(str(v) for v in a.values()) for a in answers])
    order = next((str(a["order_id"]) for a in reversed(answers) if a.get("order_id")), None)
    if order is None:
        found = ORDER.findall(said)
        order = found[-1] if found else None
    shipping = SHIPPING.search(said)
    return {
        "calls": calls, "users": users, "order": order, "shipping": shipping[1].lower() if shipping else None,
        "request": users[0] if users else "",
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
    last_user = next((text_of(m.get("content")) for m in reversed(convo) if m["role"] == "user"), "")
    if convo and convo[-1]["role"] == "tool":  # a case handed back to triage: nothing else was asked
        return {"text": "Thanks for your patience: everything you asked for is taken care of. Case complete."}
    if REFUND_WORDS.search(last_user) and "handoff_to_refund_agent" in names:
        return {"text": "I'm passing your case to our refunds specialist.",
                "tool_calls": [call("handoff_to_refund_agent", {"summary": f"Refund request: {last_user[:300]}"})]}
    if REPLACE_WORDS.search(last_user) and "handoff_to_order_agent" in names:
        return {"text": "I'm passing your case to our orders team for a replacement.",
                "tool_calls": [call("handoff_to_order_agent", {"summary": f"Replacement: {last_user[:300]}"})]}
    return {"text": "I can help with refunds and replacements. Tell me what happened with your order."}


def _result_failed(result):
    lower = (result or "").lower()
    return lower.startswith("error") or "rejected" in lower or "not executed" in lower or "timed out" in lower


def _ask(message, schema):
    return {"text": "I need one detail from you first.",
            "tool_calls": [call("request_info", {"message": message, "response_schema": schema})]}


def _lookup_or_fail(facts, convo):
    """A lookup call, a failure reply, or None when the order is known and looked up."""
    looked = _last_call(convo, "lookup_order_details")
    if looked is None or looked[0].get("order_id") != facts["order"]:
        return {"text": f"Let me look up order {facts['order']}.",
                "tool_calls": [call("lookup_order_details", {"order_id": facts["order"]})]}
    if _result_failed(looked[1]):
        return {"text": f"I could not find order {facts['order']} on your account ({looked[1]}). "
                "Please start again with the right order number. Case complete."}
    return None


def _refund(convo, names):
    facts = _facts(convo)
    refund = _last_call(convo, "submit_refund")
    if refund and refund[1] is not None:
        args, result = refund
        if _result_failed(result):
            return {"text": f"The refund was not made: {retell(result)} I won't try to get it another way. Case complete."}
        if WANTS_REPLACEMENT.search(" ".join(facts["users"])) and "handoff_to_order_agent" in names:
            return {"text": f"{result} I'm passing you to our orders team for the replacement.",
                    "tool_calls": [call("handoff_to_order_agent", {"summary": f"Refunded order {args['order_id']}; "
                                                                               "the customer wants a replacement"})]}
        return {"text": f"{result} The money will be back on your card in 3-5 business days. Case complete."}
    if not facts["order"]:
        return _ask("What is the number of the order you want refunded?",
                    {"type": "object", "properties": {"order_id": ORDER_SCHEMA}, "required": ["order_id"],
                     "additionalProperties": False})
    step = _lookup_or_fail(facts, convo)
    if step:
        return step
    details = json.loads(_last_call(convo, "lookup_order_details")[1])
    amount = float(details["amount"].split()[0])
    return {"text": f"Order {details['order_id']} ({details['item_name']}, {details['amount']}) qualifies for a "
                    "full refund. I'm submitting it; the support team reviews refunds first.",
            "tool_calls": [call("submit_refund", {"order_id": details["order_id"], "amount": amount,
                                                   "refund_description": (facts["request"] or "Refund requested")[:500]})]}


def _order(convo, names):
    facts = _facts(convo)
    replacement = _last_call(convo, "submit_replacement")
    if replacement and replacement[1] is not None:
        result = replacement[1]
        if _result_failed(result):
            return {"text": f"The replacement was not sent: {retell(result)} Case complete."}
        return {"text": f"{result} Case complete."}
    missing = {}
    if not facts["order"]:
        missing["order_id"] = ORDER_SCHEMA
    if not facts["shipping"]:
        missing["shipping_preference"] = {"type": "string", "enum": ["standard", "express"]}
    if missing:
        return _ask("To send the replacement I need: " + " and ".join(k.replace("_", " ") for k in missing) + ".",
                    {"type": "object", "properties": missing, "required": sorted(missing),
                     "additionalProperties": False})
    step = _lookup_or_fail(facts, convo)
    if step:
        return step
    return {"text": f"I'm arranging a replacement for order {facts['order']}; please confirm it.",
            "tool_calls": [call("submit_replacement", {
                "order_id": facts["order"], "shipping_preference": facts["shipping"],
                "replacement_note": (facts["request"] or "Replacement requested")[:500]})]}
