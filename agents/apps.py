from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AgentsConfig(AppConfig):
    name = "agents"
    verbose_name = _("Agents and chats")  # the admin's heading
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from agui_project import (
            access_changes,  # noqa: F401  (a user's access changed: sockets closed, a new password's token revoked)
            sockets,  # noqa: F401  (closes a session's sockets on logout)
        )
        from approvals import ran

        from . import (
            checks,  # noqa: F401  (demo accounts on the published password: migrate, check --database)
            presenters,
            receivers,  # noqa: F401  (connects approval_resolved)
            simulation,  # noqa: F401  (gives the policy simulator the recorded tool calls)
            tasks,  # noqa: F401  (services enqueue run_agent by name: agents/dispatch.py)
        )
        from .catalog import load_agents
        from .runtime import workflows  # noqa: F401  (registers the loop that runs workflows)

        load_agents()  # registers every tool's defaults with approvals
        ran.add_reader(presenters.approval_outcome)  # a request's page: what became of its call
