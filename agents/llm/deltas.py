"""What every chat model yields and raises, so the runner does not care which one streams."""

from dataclasses import dataclass


class ModelUnavailable(Exception):
    """The model could not be reached or failed on its side (network, 5xx, rate limit)."""


class ModelError(Exception):
    """The model answered, but not usefully (4xx, broken stream)."""


class AnswerCut(ModelError):
    """The answer reached the model's length limit (finish_reason "length"): what it said so far
    stands, a call it was making is not made."""


@dataclass
class TextDelta:
    text: str


@dataclass
class ReasoningDelta:
    """The model's reasoning (`reasoning_content`: DeepSeek, vLLM; `reasoning`: OpenRouter): shown as
    AG-UI REASONING_* events, neither stored as the answer nor sent back to the model."""

    text: str


@dataclass
class ToolCallDelta:
    index: int
    id: str | None
    name: str | None
    arguments: str
