"""Which chat model this process talks to: the OpenAI adapter with an API key, else the offline demo."""

from django.conf import settings

from .openai_chat import OpenAIChatModel
from .scripted.model import ScriptedModel


def get_model():
    return OpenAIChatModel() if settings.OPENAI_API_KEY else ScriptedModel()
