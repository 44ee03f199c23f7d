"""Which chat model this process talks to: the OpenAI adapter with an API key, else the offline demo."""

from django.conf import settings

from .openai_chat import OpenAIChatModel
from .scripted.model import ScriptedModel


def get_model():
    return OpenAIChatModel() if settings.OPENAI_API_KEY else ScriptedModel()


def takes_images():
    """Whether user messages may carry images (OpenAI `image_url` parts): the configured model says so
    with AGUI_MODEL_VISION (one model per process); the offline demo model reads text only."""
    return bool(settings.OPENAI_API_KEY) and settings.AGUI_MODEL_VISION
