from django.contrib import admin

from .models import ApprovalRequest, AuditEvent, Decision, ToolPolicy


@admin.register(ToolPolicy)
class ToolPolicyAdmin(admin.ModelAdmin):
    list_display = ["tool_name", "mode", "approver_kind", "approver_group", "required_approvals", "timeout_seconds", "risk"]
    list_filter = ["mode", "risk"]
    search_fields = ["tool_name"]


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    can_delete = False
    readonly_fields = ["user", "decision", "arguments", "feedback", "created_at"]


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(admin.ModelAdmin):
    """Read-only here: status changes go through the inbox (services.decide)."""

    list_display = ["tool_name", "status", "requester", "approver_group", "risk", "created_at"]
    list_filter = ["status", "risk", "tool_name"]
    search_fields = ["description", "thread_ref", "id"]
    inlines = [DecisionInline]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "actor", "object_ref"]
    list_filter = ["action"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
