"""snapshot / replace / apply_patch: every change is a JSON Patch, versioned and recorded."""

import jsonpatch
from django.db import transaction

from .models import SharedState, StateChange


class StateConflict(Exception):
    def __init__(self, current):
        super().__init__(f"state changed since version; current version is {current.version}")
        self.current = current


def snapshot(key):
    state = SharedState.objects.filter(key=key).first()
    return (state.data, state.version) if state else ({}, 0)


def _locked(key):
    state, _ = SharedState.objects.get_or_create(key=key)
    return SharedState.objects.select_for_update().get(pk=state.pk)


def _commit(state, patch_ops, source, run_ref, user):
    state.version += 1
    state.save(update_fields=["data", "version", "updated_at"])
    StateChange.objects.create(
        state=state, version=state.version, patch=patch_ops, source=source, run_ref=run_ref or "", user=user
    )


def replace(key, data, *, source, run_ref="", user=None, base_version=None):
    """Replace the document; returns the RFC 6902 patch actually applied (may be empty)."""
    with transaction.atomic():
        state = _locked(key)
        if base_version is not None and base_version != state.version:
            raise StateConflict(state)
        patch_ops = jsonpatch.make_patch(state.data, data).patch
        if patch_ops:
            state.data = data
            _commit(state, patch_ops, source, run_ref, user)
        return patch_ops


def apply_patch(key, patch_ops, *, source, run_ref="", user=None, base_version=None):
    """Apply a JSON Patch; raises jsonpatch.JsonPatchException on a patch that does not apply."""
    with transaction.atomic():
        state = _locked(key)
        if base_version is not None and base_version != state.version:
            raise StateConflict(state)
        state.data = jsonpatch.apply_patch(state.data, patch_ops)
        _commit(state, list(patch_ops), source, run_ref, user)
        return list(patch_ops)
