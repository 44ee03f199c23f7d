from django.urls import path

from . import views

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("chat/<str:thread_id>/", views.chat, name="chat-thread"),
]
