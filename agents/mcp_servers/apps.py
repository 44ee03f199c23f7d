from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MCPServersConfig(AppConfig):
    name = "agents.mcp_servers"
    label = "mcp_servers"
    verbose_name = _("Tools from MCP servers")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import catalog, client, services

        # the catalog registers the MCP tools with approvals' registry (catalog.sync, its refresh hook);
        # what a call or a notification learns about a server is written by services
        catalog.on_unreachable = services.mark_unhealthy
        client.hub.on_tools_changed = services.tools_changed
