from django.urls import path, re_path

from . import review, views
from .agui import endpoint as agui

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("chat/<str:thread_id>/", views.chat, name="chat-thread"),
    # the reviewer's view of a request's conversation (the request page links to it)
    path("inbox/<str:approval_id>/conversation/", review.request_conversation, name="inbox-conversation"),
    # With and without the trailing slash, and no redirect: clients (Microsoft Agent Framework's
    # among them) strip it, and APPEND_SLASH cannot redirect a POST.
    re_path(r"^agui/?$", agui.index, name="agui-index"),
    re_path(r"^agui/(?P<agent_name>[^/]+)/?$", agui.run_endpoint, name="agui-run"),
]
