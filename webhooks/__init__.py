"""Signed outgoing webhooks (Standard Webhooks): endpoints, deliveries and their attempts.

Layer: above approvals (it listens to approvals.signals), below nothing; agents and approvals never
import it, they send signals it receives."""
