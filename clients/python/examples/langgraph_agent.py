"""A LangGraph ReAct agent whose `delete_contact` tool waits for a person's approval in agui-inbox.

    pip install langgraph langchain-openai ./clients/python
    AGUI_INBOX_URL=http://127.0.0.1:8000 AGUI_INBOX_TOKEN=... OPENAI_API_KEY=... python langgraph_agent.py
"""

import os

from agui_inbox_client import Inbox, NotApproved, require_approval
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent

inbox = Inbox(os.environ.get("AGUI_INBOX_URL", "http://127.0.0.1:8000"), os.environ["AGUI_INBOX_TOKEN"])


@require_approval("crm.delete_contact", inbox=inbox, timeout=3600, risk="high",
                  schema={"type": "object", "required": ["email"],
                          "properties": {"email": {"type": "string", "format": "email"}}},
                  describe=lambda email: f"Delete the CRM contact {email}")
def delete_contact(email: str) -> str:
    return f"deleted {email}"  # your real CRM call goes here


@tool
def delete_contact_tool(email: str) -> str:
    """Delete a contact from the CRM (a person approves it first)."""
    try:
        return delete_contact(email=email)
    except NotApproved as no:
        return f"Not deleted: the request was {no.status}. Reviewer: {no.feedback or 'no reason given'}"


graph = create_react_agent(ChatOpenAI(model="gpt-4o-mini"), [delete_contact_tool])

if __name__ == "__main__":
    result = graph.invoke({"messages": [("user", "Remove a@example.com from the CRM.")]})
    print(result["messages"][-1].content)
