"""The offline demo model in the chat's language beyond banking: the support workflow's agents answer a
starter in the language it was typed in (questions to the person included), the refund it files carries the
customer's own words, and a message it does not understand is said so in the chat's language."""

import json

from django.utils import translation

from agents.catalog import support
from agents.catalog.workflow import ends_with_case_complete
from agents.llm.scripted.model import scripted_reply
from agents.llm.scripted.starters import STARTERS, starters

BANKING_TOOLS = [{"function": {"name": n}} for n in ("transfer_money", "cancel_subscription", "check_balance")]


def test_a_message_the_demo_model_does_not_understand_is_answered_in_the_chats_language():
    with translation.override("zh-hans"):
        reply = scripted_reply([{"role": "user", "content": "今天天气怎么样？"}], BANKING_TOOLS)
    assert "offline demo model" not in reply["text"] and "离线演示模型" in reply["text"]


SUPPORT_TOOLS = [{"function": {"name": n}} for n in (
    "handoff_to_refund_agent", "handoff_to_order_agent", "lookup_order_details", "submit_refund", "request_info")]


def _support(agent, convo):
    return scripted_reply([{"role": "system", "content": f"You are {agent}."}] + convo, SUPPORT_TOOLS)


def test_the_support_workflow_answers_a_starter_in_the_language_it_was_typed_in():
    with translation.override("zh-hans"):
        typed = starters("support")[0]  # "I want a refund for order 12345"
    assert typed != STARTERS["support"][0]
    user = {"role": "user", "content": typed}
    triage = _support("triage_agent", [user])
    assert triage["text"] == "我正在把您的问题转交给我们的退款专员。"
    assert triage["tool_calls"][0]["name"] == "handoff_to_refund_agent"

    lookup = _support("refund_agent", [user])
    assert lookup["text"] == "我来查一下订单 12345。"
    record = support.ORDER_RECORD(order_id="12345", item_name="Wireless Headphones", amount="129.99 USD",
                                  status="delivered")
    looked = [user, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "l1", "function": {"name": "lookup_order_details", "arguments": '{"order_id": "12345"}'}}]},
        {"role": "tool", "tool_call_id": "l1", "content": record}]
    refund = _support("refund_agent", looked)
    assert refund["text"].startswith("订单 12345（Wireless Headphones，129.99 USD）符合全额退款条件。")
    # the reviewer reads the customer's request as the customer wrote it, not the English it was read as
    assert json.loads(refund["tool_calls"][0]["arguments"])["refund_description"] == typed

    done = looked + [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "r1", "function": {"name": "submit_refund", "arguments": refund["tool_calls"][0]["arguments"]}}]},
        {"role": "tool", "tool_call_id": "r1", "content": support.REFUNDED(
            amount="129.99", currency="USD", order="12345", item="Wireless Headphones")}]
    closing = _support("refund_agent", done)["text"]
    assert "Refund of" not in closing and "Case complete" not in closing
    assert closing.endswith("案件已完成。")
    # the workflow still ends the case on the words said in Chinese
    assert ends_with_case_complete([{"role": "assistant", "content": closing}])


def test_the_support_workflow_asks_its_questions_in_the_language_of_the_starter():
    with translation.override("fr"):
        typed = starters("support")[2]  # "I want a refund": no order number
    asked = _support("refund_agent", [{"role": "user", "content": typed}])
    assert asked["text"] == "J’ai d’abord besoin d’une précision de votre part."
    question = json.loads(asked["tool_calls"][0]["arguments"])["message"]
    assert question == "Quel est le numéro de la commande à rembourser ?"


PLANNER_TOOLS = [{"function": {"name": n}} for n in ("generate_task_steps", "update_preferences")]


def test_the_planners_starter_plan_is_in_the_language_it_was_typed_in():
    with translation.override("fr"):
        typed = starters("planner")[0]  # "Plan a birthday party"
    reply = scripted_reply([{"role": "user", "content": typed}], PLANNER_TOOLS)
    steps = json.loads(reply["tool_calls"][0]["arguments"])["steps"]
    assert steps[0]["description"] == "Choisir une date et dresser la liste des invités"
    english = scripted_reply([{"role": "user", "content": STARTERS["planner"][0]}], PLANNER_TOOLS)
    assert json.loads(english["tool_calls"][0]["arguments"])["steps"][0]["description"] == \
        "Pick a date and make a guest list"


def test_a_demo_agents_help_lists_its_starters_in_the_chats_language():
    with translation.override("zh-hans"):
        reply = scripted_reply([{"role": "user", "content": "你好"}], PLANNER_TOOLS)
        typed = starters("planner")
    assert reply["text"].startswith("我是离线演示模型。试试：")
    assert all(f"- *{prompt}*" in reply["text"] for prompt in typed)
