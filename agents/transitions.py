"""Run and ToolCall status changes, read from the maps their models declare.

Every write is conditional on a status the map allows it to leave (`filter(status__in=...)
.update(...)`), so a process that lost its claim (a worker declared lost while it was stuck)
cannot write over what another decided: the call returns False and nothing changes. Asking for
a status the map never reaches is a programming error and raises.
"""

from .models import Run, ToolCall


def sources(model, to, leaving=None):
    """The statuses `to` may be reached from (narrowed to `leaving` when given)."""
    allowed = {src for src, targets in model.TRANSITIONS.items() if to in targets}
    if leaving is not None:
        wrong = set(leaving) - allowed
        if wrong:
            raise ValueError(f"{model.__name__}: {', '.join(sorted(wrong))} -> {to} is not an allowed transition")
        allowed = set(leaving)
    if not allowed:
        raise ValueError(f"{model.__name__}: nothing may become {to}")
    return allowed


def move_run(run_id, to, leaving=None, **fields):
    """Run `run_id` -> `to`; False when it is no longer in a status that may become `to`."""
    return Run.objects.filter(pk=run_id, status__in=sources(Run, to, leaving)).update(status=to, **fields) == 1


def move_call(call_id, to, leaving=None, thread=None, **fields):
    """ToolCall `call_id` (of `thread`, when given) -> `to`; False when it is no longer in a status
    that may become `to`."""
    calls = ToolCall.objects.filter(pk=call_id, status__in=sources(ToolCall, to, leaving))
    if thread is not None:
        calls = calls.filter(thread=thread)
    return calls.update(status=to, **fields) == 1
