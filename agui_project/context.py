from approvals.access import is_reviewer


def nav(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"nav_is_reviewer": is_reviewer(user), "nav_is_staff": user.is_staff}
