from . import registry
from .models import ToolPolicy


def approver_group_names():
    names = {d.approver.split(":", 1)[1] for d in registry.all_tools().values() if d.approver.startswith("group:")}
    names |= set(ToolPolicy.objects.filter(approver_group__isnull=False).values_list("approver_group__name", flat=True))
    return names | {"reviewers"}


def is_reviewer(user):
    """Staff, or members of `reviewers` or of any group that decides a tool."""
    if not user.is_authenticated:
        return False
    if user.is_staff:
        return True
    return user.groups.filter(name__in=approver_group_names()).exists()
