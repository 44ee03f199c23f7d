"""Whether an open socket's user may still hear it, asked by each signed-in socket every
STANDING_SECONDS (agui_project/sockets.py).

Signals close sockets at once for what Django announces: a logout, and a save() that switches an
account off, changes its password or its groups (agui_project/access_changes.py). Some ends are
announced by nothing: signing in as someone else in the same browser (login() flushes the old
session and sends no user_logged_out), a session deleted on the server or expired, an account
switched off or taken out of a group by an update that sends no signal (SQL, a directory sync,
queryset.update()). A socket opened with such a session kept hearing the inbox, and a chat socket
kept writing shared state as its user.
"""

from importlib import import_module

from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model

SESSION = "session"  # the session ended, or now names someone else: as a logout
ACCOUNT = "account"  # the account was switched off or deleted: as an access change


def standing(user_id, session_key):
    """(None, the user's group ids) while the socket's user may go on hearing it, else (SESSION or
    ACCOUNT, None). `session_key` None: a socket opened without a session (tests) is not asked that."""
    if session_key is not None:
        data = import_module(settings.SESSION_ENGINE).SessionStore(session_key).load()  # {}: gone or expired
        if str(data.get(SESSION_KEY)) != str(user_id):
            return SESSION, None
    users = get_user_model()
    if not users.objects.filter(pk=user_id, is_active=True).exists():
        return ACCOUNT, None
    return None, frozenset(users.groups.through.objects.filter(user_id=user_id).values_list("group_id", flat=True))
