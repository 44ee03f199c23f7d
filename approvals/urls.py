from django.urls import path

from . import views

urlpatterns = [
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/<str:approval_id>/", views.detail, name="inbox-detail"),
]
