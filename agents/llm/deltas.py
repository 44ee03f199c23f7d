"""What every chat model yields and raises, so the runner does not care which one streams."""

from dataclasses import dataclass


class ModelUnavailable(Exception):
    """The model could not be reached or failed on its side (network, 5xx, rate limit)."""


class ModelError(Exception):
    """The model answered, but not usefully (4xx, broken stream). Its text is the provider's, for
    the logs; `http_status` and `code` (the error body's, e.g. context_length_exceeded) say which
    sentence the person reads (runtime/runner.py)."""

    def __init__(self, message="", status=None, code=None):
        super().__init__(message)
        self.http_status, self.code = status, code if isinstance(code, str) else None


class NoAnswer(ModelError):
    """The model ended its turn having said nothing (an empty answer, a content filter, reasoning alone,
    no choice at all): its text is for the logs, the person is told in their own words."""


class BrokenStream(ModelError):
    """The model's stream held what no answer is made of (a chunk that is not JSON, content that is not
    text): its text, quoting the chunk, is for the logs."""


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
