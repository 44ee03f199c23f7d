"""Work a request does after its answer is sent.

What a decision tells others once it is committed (the inbox's live notices, webhooks) tells the
decider nothing. In a request of agui_project.handler, inside answer_first(), later() keeps such
work until the response has gone out, then runs it on the request's own thread, before
request_finished closes its database connections. Elsewhere (the test client, a task, a socket)
later() runs the work at once. Starlette's BackgroundTasks do this for its responses; Django has no
such hook. The paused run a decision wakes is not put here (approvals/services._resolved): the
person waiting on it would wait for the decider's answer too.
"""

import contextlib

from .handler import request_thread


@contextlib.contextmanager
def answer_first():
    """Within, later() defers its work until the running request's response is sent. Not for a
    stream: the work would wait for its end."""
    thread = request_thread()
    if thread is None:
        yield
        return
    before, thread.answer_first, thread.defers = thread.answer_first, True, True
    try:
        yield
    finally:
        thread.answer_first = before


def later(fn):
    """Run fn after the response (inside answer_first()), else now."""
    thread = request_thread()
    if thread is not None and thread.answer_first and not thread.closing:
        thread.after.append(fn)
    else:
        fn()

