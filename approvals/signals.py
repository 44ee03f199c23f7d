from django.dispatch import Signal

# Sent on commit when an ApprovalRequest leaves "pending"; kwargs: request (ApprovalRequest).
approval_resolved = Signal()

# Sent after commit for each inbox notice of a request; kwargs: kind (requested | decided | expired |
# cancelled | reminded | escalated), request. Webhooks listen (webhooks/receivers.py).
approval_event = Signal()

# Sent after commit when a tool call's outcome is recorded (our own runs at execution; outside
# agents through the outcome API); kwargs: data (plain JSON: tool_name, outcome, ...), approval_ref.
tool_outcome = Signal()
