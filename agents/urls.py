from django.urls import path

from . import views
from .agui import endpoint as agui

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("chat/<str:thread_id>/", views.chat, name="chat-thread"),
    path("agui/", agui.index, name="agui-index"),
    path("agui/<str:agent_name>/", agui.run_endpoint, name="agui-run"),
]
