"""A tiny client of agui-inbox's approvals API, for agents that run anywhere.

    inbox = Inbox("https://inbox.example.com", token)
    approval = inbox.request("crm.delete_contact", {"email": "a@example.com"}, description="...")
    approval.wait(timeout=600)          # long-polls GET /api/approvals/<id>/?wait=...
    if approval.approved: ...run the call with approval.arguments...; approval.report("succeeded")

    @require_approval("crm.delete_contact", inbox=inbox, schema={...})
    def delete_contact(email): ...
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx

__all__ = ["Inbox", "Approval", "require_approval", "ApprovalError", "NotApproved", "StillPending", "InboxError"]

APPROVED = {"approved", "modified"}
MAX_WAIT = 60  # the server's limit for one long-poll
UNAVAILABLE = {502, 503, 504}  # a proxy's answers while the inbox behind it restarts
RETRY_FIRST, RETRY_LAST = 0.5, 30.0  # seconds between a waiting client's tries when the inbox is away
_NOT_RUN = {"rejected": "was rejected", "denied": "is blocked by policy", "expired": "expired unanswered",
            "cancelled": "was withdrawn", "responded": "was not run; the reviewer answered"}


class ApprovalError(Exception):
    """Base of this client's errors."""


class InboxError(ApprovalError):
    """The inbox refused a request (4xx/5xx): `status_code`, `body` (its JSON)."""

    def __init__(self, status_code: int, body: Any):
        self.status_code, self.body = status_code, body
        message = body.get("message") if isinstance(body, dict) else None
        super().__init__(f"agui-inbox answered {status_code}: {message or body}")


class NotApproved(ApprovalError):
    """The call was rejected, denied by policy, answered with guidance (`responded`: the reviewer's
    words are in `feedback`, for the model), expired or cancelled: do not run it."""

    def __init__(self, approval: Approval):
        self.approval = approval
        self.status, self.feedback, self.responded = approval.status, approval.feedback, approval.responded
        what = _NOT_RUN.get(approval.status, f"was {approval.status}")
        why = f": {approval.feedback}" if approval.feedback else ""
        super().__init__(f"{approval.tool_name} {what}{why}")


class StillPending(ApprovalError):
    """Nobody answered within the timeout given to wait(); the request is still open."""


class Approval:
    """One request as the inbox shows it (`data`: the JSON of GET /api/approvals/<id>/)."""

    def __init__(self, inbox: Inbox, data: dict):
        self.inbox, self.data = inbox, data

    id = property(lambda self: self.data["id"])
    status = property(lambda self: self.data["status"])
    tool_name = property(lambda self: self.data["tool_name"])
    feedback = property(lambda self: self.data.get("feedback") or "")
    pending = property(lambda self: self.status == "pending")
    approved = property(lambda self: self.status in APPROVED)
    # not run: the reviewer wrote guidance instead (in `feedback`), to hand to the model as the result
    responded = property(lambda self: self.status == "responded")

    @property
    def arguments(self) -> dict:
        """What to run: the reviewer's edit if there was one, else the arguments asked for."""
        final = self.data.get("final_arguments")
        return final if final is not None else self.data["arguments"]

    def refresh(self, wait: float = 0) -> Approval:
        params = {"wait": f"{wait:g}"} if wait else None
        self.data = self.inbox._call("GET", f"/api/approvals/{self.id}/", params=params,
                                     timeout=wait + self.inbox.timeout)
        return self

    def wait(self, timeout: float | None = None) -> Approval:
        """Long-poll until answered (or `timeout` seconds pass: StillPending). None: as long as it takes.
        A dropped connection or a gateway's 502/503/504 (the inbox restarting) is asked again, with a
        backoff, until the timeout: the request is safe in the inbox meanwhile."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = RETRY_FIRST
        while self.pending:
            left = MAX_WAIT if deadline is None else deadline - time.monotonic()
            if left <= 0:
                raise StillPending(f"request {self.id} is still pending after {timeout} s")
            try:
                self.refresh(wait=min(MAX_WAIT, max(left, 0.1)))
                pause = RETRY_FIRST
            except (httpx.TransportError, InboxError) as exc:
                if isinstance(exc, InboxError) and exc.status_code not in UNAVAILABLE:
                    raise
                time.sleep(pause if deadline is None else max(0.0, min(pause, deadline - time.monotonic())))
                pause = min(pause * 2, RETRY_LAST)
        return self

    def report(self, outcome: str, detail: str = "") -> Approval:
        """How the call went: "succeeded", "failed" or "unknown" (once per request). A lost answer is
        sent again; the inbox's "already reported" for this same outcome means it was taken (InboxError
        when another outcome was reported)."""
        body = {"outcome": outcome, "detail": detail[:5000]}
        for attempt in range(3):
            try:
                self.data = self.inbox._call("POST", f"/api/approvals/{self.id}/outcome/", json=body)
                return self
            except httpx.TransportError:
                if attempt == 2:
                    raise
                time.sleep(0.5 * 2 ** attempt)
            except InboxError as exc:
                if _code(exc.body) != "outcome_already_reported":
                    raise
                self.refresh()  # our own attempt whose answer was lost, or an earlier report: which outcome?
                if (self.data.get("outside") or {}).get("outcome") != outcome:
                    raise
                return self
        raise AssertionError("unreachable")

    def withdraw(self, reason: str = "") -> Approval:
        """Take the pending request back (you stopped waiting): no reviewer approves a call that will not run.
        InboxError 409 when it was settled meanwhile (refresh() says how)."""
        self.data = self.inbox._call("POST", f"/api/approvals/{self.id}/withdraw/", json={"reason": reason[:5000]})
        return self

    def __repr__(self):
        return f"<Approval {self.id} {self.tool_name} {self.status}>"


class Inbox:
    """`url`: the inbox's address; `token`: a user's or a service account's API token."""

    def __init__(self, url: str, token: str, *, timeout: float = 30, client: httpx.Client | None = None):
        self.url, self.timeout = url.rstrip("/"), timeout
        self.client = client or httpx.Client(base_url=self.url, headers={"Authorization": f"Token {token}"})

    def _call(self, method, path, *, timeout=None, headers=None, **kwargs):
        response = self.client.request(method, path, timeout=timeout or self.timeout, headers=headers, **kwargs)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.status_code >= 400:
            raise InboxError(response.status_code, body)
        return body

    def request(self, tool_name: str, arguments: dict, *, description: str = "", reason: str = "",
                reversible: bool = False, impact: str = "", risk: str | None = None, thread: str = "",
                run: str = "", agent_name: str = "", schema: dict | None = None, callback_url: str = "",
                user_wrote_at: datetime | str | None = None, idempotency_key: str | None = None) -> Approval:
        """Ask for approval of one call. A retry with the same idempotency_key returns the same request
        (one is made up when none is given, and reused if the first attempt's answer was lost).
        The same call rejected earlier in `thread` is rejected again at once with the earlier feedback,
        unless the person wrote since: pass `user_wrote_at`, when they last did."""
        body = {"tool_name": tool_name, "arguments": arguments, "description": description, "reason": reason,
                "reversible": reversible, "impact": impact, "thread": thread, "run": run, "agent_name": agent_name}
        if isinstance(user_wrote_at, datetime):
            user_wrote_at = user_wrote_at.isoformat()
        body.update({k: v for k, v in (("risk", risk), ("schema", schema), ("callback_url", callback_url),
                                       ("user_wrote_at", user_wrote_at)) if v})
        headers = {"Idempotency-Key": idempotency_key or str(uuid.uuid4())}
        # a lost answer, or a gateway's 502/503/504, is asked again under the same key: still one request
        for attempt in range(3):
            try:
                return Approval(self, self._call("POST", "/api/approvals/", json=body, headers=headers))
            except (httpx.TransportError, InboxError) as exc:
                if attempt == 2 or (isinstance(exc, InboxError) and exc.status_code not in UNAVAILABLE):
                    raise
                time.sleep(0.5 * 2 ** attempt)
        raise AssertionError("unreachable")

    @classmethod
    def from_env(cls) -> Inbox:
        """AGUI_INBOX_URL (default http://127.0.0.1:8000) and AGUI_INBOX_TOKEN."""
        token = os.environ.get("AGUI_INBOX_TOKEN")
        if not token:
            raise ApprovalError("set AGUI_INBOX_TOKEN (an API token of the inbox), or pass inbox=Inbox(url, token)")
        return cls(os.environ.get("AGUI_INBOX_URL", "http://127.0.0.1:8000"), token)

    def get(self, approval_id: str) -> Approval:
        return Approval(self, self._call("GET", f"/api/approvals/{approval_id}/"))

    def close(self):
        self.client.close()


def require_approval(tool_name: str, *, inbox: Inbox | None = None, timeout: float | None = None,
                     describe: Callable[..., str] | None = None, **request_options):
    """Decorate a function whose keyword arguments are the tool's arguments: each call asks the inbox,
    waits, runs the function with the final arguments (a reviewer may have edited them) when approved,
    reports succeeded/failed, and raises NotApproved (rejected, denied, expired) or StillPending.
    An `async def` gets an async wrapper: the asking and waiting run on a thread, off the event loop, and
    the outcome is reported once the coroutine has finished (not when it was made).
    Without `inbox`: Inbox.from_env(), made at the first call."""
    shared = []

    def decorate(fn):
        signature = inspect.signature(fn)

        def approved(args, kwargs) -> Approval:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            description = describe(**arguments) if describe else f"{tool_name}({_short(arguments)})"
            if not shared:
                shared.append(inbox or Inbox.from_env())
            approval = shared[0].request(tool_name, arguments, description=description, **request_options)
            approval.wait(timeout)
            if not approval.approved:
                raise NotApproved(approval)
            return approval

        async def finished(approval, awaitable):
            try:
                result = await awaitable
            except Exception as exc:
                await asyncio.to_thread(approval.report, "failed", f"{type(exc).__name__}: {exc}")
                raise
            except BaseException as exc:  # cancelled (a timeout, a sibling's failure, a shutdown) as it ran:
                # said at once, on this thread: an await here could be cancelled in its turn
                approval.report("failed", f"{type(exc).__name__}: stopped before it finished")
                raise
            await asyncio.to_thread(approval.report, "succeeded")
            return result

        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            # its body runs as it is iterated, after the wrapper would have reported it
            raise TypeError("require_approval takes a function or an async def, not a generator")

        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def async_wrapper(*args, **kwargs):
                approval = await asyncio.to_thread(approved, args, kwargs)
                return await finished(approval, fn(**approval.arguments))

            return async_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            approval = approved(args, kwargs)
            try:
                result = fn(**approval.arguments)
            except Exception as exc:
                approval.report("failed", f"{type(exc).__name__}: {exc}")
                raise
            except BaseException as exc:  # interrupted as it ran (Ctrl-C)
                approval.report("failed", f"{type(exc).__name__}: stopped before it finished")
                raise
            if inspect.isawaitable(result):  # a plain def that hands back a coroutine: it has not run yet
                return finished(approval, result)
            approval.report("succeeded")
            return result

        return wrapper

    return decorate


def _code(body):
    return body.get("code") if isinstance(body, dict) else None


def _short(arguments, limit=200):
    text = ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return text if len(text) <= limit else text[: limit - 1] + "…"
