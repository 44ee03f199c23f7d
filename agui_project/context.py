from functools import cache

from approvals.access import is_reviewer


def nav(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    reviewer = is_reviewer(user)
    context = {"nav_is_reviewer": reviewer, "nav_is_staff": user.is_staff}
    if reviewer:
        from approvals.inbox import pending_mine_count

        # the nav badge on every page (the chat's too); counted only if the page draws it and its
        # view did not count already (a view's own pending_count wins over this)
        context["pending_count"] = cache(lambda: pending_mine_count(user))
    return context
