from django import forms
from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.text import capfirst, format_lazy
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from . import services
from .models import EVENT_TYPES, WebhookAttempt, WebhookDelivery, WebhookEndpoint

EVENT_WORDS = {
    "approval.requested": _("A person is asked to approve a call"),
    "approval.decided": _("A request is decided"),
    "approval.expired": _("A request's deadline passed"),
    "approval.escalated": _("A request is escalated"),
    "approval.rerouted": _("A policy change gives a waiting request other deciders, quorum or risk"),
    "tool.outcome": _("A call's outcome is known"),
}


class EndpointForm(forms.ModelForm):
    url = forms.CharField(label=_("URL"), max_length=2000,
                          help_text=_("An http:// or https:// URL that receives the events."))
    events = forms.MultipleChoiceField(choices=[(e, format_lazy("{} ({})", EVENT_WORDS[e], e)) for e in EVENT_TYPES],
                                       label=capfirst(_("events")), required=False,
                                       widget=forms.CheckboxSelectMultiple,
                                       help_text=_("None ticked: every event."))

    class Meta:
        model = WebhookEndpoint
        fields = ["url", "events", "description", "is_active"]
        labels = {"is_active": _("Active (unticked: nothing is sent here)")}

    def clean_url(self):
        problem = services.check_url(self.cleaned_data["url"])
        if problem:
            raise forms.ValidationError(problem)
        return self.cleaned_data["url"]


@admin.register(WebhookEndpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ["url", "events", "is_active", "created_at"]

    def save_model(self, request, obj, form, change):
        obj.events = sorted(set(obj.events or []))
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        """The secret is shown on this one page (not in a message: those may travel in a cookie)."""
        return TemplateResponse(request, "admin/webhooks/secret_once.html", {
            **self.admin_site.each_context(request), "endpoint": obj,
            "back": reverse("admin:webhooks_webhookendpoint_changelist")})


class AttemptInline(admin.TabularInline):
    model = WebhookAttempt
    extra = 0
    can_delete = False
    fields = ["started_at", "succeeded", "response_status", "latency_ms", "error", "response_body"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["event_type", "url", "status", "attempts", "created_at", "message_id"]
    list_filter = ["status", "event_type"]
    search_fields = ["message_id", "approval_ref", "url"]
    readonly_fields = ["message_id", "endpoint", "url", "event_type", "payload", "approval_ref", "status", "attempts",
                       "next_attempt_at", "claimed_until", "created_at", "delivered_at"]
    inlines = [AttemptInline]
    actions = ["replay"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False  # a record of what was sent: replay it, never edit it

    @admin.action(description=_("Send the selected deliveries again"))
    def replay(self, request, queryset):
        sent = sum(services.replay(pk) for pk in queryset.values_list("pk", flat=True))
        self.message_user(request, ngettext(
            "%(count)s delivery queued again (those still being sent were left alone).",
            "%(count)s deliveries queued again (those still being sent were left alone).", sent) % {"count": sent})
