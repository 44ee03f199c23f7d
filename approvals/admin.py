import json

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group, User
from django.utils.html import format_html
from django.utils.text import Truncator
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from people.admin import PersonAdmin, TeamAdmin

from . import access, policy_versions, reach, registry, rule_words, selectors, services, stranded
from .choices import MODE_LABELS
from .models import (
    ApprovalRequest,
    AuditEvent,
    Decision,
    MailLink,
    NotificationSetting,
    ThreadGrant,
    ToolPolicy,
    said,
)


class ToolPolicyForm(forms.ModelForm):
    """The model's field help, in words for the admin reading the form."""

    class Meta:
        model = ToolPolicy
        fields = "__all__"
        help_texts = {
            "conditions": _("Rules for the modes that ask when a rule says so, tried in order: the first that "
                            "matches decides. Each has a name, a condition on the call (its arguments, the user, "
                            "the agent) and an action: gate (a person decides), deny (blocked) or allow (runs at "
                            "once). The policy console (Policies) builds them for you and tries a draft against "
                            "recorded calls."),
            "timeout_action": _("What happens when nobody decides in time. “approve” is allowed only for "
                                "low-risk tools."),
            "timeout_seconds": _("How long a request waits for a decision. Empty: the site's default."),
        }

    # the version the change page was drawn from (policy_versions): a save over another admin's change
    # made since (another page, the console, the API) is refused, as the console and If-Match refuse it.
    # A new policy needs none: a row made meanwhile makes its tool name taken.
    version = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["mode"].choices = [(v, MODE_LABELS.get(v, label)) for v, label in self.fields["mode"].choices]
        if self.instance.pk:
            self.fields["version"].initial = policy_versions.version_of(self.instance)

    def clean(self):
        cleaned = super().clean()
        seen = cleaned.get("version") or None
        if self.instance.pk and seen:
            try:  # the row stays locked to the save: the admin's view holds one transaction
                policy_versions.check(self.instance.tool_name, seen)
            except policy_versions.PolicyChanged as exc:
                # the form comes back as filled in, on the version now in force: saved again, it goes
                # over that change knowingly
                self.data = self.data.copy()
                self.data[self.add_prefix("version")] = policy_versions.version_of(
                    selectors.policy_for(tool_name=self.instance.tool_name))
                raise forms.ValidationError(policy_versions.changed_since(exc) + " " + gettext(
                    "Your form is kept as you filled it in: save again to put it in force over that change, or "
                    "open the policy again to see it first."), code="stale") from None
        return cleaned


@admin.register(ToolPolicy)
class ToolPolicyAdmin(admin.ModelAdmin):
    """The form validates through ToolPolicy.clean (approvals.validators); saves and deletes go
    through services so that every change is audited with before/after."""

    form = ToolPolicyForm

    list_display = ["tool_name", "mode", "approver_kind", "approver_group", "required_approvals", "timeout_seconds",
                    "risk", "escalation_group"]
    list_filter = ["mode", "risk"]
    search_fields = ["tool_name"]
    readonly_fields = ["code_defaults", "updated_at"]

    def get_readonly_fields(self, request, obj=None):
        # renaming would silently move a policy between tools
        return [*self.readonly_fields, "tool_name"] if obj else self.readonly_fields

    @admin.display(description=_("Code defaults (used when no policy row exists)"))
    def code_defaults(self, obj):
        defaults = registry.get(obj.tool_name) if obj and obj.tool_name else None
        if defaults is None:
            return "this tool is not registered by any loaded agent"
        shown = {"mode": defaults.mode, "approver": defaults.approver, "risk": defaults.risk,
                 "conditions": defaults.conditions, "required_approvals": defaults.required_approvals,
                 "timeout_seconds": defaults.timeout_seconds, "escalation": defaults.escalation or None}
        return format_html("<pre>{}</pre>", json.dumps(shown, indent=2))

    def view_on_site(self, obj):  # "View on site": the policy console's page of this tool
        return f"/policies/{obj.tool_name}/"

    def save_model(self, request, obj, form, change):
        values = {f: getattr(obj, f) for f in services.POLICY_FIELDS}
        saved = services.save_policy(obj.tool_name, values, request.user)  # checked in the form's clean, under lock
        obj.pk, obj.updated_at = saved.pk, saved.updated_at
        # saved, as the console and the API save it, but said as they say it: approvals its groups cannot give
        for sentence in reach.short_quorums(saved):
            messages.warning(request, sentence)

    def delete_model(self, request, obj):
        services.delete_policy(obj.tool_name, request.user)

    def delete_queryset(self, request, queryset):
        for tool_name in list(queryset.values_list("tool_name", flat=True)):
            services.delete_policy(tool_name, request.user)


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    can_delete = False
    fields = readonly_fields = ["user", "decision", "arguments", "feedback", "withdrawn_at", "created_at"]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(admin.ModelAdmin):
    """Read-only here: status changes go through the inbox (services.decide)."""

    # the rule that matched and the deadlines are on the record; the list stays readable on a laptop
    list_display = ["tool_name", "summary", "status", "requester", "approver_group", "risk", "created_at"]
    list_filter = ["status", "risk", "tool_name"]
    search_fields = ["description", "thread_ref", "id"]
    list_select_related = ["requester", "approver_group"]
    inlines = [DecisionInline]
    readonly_fields = ["inbox_link", "rule_said"]

    class Media:
        css = {"all": ["css/admin.css"]}

    def get_fields(self, request, obj=None):  # the link to the inbox page first, then the record
        fields = [f for f in super().get_fields(request, obj) if f not in ("inbox_link", "rule_said")]
        # the rule in the admin's words, where the engine's English record would be
        return ["inbox_link", *("rule_said" if f == "matched_rule" else f for f in fields)]

    @admin.display(description=_("rule that matched"))
    def rule_said(self, obj):
        return rule_words.said(obj.matched_rule) or "—"

    @admin.display(description=_("Description"), ordering="description")
    def summary(self, obj):  # with the way to the inbox page under it (a column of its own scrolled off a laptop)
        # in the admin's language, as the inbox says it (the stored one is the requester's)
        return format_html('{}<br><a href="{}">{}</a>', Truncator(said(obj, "description")).chars(90),
                           self.view_on_site(obj), _("Open in the inbox"))

    @admin.display(description=_("Inbox"))
    def inbox_link(self, obj):
        return format_html('<a href="{}">{}</a>', self.view_on_site(obj), _("Open in the inbox"))

    def view_on_site(self, obj):  # "View on site" on the record: its page in the inbox
        return f"/inbox/{obj.pk}/"

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "action", "actor", "tool_name", "object_ref"]
    # the actor may be empty, so Django's list would read each row's on its own (100 per page)
    list_select_related = ["actor"]
    list_filter = ["action", "tool_name"]
    search_fields = ["object_ref", "tool_name"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(ThreadGrant)
class ThreadGrantAdmin(admin.ModelAdmin):
    """Visible here; revoked through the API (services.revoke_grant), never deleted."""

    list_display = ["tool_name", "thread_ref", "user", "created_at", "revoked_at", "revoked_by"]
    list_select_related = ["user", "revoked_by"]  # revoked_by may be empty: not joined by default
    list_filter = ["tool_name"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(NotificationSetting)
class NotificationSettingAdmin(admin.ModelAdmin):
    """A person's approval mails (they set it themselves at /inbox/settings/)."""

    list_display = ("user", "mail", "updated_at")
    list_filter = ("mail",)
    search_fields = ("user__username", "user__email")
    raw_id_fields = ("user",)


@admin.register(MailLink)
class MailLinkAdmin(admin.ModelAdmin):
    """Which one-click mail links were sent and used (read-only: they are the links' state)."""

    list_display = ("request", "user", "created_at", "used_at", "used_decision")
    list_filter = ("used_decision",)
    search_fields = ("request__id", "user__username")
    readonly_fields = ("nonce", "request", "user", "created_at", "used_at", "used_decision")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class GroupForm(TeamAdmin.form):
    def clean_name(self):
        name, was = self.cleaned_data["name"], self.instance.name
        places = access.named_by(was) if self.instance.pk and name != was else []
        if places:  # renamed, each would route to a new, empty group of the old name
            raise forms.ValidationError(_("%(group)s is named by %(places)s: renamed, their requests would go to "
                                          "a new, empty group of the old name. Save a policy with this group for "
                                          "those tools, or change their rules, in Policies first.")
                                        % {"group": was, "places": "; ".join(places)})
        return name


class AccountForm(PersonAdmin.form):
    def clean_username(self):
        name, was = self.cleaned_data["username"], self.instance.get_username()
        places = access.named_by_account(was) if self.instance.pk and name != was else []
        if places:  # renamed, a rule on the old name (a deny) would match nobody
            raise forms.ValidationError(_("%(user)s is named by %(places)s: renamed, those rules would no longer "
                                          "apply to this account. Change the rules in Policies first.")
                                        % {"user": was, "places": "; ".join(places)})
        return name


admin.site.unregister(User)


@admin.register(User)
class RuledPersonAdmin(PersonAdmin):
    """An account that rules name by its name keeps it (access.named_by_account). A change that leaves a
    group's waiting requests with nobody to decide them says so on the page (approvals/stranded.py tells
    the admins of each request too)."""

    form = AccountForm

    def save_model(self, request, obj, form, change):
        # the groups as they were: the form's own are saved after this (save_related)
        obj._agui_groups_before = set(obj.groups.values_list("pk", flat=True)) if obj.pk else set()
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        obj = form.instance
        left = getattr(obj, "_agui_groups_before", set())
        if obj.is_active:
            left = left - set(obj.groups.values_list("pk", flat=True))
        for group, requests in sorted(stranded.stranded(left).items()):
            messages.warning(request, ngettext(
                "%(group)s now has nobody who may decide its %(count)s waiting request: add someone to the "
                "group, or it waits until its deadline.",
                "%(group)s now has nobody who may decide its %(count)s waiting requests: add someone to the "
                "group, or they wait until their deadlines.", len(requests)) % {"group": group, "count": len(requests)})


admin.site.unregister(Group)


@admin.register(Group)
class RoutedGroupAdmin(TeamAdmin):
    """A group that rules name by its name keeps it (access.named_by), and is not deleted: deleted, the
    next request a rule routed to it made a new, empty group of that name (policy._named_group) and
    waited there, unseen."""

    form = GroupForm

    @staticmethod
    def named_in(obj):
        kept = list(TeamAdmin.named_in(obj))
        yield from kept
        for place in [] if kept else access.named_by(obj.name):  # its history says enough already
            yield gettext("%(place)s name %(group)s: deleted, its requests would go to a new, empty group of "
                          "that name") % {"place": place, "group": obj.name}
