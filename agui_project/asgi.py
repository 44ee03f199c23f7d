import gc
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agui_project.settings")

from agui_project import daphne_frames, daphne_http, logs, twisted_writes  # noqa: E402

twisted_writes.install()  # Daphne's WebSocket frames go out when sent (agui_project/twisted_writes.py)
daphne_frames.install()  # autobahn formats a frame's debug line only when it writes it
daphne_frames.close_with_a_code()  # a socket failed (a frame too big) hears why: 1009, not a dropped connection
daphne_http.install()  # Twisted leaves a POST's body to Django (agui_project/daphne_http.py)
logs.hide_secrets_in_access_log()  # a mail link's token is not written to Daphne's access log

from agui_project.handler import get_asgi_application  # noqa: E402  (Django's, fewer thread hops)

django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from agents.routing import websocket_urlpatterns as agent_ws  # noqa: E402
from agui_project.sockets import SameOriginValidator, no_such_socket, socket_stack  # noqa: E402
from approvals.routing import websocket_urlpatterns as approval_ws  # noqa: E402

# any other path is refused at its handshake (4404), not a 500 and a traceback per attempt
unrouted = [re_path(r"", no_such_socket)]

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # the Origin must be this site (scheme, host and port) or a CSRF-trusted origin (agui_project/sockets.py)
        "websocket": SameOriginValidator(socket_stack(URLRouter(agent_ws + approval_ws + unrouted))),
    }
)

from agui_project import agreement  # noqa: E402

if agreement.served_by_daphne(sys.argv):
    agreement.keep_checking("web")  # the settings every process must share, compared from the start

# Django, the apps and their libraries, made at start and kept for the process's life, leave the
# cyclic collector's passes: Daphne's full collections took 135-226 ms, a few seconds apart under
# the fan-out bench, and 24-71 ms with these frozen (README "Performance", eighth round)
gc.freeze()
