from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.db import models
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _
from rest_framework.authtoken.admin import TokenAdmin
from rest_framework.authtoken.models import TokenProxy

from agui_project.auth import token_expires_at

from .forms import ProfileAdminForm
from .models import Profile


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    form = ProfileAdminForm
    # what the person's browser last reported: theirs to change, by using the site
    readonly_fields = ("browser_language", "browser_time_zone")
    list_display = ("user", "language", "updated_at")
    list_filter = ("language",)
    search_fields = ("user__username", "user__email")
    autocomplete_fields = ("user",)


admin.site.unregister(TokenProxy)


def _token_title(token):
    return gettext("token of %(name)s") % {"name": token.user.get_username()}


# DRF's proxy exists for this page only; its name was the key, written into the page titles, the
# delete confirmation and the admin's log of actions (django_admin_log, the index's recent actions)
TokenProxy.__str__ = _token_title


@admin.register(TokenProxy)
class AccountTokenAdmin(TokenAdmin):
    """DRF's Tokens page without the keys: a key is its account's way in, and the list showed every
    account's to whoever could see the page. A key is read once, on the page that follows its making,
    and only a superuser makes one (a token holds all its account may do: an admin's too). A token
    is made or revoked, never changed."""

    list_display = ("user", "created", "expires")

    @admin.display(description=_("expires"))
    def expires(self, obj):
        return token_expires_at(obj) or _("never")

    def has_add_permission(self, request):
        return request.user.is_superuser and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        # its one field was the user: a key its holder knew, moved to another account, acted as that account
        return False

    def add_view(self, request, form_url="", extra_context=None):
        if not self.has_add_permission(request):
            raise PermissionDenied  # Django's add view would answer a staff member's POST the same
        return super().add_view(request, form_url, extra_context)

    def response_add(self, request, obj, post_url_continue=None):
        return TemplateResponse(request, "admin/authtoken/key_once.html", {
            **self.admin_site.each_context(request), "token": obj, "expires": token_expires_at(obj),
            "back": reverse("admin:authtoken_tokenproxy_changelist")})


class KeepsHistory:
    """A person or group other records name and protect (requests asked, decisions made, audit rows,
    requests and policies routed to a group: on_delete=PROTECT) is not deleted, and the delete page
    (and the "delete selected" action) says so from one EXISTS per kind of record. Django's page
    loaded every one of those rows first (29 s for a requester of 50,000 requests), then told a
    superuser they lacked the permission to delete approval requests."""

    instead = ""

    def get_deleted_objects(self, objs, request):
        named = [said for obj in objs for said in self.named_in(obj)]
        if named:
            return [], {}, set(), [*named, self.instead]
        return super().get_deleted_objects(objs, request)

    @staticmethod
    def named_in(obj):
        # hidden relations too (related_name="+": a request's requester, a decision's reviewer)
        for rel in obj._meta.get_fields(include_hidden=True):
            if rel.auto_created and not rel.concrete and getattr(rel, "on_delete", None) is models.PROTECT and rel.related_model._base_manager.filter(
                    **{rel.field.name: obj}).exists():
                yield gettext("%(records)s name %(name)s as %(field)s") % {
                    "records": rel.related_model._meta.verbose_name_plural, "name": obj,
                    "field": rel.field.verbose_name}


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class PersonAdmin(KeepsHistory, UserAdmin):
    instead = _("Switch the account off instead (untick Active): it can no longer sign in or decide, and its "
                "history keeps its name.")
    actions = ["switch_off"]

    @admin.action(description=_("Switch the selected accounts off"), permissions=["change"])
    def switch_off(self, request, queryset):
        # a save() each, not one update(): each switch-off is heard as the form's is (its sockets closed,
        # its pending requests and runs ended: agents/account_off.py); never the admin's own account
        accounts = list(queryset.filter(is_active=True).exclude(pk=request.user.pk))
        for user in accounts:
            user.is_active = False
            user.save(update_fields=["is_active"])
        self.message_user(request, ngettext("%(count)d account switched off.", "%(count)d accounts switched off.",
                                            len(accounts)) % {"count": len(accounts)})


@admin.register(Group)
class TeamAdmin(KeepsHistory, GroupAdmin):
    instead = _("Take its members out instead: nobody decides as this group any more, and its history keeps "
                "its name.")
