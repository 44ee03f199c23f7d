"""snapshot / replace / apply_patch / predictions: every change is a JSON Patch, versioned and recorded.

A document has committed `data` at `version`, and may have live predictions (provisional
StateChanges) that overlay top-level keys: the *view* is what clients are shown. People and
agents change the committed data; a change that would touch a key under a live prediction is
refused (PredictionPending) so that nobody edits a value that is about to be committed or
reverted. A `base_version` other than the current one is refused (StateConflict) with the
current document, never merged over. A `schema` (JSON Schema, checked with `jsonschema`) is
checked against the committed data a change would produce (StateInvalid).

Limits (StateTooLarge, before anything is applied or stored): the document's size as compact
UTF-8 JSON (AGUI_STATE_MAX_BYTES) and nesting (AGUI_STATE_MAX_DEPTH), text that is valid Unicode
without NUL, and at most MAX_PATCH_OPS operations. A patch is applied one operation at a time
with a running estimate of the size, so that a few `copy` operations that each double the
document are refused when the estimate passes the limit, not after they have built gigabytes.
"""

import copy
import json
from dataclasses import dataclass, field

import jsonpatch
import jsonpointer
import jsonschema
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agui_project import jsoncheck
from agui_project.queries import Prepared
from agui_project.schema_sentences import jsonschema_sentence

from .models import SharedState, StateChange


class StateError(Exception):
    code = "state_error"


class StateConflict(StateError):
    """The change was made from an older version; `document` is the current one."""

    code = "state_conflict"

    def __init__(self, document, base_version=None):
        if base_version is None:
            message = _("the current version is %(version)s") % {"version": document.version}
        elif base_version > document.version:  # not a change made meanwhile: a version never given out
            message = _("there is no version %(base)s of the state yet; the current version is %(version)s") % {
                "base": base_version, "version": document.version}
        else:
            message = _("the state changed since version %(base)s; the current version is %(version)s") % {
                "base": base_version, "version": document.version}
        super().__init__(message)
        self.document = document


class StateInvalid(StateError):
    """The change does not apply, or breaks the schema; errors: [{"path", "message"}]."""

    code = "state_invalid"

    def __init__(self, message, errors=()):
        super().__init__(message)
        self.message, self.errors = message, list(errors)


class StateTooLarge(StateInvalid):
    """The change would make the document larger or deeper than the limits, or is too long itself."""

    code = "state_too_large"

    def __init__(self, message, path=""):
        super().__init__(message, [{"path": path, "message": message}])
        self.limit = max_bytes()


class PredictionPending(StateError):
    """The change touches keys that a live prediction is about to commit or revert."""

    code = "state_provisional"

    def __init__(self, keys, document):
        super().__init__(
            _("The model's change to %(keys)s awaits a decision; make yours once it is committed or reverted.") % {
                "keys": ", ".join(sorted(keys))}
        )
        self.keys, self.document = set(keys), document


@dataclass
class Document:
    data: dict
    version: int
    predictions: list = field(default_factory=list)  # [(ref, values)] of live predictions, oldest first

    @property
    def view(self):
        out = dict(self.data)
        for _ref, values in self.predictions:
            out.update(values or {})
        return out

    @property
    def provisional(self):
        """{top-level key: ref of the live prediction that shows it}."""
        out = {}
        for ref, values in self.predictions:
            for key in values or {}:
                out[key] = ref
        return out


# --- reading --------------------------------------------------------------------------------


def _predictions(state):
    return list(
        state.changes.filter(status=StateChange.Status.PROVISIONAL).order_by("created_at", "pk").values_list("ref", "values")
    )


def _document(state):
    if state is None:
        return Document({}, 0)
    return Document(copy.deepcopy(state.data), state.version, _predictions(state))


# a thread's state is read several times a run (the model's system message, each turn's view):
# compiled once (agui_project/queries.Prepared); the key is unique
_STATE = Prepared(SharedState, lambda key: SharedState.objects.filter(key=key))


def document(key):
    return _document(_STATE.one(key))


def document_reads(key):
    """document()'s read as (read, values), for queries.read_ahead."""
    return [(_STATE, (key,))]


def snapshot(key):
    """(committed data, version)."""
    state = _STATE.one(key)
    return (state.data, state.version) if state else ({}, 0)


def view(key):
    """(what clients are shown: committed data with live predictions, committed version)."""
    doc = document(key)
    return doc.view, doc.version


# --- validation -----------------------------------------------------------------------------


def json_schema(schema):
    """A full JSON Schema for the document. The short form `{key: property schema}` (as in the
    agent-framework seed) means an object with those properties."""
    if not schema:
        return None
    if any(k in schema for k in ("type", "properties", "$schema", "$defs", "allOf", "anyOf", "oneOf", "$ref")):
        return schema
    return {"type": "object", "properties": schema}


def _pointer_of(path):
    return "".join("/" + jsonpointer.escape(str(p)) for p in path)


def validate(data, schema):
    """Raise StateInvalid when `data` is not an object or breaks `schema`."""
    if not isinstance(data, dict):
        raise StateInvalid(_("the state must be a JSON object"), [{"path": "", "message": _("not an object")}])
    full = json_schema(schema)
    if full is None:
        return
    validator = jsonschema.validators.validator_for(full, default=jsonschema.Draft202012Validator)(full)
    errors = sorted(validator.iter_errors(data), key=lambda e: (_pointer_of(e.absolute_path), e.message))
    if errors:
        details = [{"path": _pointer_of(e.absolute_path), "message": _schema_problem(e)} for e in errors[:20]]
        first = details[0]
        if first["path"]:
            message = _("The shared state does not match the schema at %(path)s: %(problem)s") % {
                "path": first["path"], "problem": first["message"]}
        else:
            message = _("The shared state does not match the schema: %(problem)s") % {"problem": first["message"]}
        raise StateInvalid(message, details)


def _schema_problem(err):
    return jsonschema_sentence(err, lambda names: _("Not allowed here: %(names)s.") % {"names": names})


def touched_keys(ops):
    """Top-level keys a patch reads or writes; "" when it addresses the whole document."""
    keys = set()
    for op in ops:
        for ref in (op.get("path"), op.get("from")):
            if ref is None:
                continue
            parts = jsonpointer.JsonPointer(ref).parts
            keys.add(parts[0] if parts else "")
    return keys


def written_keys(ops):
    """Top-level keys a patch changes ("" for the whole document): a `test` and a `copy`'s `from`
    only read. What was changed since a version is read off these: a person's `test` of a key is
    no edit the model's write would overwrite."""
    keys = set()
    for op in ops:
        kind = op.get("op")
        if kind == "test":
            continue
        keys |= touched_keys([{"path": op.get("path"), **({"from": op.get("from")} if kind == "move" else {})}])
    return keys


# RFC 6902's operations in its order, as refusals list them (jsonpatch.JsonPatch.operations: the same names)
OPS = ("add", "remove", "replace", "move", "copy", "test")


def _op_problem(op):
    """What makes `op` no RFC 6902 operation, in the reader's language, or None. jsonpatch says it in
    English, and checks a pointer only when the operation is applied."""
    if op.get("op") not in OPS:
        return _('its "op" is none of %(ops)s') % {"ops": ", ".join(OPS)}
    for key in ("path", "from") if op["op"] in ("move", "copy") else ("path",):
        try:
            jsonpointer.JsonPointer(op[key])
        except (KeyError, TypeError, AttributeError, jsonpointer.JsonPointerException):
            return _('its "%(key)s" is not a JSON Pointer such as /items/0') % {"key": key}
    if op["op"] in ("add", "replace", "test") and "value" not in op:
        return _('it has no "value"')
    return None


def _check_ops(ops):
    if not isinstance(ops, list) or not all(isinstance(op, dict) for op in ops):
        raise StateInvalid(_("a patch is a list of RFC 6902 operations"),
                           [{"path": "", "message": _("not a list of objects")}])
    for i, op in enumerate(ops):
        problem = _op_problem(op)
        if problem:
            raise StateInvalid(_("Operation %(number)s is not a JSON Patch operation: %(problem)s.") % {
                "number": i + 1, "problem": problem}, [{"path": f"patch.{i}", "message": problem}])
    return jsonpatch.JsonPatch(ops)


# --- limits ---------------------------------------------------------------------------------

MAX_PATCH_OPS = 1000
_NOTHING = object()
WORK_FACTOR = 8  # bytes a patch may copy or re-measure from the document, in multiples of the limit


def max_bytes():  # the defaults are the app's own; the project's settings may change them
    return getattr(settings, "AGUI_STATE_MAX_BYTES", 256 * 1024)


def max_depth():
    return getattr(settings, "AGUI_STATE_MAX_DEPTH", 32)


def size_of(value):
    """Bytes of `value` as compact UTF-8 JSON: what AGUI_STATE_MAX_BYTES counts."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def _too_large(size):
    return StateTooLarge(_("The shared state would grow to %(size)s bytes; the limit is %(limit)s bytes. "
                           "Nothing was changed.") % {"size": f"{size:,}", "limit": f"{max_bytes():,}"})


def check_value(value, at_depth=0, where="state"):
    """Raise when `value`, placed `at_depth` levels below the document's root, nests too deep or
    holds text that is not valid Unicode (the input gate's check, again: a tool's or a model's
    values reach the state without passing an HTTP body or a socket frame)."""
    refusal = jsoncheck.problem(value, max_depth=max(max_depth() - at_depth, 0), prefix=where)
    if refusal is None:
        return
    if refusal.code == "too_deep":
        raise StateTooLarge(_("The shared state may nest at most %(depth)s levels deep (at %(field)s). "
                              "Nothing was changed.") % {"depth": max_depth(), "field": refusal.field}, refusal.field)
    message = refusal.translated()
    raise StateInvalid(message, [{"path": refusal.field, "message": message}])


def check_document(data, before=None):
    """Raise StateTooLarge / StateInvalid unless the whole document `data` is within the limits.

    A document stored larger than the limit (before the limit existed, or under a larger one)
    may still shrink: it is refused only when it grows past the limit and past `before`.
    """
    check_value(data, where="state")
    size = size_of(data)
    if size > max_bytes() and (before is None or size > size_of(before)):
        raise _too_large(size)


class _Budget:
    """A running upper bound of the document's size while a patch applies, and of the work spent."""

    def __init__(self, doc):
        self.estimate = size_of(doc)
        self.limit = max(max_bytes(), self.estimate)  # an oversized document may shrink, not grow
        self.work, self.max_work = 0, WORK_FACTOR * max_bytes()

    def spend(self, n):
        self.work += n
        if self.work > self.max_work:
            raise StateTooLarge(_("This patch copies too much data at once; send the whole document (PUT) "
                                  "instead. Nothing was changed."))
        return n

    def grow(self, n, doc, replaced=_NOTHING):
        """Before an operation that adds `n` bytes to `doc`, overwriting `replaced` (if anything)."""
        self.estimate += n
        if self.estimate > self.limit:  # what left the document is not subtracted as it goes: measure now
            gone = 0 if replaced is _NOTHING else self.spend(size_of(replaced))
            self.estimate = self.spend(size_of(doc)) - gone + n
            if self.estimate > self.limit:
                raise _too_large(self.estimate)


def _resolve(doc, ref):
    try:
        return True, jsonpointer.resolve_pointer(doc, ref)
    except jsonpointer.JsonPointerException:
        return False, None  # the operation itself reports it


def _replaced(doc, op):
    """The value an add / replace / copy overwrites at its path, or _NOTHING (an insertion)."""
    if op["path"] == "":
        return doc
    try:
        parent, part = jsonpointer.JsonPointer(op["path"]).to_last(doc)
    except (jsonpointer.JsonPointerException, TypeError):
        return _NOTHING
    if isinstance(parent, dict) and part in parent:
        return parent[part]
    if op["op"] == "replace" and isinstance(parent, list) and isinstance(part, int) and 0 <= part < len(parent):
        return parent[part]
    return _NOTHING


def _apply_bounded(data, ops):
    """Apply `ops` to a copy of `data`, one at a time, refusing before the document outgrows the limits."""
    if len(ops) > MAX_PATCH_OPS:
        raise StateTooLarge(_("A patch may have at most %(max)s operations; this one has %(count)s.") % {
            "max": MAX_PATCH_OPS, "count": len(ops)})
    doc = copy.deepcopy(data)
    budget = _Budget(doc)
    for i, op in enumerate(ops):
        depth = len(jsonpointer.JsonPointer(op["path"]).parts)
        if op["op"] in ("add", "replace") and "value" in op:
            check_value(op["value"], depth, where=f"patch.{i}.value")
            budget.grow(size_of(op["value"]), doc, _replaced(doc, op))
        elif op["op"] in ("copy", "move") and "from" in op:
            found, value = _resolve(doc, op["from"])
            if found:
                check_value(value, depth, where=f"patch.{i}.from")
                n = budget.spend(size_of(value))
                if op["op"] == "copy":
                    budget.grow(n, doc, _replaced(doc, op))
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
            raise _does_not_apply(i, op, exc) from exc
    return doc


def _does_not_apply(i, op, exc):
    """An operation that does not apply, said in the reader's language. jsonpatch's own messages are
    English, and some quote the whole document or the value at the path (up to the size limit)."""
    if isinstance(exc, jsonpatch.JsonPatchTestFailed):
        reason = _("the value there is not the one the test expects")
    elif isinstance(exc, jsonpointer.JsonPointerException):
        reason = _("nothing in the state is at that path")
    elif isinstance(exc, jsonpatch.JsonPatchConflict):
        reason = _("nothing is there to change, or what is there cannot hold it")
    else:
        reason = _("the operation cannot be applied")
    path = op.get("from") if isinstance(exc, jsonpointer.JsonPointerException) and op.get("from") else op.get("path")
    message = _("Operation %(number)s (%(op)s at \"%(path)s\") does not apply: %(reason)s.") % {
        "number": i + 1, "op": op.get("op"), "path": str(path)[:200], "reason": reason}
    return StateInvalid(message, [{"path": f"patch.{i}", "message": reason}])


# --- changing -------------------------------------------------------------------------------


def _locked(key):
    state, _created = SharedState.objects.get_or_create(key=key)
    return SharedState.objects.select_for_update().get(pk=state.pk)


def _check_base(state, base_version):
    if base_version is not None and base_version != state.version:
        raise StateConflict(_document(state), base_version)


def _check_provisional(state, ops):
    doc = _document(state)
    live = doc.provisional
    touched = touched_keys(ops)
    blocked = {k for k in touched if k in live} | ({"(the whole document)"} if "" in touched and live else set())
    if blocked:
        raise PredictionPending(blocked, doc)


def _commit(state, new_data, patch_ops, *, source, run_ref, user, base_version, schema):
    check_document(new_data, before=state.data)
    validate(new_data, schema)
    state.data = new_data
    state.version += 1
    state.save(update_fields=["data", "version", "updated_at"])
    return StateChange.objects.create(
        state=state, version=state.version, base_version=base_version, patch=patch_ops, source=source,
        run_ref=run_ref or "", user=user, resolved_at=timezone.now(),
    )


def replace(key, data, *, source, run_ref="", user=None, base_version=None, schema=None):
    """Make the document show `data`; returns the RFC 6902 patch actually applied (may be empty).

    The patch is computed against what clients see, so a client that sends back the view
    (predictions included) changes nothing it did not change.
    """
    with transaction.atomic():
        state = _locked(key)
        _check_base(state, base_version)
        if not isinstance(data, dict):
            raise StateInvalid(_("the state must be a JSON object"), [{"path": "", "message": _("not an object")}])
        check_document(data, before=state.data)  # before diffing it
        doc = _document(state)
        patch_ops = jsonpatch.make_patch(doc.view, data).patch
        if not patch_ops:
            return []
        _check_provisional(state, patch_ops)
        new_data = jsonpatch.apply_patch(state.data, patch_ops)
        _commit(state, new_data, patch_ops, source=source, run_ref=run_ref, user=user,
                base_version=state.version, schema=schema)
        return patch_ops


def apply_patch(key, patch_ops, *, source, run_ref="", user=None, base_version=None, schema=None):
    """Apply a JSON Patch to the committed data; returns the patch applied.

    Raises StateInvalid when the patch is malformed, does not apply, or breaks the schema.
    """
    patch = _check_ops(patch_ops)
    with transaction.atomic():
        state = _locked(key)
        _check_base(state, base_version)
        if not patch_ops:
            return []
        _check_provisional(state, patch_ops)
        new_data = _apply_bounded(state.data, patch.patch)  # StateInvalid: an operation that does not apply
        if jsoncheck.same(new_data, state.data):  # `test`s alone, or values as they were: no new version,
            return []  # which every other client's next change would have had to catch up with
        # the `test`s held here, against the document itself; passed on, a client compares them with
        # its own copy in its own way (the chat's by JSON text, where key order counts) and may refuse
        # the whole delta: it then showed the state as it was before
        applied = [op for op in patch_ops if op.get("op") != "test"]
        _commit(state, new_data, applied, source=source, run_ref=run_ref, user=user,
                base_version=state.version, schema=schema)
        return applied


# --- predictions ----------------------------------------------------------------------------


def predict(key, ref, values, *, run_ref="", base_version=None):
    """Record (or update) the live prediction `ref`: `values` overlay top-level keys of the view.
    `base_version`: the committed version its author read (default: the current one).

    Returns the Document as it was before, so the caller knows which keys clients already have.
    """
    with transaction.atomic():
        state = _locked(key)
        before = _document(state)
        check_document({**before.view, **(values or {})}, before=before.view)
        updated = StateChange.objects.filter(state=state, ref=ref, status=StateChange.Status.PROVISIONAL).update(
            values=values
        )
        if not updated:
            StateChange.objects.create(
                state=state, source=StateChange.Source.PREDICTION, status=StateChange.Status.PROVISIONAL,
                ref=ref, values=values, base_version=state.version if base_version is None else base_version,
                run_ref=run_ref or "",
            )
        return before


def prediction_base(key, ref):
    """The version the live prediction `ref` was made from; None when there is no such prediction."""
    return (StateChange.objects.filter(state__key=key, ref=ref, status=StateChange.Status.PROVISIONAL)
            .values_list("base_version", flat=True).first())


# How far back a whole document sent without its version is looked for (closest_version): each
# step replays one stored patch, so the cost of telling an echo from an edit stays bounded.
HISTORY_LIMIT = 500


def closest_version(key, data):
    """(version, committed data at that version) of the recorded version nearest to `data`: an
    equal one when there is one (the newest of them), else the one `data` differs from in the
    fewest operations (the oldest of those). None when the document has more versions than HISTORY_LIMIT.

    For clients that send a whole document without saying which version it came from (AG-UI's
    RunAgentInput.state): the nearest version is taken as what they changed.
    """
    state = _STATE.one(key)
    if state is None:
        return (0, {}) if jsoncheck.same(data, {}) else None
    if state.version > HISTORY_LIMIT:
        return None
    versions, doc = [(0, {})], {}
    for version, patch in (state.changes.filter(status=StateChange.Status.COMMITTED, version__isnull=False)
                           .order_by("version").values_list("version", "patch")):
        doc = jsonpatch.apply_patch(doc, patch)
        versions.append((version, doc))
    equal = [v for v in versions if jsoncheck.same(v[1], data)]
    if equal:
        return equal[-1]
    def overlap(doc):  # of top-level keys: `{"a": 5}` is nearer `{"a": 1}` than `{}`, both one op away
        keys, mine = set(doc), set(data)
        return len(keys & mine) / len(keys | mine) if keys | mine else 1.0

    # remaining ties go to the oldest: a change that could have been made from several versions
    # is then checked against everything changed since the earliest of them
    return min(versions, key=lambda v: (len(jsonpatch.make_patch(v[1], data).patch), -overlap(v[1])))


def keys_changed_since(key, base_version):
    """Top-level keys any committed change after `base_version` touched ("" for the whole document)."""
    touched = set()
    for ops in StateChange.objects.filter(state__key=key, status=StateChange.Status.COMMITTED,
                                          version__gt=base_version).values_list("patch", flat=True):
        touched |= written_keys(ops)
    return touched


def people_changed_since(key, base_version, keys):
    """{key: committed value now} of those top-level `keys` a person changed after `base_version`
    (an author who read that version would overwrite their edit without knowing it)."""
    state = _STATE.one(key)
    if state is None or state.version <= base_version:
        return {}
    touched = set()
    for ops in StateChange.objects.filter(state=state, status=StateChange.Status.COMMITTED,
                                          source=StateChange.Source.USER, version__gt=base_version
                                          ).values_list("patch", flat=True):
        touched |= written_keys(ops)
    hit = set(keys) if "" in touched else set(keys) & touched
    return {k: state.data.get(k) for k in sorted(hit)}


def _from(to):
    """The statuses StateChange.TRANSITIONS lets become `to`: status writes read the map (only a
    provisional prediction is committed or reverted); a status it never reaches raises."""
    allowed = [src for src, targets in StateChange.TRANSITIONS.items() if to in targets]
    if not allowed:
        raise ValueError(f"StateChange: nothing may become {to}")
    return allowed


def commit_prediction(key, ref, values=None, *, schema=None, run_ref="", user=None):
    """Make a prediction real, with `values` when given (an approval's edited arguments).

    Returns the patch applied to the committed data. Raises StateInvalid (the prediction stays
    live: the caller reverts it) when the result breaks the schema.
    """
    with transaction.atomic():
        state = _locked(key)
        row = StateChange.objects.filter(state=state, ref=ref, status__in=_from(StateChange.Status.COMMITTED)).first()
        if values is None:
            values = row.values if row else {}
        new_data = {**state.data, **(values or {})}
        check_document(new_data, before=state.data)
        validate(new_data, schema)
        patch_ops = jsonpatch.make_patch(state.data, new_data).patch
        if row is None:
            row = StateChange(state=state, source=StateChange.Source.PREDICTION, ref=ref,
                              base_version=state.version, run_ref=run_ref or "", user=user)
        if patch_ops:
            state.data = new_data
            state.version += 1
            state.save(update_fields=["data", "version", "updated_at"])
            row.version = state.version
        row.status, row.values, row.patch, row.resolved_at = StateChange.Status.COMMITTED, values, patch_ops, timezone.now()
        row.save()
        return patch_ops


def revert_prediction(key, ref):
    """Drop a live prediction; True when there was one."""
    with transaction.atomic():
        state = _locked(key)  # serialised with commits of the same prediction
        return bool(
            StateChange.objects.filter(state=state, ref=ref, status__in=_from(StateChange.Status.REVERTED)).update(
                status=StateChange.Status.REVERTED, resolved_at=timezone.now()
            )
        )


def revert_predictions(key, keep=()):
    """Drop every live prediction except those in `keep`; returns the refs reverted."""
    with transaction.atomic():
        state = _locked(key)
        live = (StateChange.objects.filter(state=state, status__in=_from(StateChange.Status.REVERTED))
                .exclude(ref__in=list(keep)))
        refs = list(live.values_list("ref", flat=True))
        if refs:
            live.update(status=StateChange.Status.REVERTED, resolved_at=timezone.now())
        return refs
