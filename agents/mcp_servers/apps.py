from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MCPServersConfig(AppConfig):
    name = "agents.mcp_servers"
    label = "mcp_servers"
    verbose_name = _("Tools from MCP servers")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from agui_project.destinations import where_it_goes
        from approvals import account_audit

        from . import catalog, client, services
        from .models import MCPServer

        # every server added, changed or deleted is in the audit trail (a stdio one is a command run on this
        # host); of its environment and headers only the names, whose values are often credentials
        account_audit.watch_connection(
            MCPServer, kind="mcp_server", ref=lambda m: f"mcp:{m.name}",
            fields=("name", "transport", "command", "args", "cwd", "url", "env", "headers", "agents", "enabled"),
            shown=lambda m: {"name": m.name, "transport": m.transport, "command": m.command, "args": list(m.args or []),
                             "cwd": m.cwd, "url": where_it_goes(m.url), "env": sorted(m.env or {}),
                             "headers": sorted(m.headers or {}), "agents": list(m.agents or []),
                             "enabled": m.enabled},
            named_by="name")

        # the catalog registers the MCP tools with approvals' registry (catalog.sync, its refresh hook);
        # what a call or a notification learns about a server is written by services
        catalog.on_unreachable = services.mark_unhealthy
        client.hub.on_tools_changed = services.tools_changed
