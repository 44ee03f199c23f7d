"""Who may use the admin-only APIs that reach outside the product (an MCP server's command runs on
this host; a webhook is sent every approval's arguments)."""

from rest_framework.permissions import DjangoModelPermissions


class StaffWithModelPermissions(DjangoModelPermissions):
    """Staff holding the model's Django permissions, as the admin site asks of them. The staff flag
    alone let an account the admin site refuses register a server's command or a webhook through the
    API. Reads need the view permission too: they show the commands and the signing secrets."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
    }

    def has_permission(self, request, view):
        user = request.user
        if not (user and user.is_active and user.is_staff):
            return False
        # an action that posts but makes nothing (a refresh, a replay) changes the row it names
        kind = getattr(view, "action_permissions", {}).get(getattr(view, "action", None))
        if kind is None:
            return super().has_permission(request, view)
        meta = self._queryset(view).model._meta
        return user.has_perm(f"{meta.app_label}.{kind}_{meta.model_name}")
