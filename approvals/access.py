from . import registry
from .models import ToolPolicy


def approver_group_names():
    names = set()
    for d in registry.all_tools().values():
        for spec in (d.approver, d.escalation):
            if spec.startswith("group:"):
                names.add(spec.split(":", 1)[1])
    for approver, escalation in ToolPolicy.objects.values_list("approver_group__name", "escalation_group__name"):
        names |= {n for n in (approver, escalation) if n}
    return names | {"reviewers"}


def is_reviewer(user):
    """Staff, or members of `reviewers` or of any group that decides (or is escalated) a tool."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return user.groups.filter(name__in=approver_group_names()).exists()
