"""What runs a thread inside a worker: the agent loop, the workflow loop, shared-state sync, tool
execution with its claims, leases and recovery, questions to the user, @tool, the event stream."""
