"""Chat models: the OpenAI adapter (openai_chat), the offline demo model (scripted/, one script per
demo agent), the approval self-check; re-exports only, so callers write `from agents.llm import ...`."""

from .choice import get_model, takes_images
from .deltas import (
    AnswerCut,
    BrokenStream,
    ModelError,
    ModelUnavailable,
    NoAnswer,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
)
from .openai_chat import OpenAIChatModel, sse_data
from .scripted.model import ScriptedModel, scripted_reply
from .self_check import SELF_CHECK_SYSTEM, parse_self_check, self_check, self_check_messages

__all__ = [
    "SELF_CHECK_SYSTEM", "AnswerCut", "BrokenStream", "ModelError", "ModelUnavailable", "NoAnswer", "OpenAIChatModel",
    "ReasoningDelta", "ScriptedModel",
    "TextDelta", "ToolCallDelta", "get_model", "parse_self_check", "scripted_reply", "self_check",
    "self_check_messages", "sse_data", "takes_images",
]
