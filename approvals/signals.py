from django.dispatch import Signal

# Sent on commit when an ApprovalRequest leaves "pending"; kwargs: request (ApprovalRequest).
approval_resolved = Signal()
