"""The Django admin's MCP servers: env and headers are write-only (their names are shown, never their values)."""

import json

from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _

from . import services
from .models import MCPServer


class SecretsField(forms.CharField):
    """A JSON object of secrets: blank keeps what is stored; the stored values are never sent to the page."""

    widget = forms.Textarea(attrs={"rows": 3, "autocomplete": "off"})

    def clean(self, value):
        value = super().clean(value)
        if not value or not value.strip():
            return None
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(_("Enter a JSON object, e.g. {\"API_KEY\": \"...\"}.")) from exc
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise forms.ValidationError(_("Enter a JSON object whose values are strings."))
        return data


class ServerForm(forms.ModelForm):
    new_env = SecretsField(required=False, label=_("Environment (replace)"), help_text=_(
        "A JSON object; it replaces every variable set now. Leave blank to keep them."))
    new_headers = SecretsField(required=False, label=_("Headers (replace)"), help_text=_(
        "A JSON object; it replaces every header set now. Leave blank to keep them."))

    class Meta:
        model = MCPServer
        fields = ["name", "transport", "command", "args", "cwd", "url", "agents", "enabled"]

    def clean(self):
        cleaned = super().clean()
        values = {"url": cleaned.get("url")} if "url" in cleaned else {}
        if cleaned.get("new_headers") is not None:
            values["headers"] = cleaned["new_headers"]
        if self.instance.pk and services.moves_secrets(MCPServer.objects.get(pk=self.instance.pk), values):
            self.add_error("new_headers", services.HEADERS_MOVE)
        return cleaned


@admin.register(MCPServer)
class MCPServerAdmin(admin.ModelAdmin):
    form = ServerForm
    list_display = ["name", "transport", "enabled", "healthy", "tool_count", "checked_at"]
    readonly_fields = ["env_names", "header_names", "healthy", "error", "tools", "checked_at"]
    actions = ["refresh"]

    def get_readonly_fields(self, request, obj=None):
        # its tools are named after it, and their policies by those names: a new name made a second server
        return [*self.readonly_fields, "name"] if obj else self.readonly_fields

    @admin.display(description=_("tools"))
    def tool_count(self, obj):
        return len(obj.tools or [])

    @admin.display(description=_("environment variables set"))
    def env_names(self, obj):
        return ", ".join(sorted(obj.env or {})) or "—"

    @admin.display(description=_("headers set"))
    def header_names(self, obj):
        return ", ".join(sorted(obj.headers or {})) or "—"

    def save_model(self, request, obj, form, change):
        values = {f: form.cleaned_data[f] for f in ("transport", "command", "args", "cwd", "url", "agents", "enabled")}
        for field in ("env", "headers"):
            if form.cleaned_data.get(f"new_{field}") is not None:
                values[field] = form.cleaned_data[f"new_{field}"]
        saved = services.save_server(obj.name, values)
        obj.pk = saved.pk
        if not saved.healthy:
            messages.warning(request, _("%(name)s could not be reached: %(error)s") % {
                "name": saved.name, "error": saved.error})

    def delete_model(self, request, obj):
        services.delete_server(obj.name)

    def delete_queryset(self, request, queryset):  # "delete selected": every process hears of it too
        for name in list(queryset.values_list("name", flat=True)):
            services.delete_server(name)

    @admin.action(description=_("Ask the selected servers for their tools again"))
    def refresh(self, request, queryset):
        for row in queryset:
            services.refresh_tools(row.name)
