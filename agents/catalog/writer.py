"""The document writer (wildcard mapping): every argument of `create_document` streams into
`document`; the draft is provisional until the user approves it, and is discarded if they reject it."""

from typing import Annotated, Any

from django.utils.translation import gettext_noop, ngettext
from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.tools import tool

from .agent import Agent, state_schema
from .confirmation import DocumentWriterConfirmationStrategy

Title = Annotated[str, Field(min_length=1, max_length=200)]
Content = Annotated[str, Field(min_length=1, max_length=20_000)]


class Document(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Title
    content: Content
    metadata: dict[str, Any] = {}


@tool(summary=gettext_noop("Create or rewrite the document"),
      approval_mode="always", approver="requester", risk="low", reversible=True,
      describe=lambda a: ngettext("Save the document “%(title)s” (%(words)s word)",
                                   "Save the document “%(title)s” (%(words)s words)", len(a["content"].split()))
      % {"title": a["title"], "words": len(a["content"].split())},
      impact="Replaces the document of this chat")
def create_document(ctx, title: Annotated[Title, Field(title=gettext_noop("Title"))],
                    content: Annotated[Content, Field(title=gettext_noop("Content"))],
                    metadata: Annotated[dict[str, Any], Field(title=gettext_noop("Metadata"))] = {}):  # noqa: B006 (pydantic copies)
    """Create or rewrite the document: write the complete title, content (Markdown) and metadata."""
    return f"Document “{title}” saved."


AGENT = Agent(
    name="writer",
    title=gettext_noop("Document writer"),
    description=gettext_noop("Drafts a document live; you approve the draft before it is saved."),
    system_prompt=(
        "You are a document writer. The current document is in a system message. To write or revise it, "
        "call create_document with the COMPLETE title, content (Markdown) and metadata; the user approves "
        "the draft before it is saved. If they reject it, ask what to change."
    ),
    tools=[create_document],
    state_schema=state_schema(document=Document),
    predict_state_config={"document": {"tool": "create_document", "tool_argument": "*"}},
    confirmation_strategy=DocumentWriterConfirmationStrategy(),
)
