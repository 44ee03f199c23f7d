from django.urls import path

from . import console, mail_views, views

urlpatterns = [
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/stats/", views.stats_page, name="inbox-stats"),
    path("inbox/summary/", views.summary, name="inbox-summary"),
    path("inbox/bulk/", views.bulk, name="inbox-bulk"),
    path("inbox/undo/", views.undo, name="inbox-undo"),
    path("inbox/settings/", mail_views.notification_settings, name="inbox-settings"),
    path("inbox/mail/<str:token>/", mail_views.confirm, name="inbox-mail-link"),
    path("inbox/<str:approval_id>/", views.detail, name="inbox-detail"),
    path("policies/", console.policy_list, name="policies"),
    path("policies/<str:tool_name>/", console.policy_edit, name="policy-edit"),
    path("audit/", console.audit, name="audit"),
    path("audit/export.csv", console.audit_csv, name="audit-csv"),
]
