"""An SMTP server that does not answer no longer holds the run that asked for a person: the run
pauses and its interrupt reaches the client while the reviewers' mail still waits for the server
(the worker sent it in place before, so the run stayed `running`, its card unseen and its worker
slot taken, until EMAIL_TIMEOUT)."""

import socket
import threading
import uuid

import pytest

from tests.agents.test_custom_events import post_sse
from tests.helpers import accept_each

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


class SilentSMTP:
    """Takes connections and says nothing: a mail server that is slow to greet."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted, self.connected, self.hung_up = [], threading.Event(), threading.Event()
        threading.Thread(target=accept_each, args=(self.listener, self._hold), daemon=True).start()

    def _hold(self, conn):
        self.accepted.append(conn)
        self.connected.set()
        threading.Thread(target=self._watch, args=(conn,), daemon=True).start()

    def _watch(self, conn):
        try:
            if conn.recv(1) == b"":  # the client gave up on it (its timeout)
                self.hung_up.set()
        except OSError:
            pass

    def close(self):
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not)
        self.listener.close()
        for conn in self.accepted:
            conn.shutdown(socket.SHUT_RDWR)  # a FIN now (close alone waits for the watcher's recv)
            conn.close()  # the mail's SMTP client fails at once, and the worker's slot is free


@pytest.fixture
def silent_smtp(settings):
    server = SilentSMTP()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_TIMEOUT = 60
    yield server
    server.close()


def test_the_run_pauses_while_the_reviewers_mail_waits_for_the_server(celery_worker_live, fake_llm, client, demo,
                                                                      silent_smtp):
    from rest_framework.authtoken.models import Token

    from approvals.models import ApprovalRequest

    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    thread_id = f"thread-{uuid.uuid4()}"
    message = {"id": f"msg-{uuid.uuid4()}", "role": "user",
               "content": "Transfer $500 from account 1234567890 to account 0987654321"}
    events = post_sse(client, token, thread_id, messages=[message])
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", events[-3:]  # paused: finance decides, not alice
    assert any(e["type"] == "CUSTOM" and e["name"] == "approval_request" for e in events)
    assert silent_smtp.connected.wait(20)  # the reviewers' mail is on its way, by a task of its own
    assert not silent_smtp.hung_up.is_set()  # and the run did not wait it out
    request = ApprovalRequest.objects.get(thread_ref=thread_id)
    assert request.status == "pending" and request.approver_group.name == "finance"
