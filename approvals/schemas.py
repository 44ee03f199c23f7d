"""JSON Schemas that callers send for tools this project does not know (approvals/outside.py):
checked themselves, bounded, and used to check the arguments, the first time and on every edit."""

import json

from django.utils.translation import gettext as _
from jsonschema import SchemaError

from agui_project import json_schema

from . import argument_errors, registry

MAX_SCHEMA_BYTES = 64 * 1024  # a schema is read on every request and on every edit: bounded
MAX_SCHEMA_ERRORS = 20


class SchemaInvalid(Exception):
    def __init__(self, message):
        super().__init__(message)
        self.message = message


def _validator(schema):
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise SchemaInvalid(_("the schema is larger than %(limit)s bytes") % {"limit": MAX_SCHEMA_BYTES})
    try:
        return json_schema.validator(schema)  # its patterns on RE2: a caller's pattern cannot hold the process
    except SchemaError as exc:
        raise SchemaInvalid(_("the schema is not a valid JSON Schema: %(error)s") % {"error": exc.message}) from exc


def errors(schema, arguments):
    """{path: [sentences]} of the arguments against the schema (SchemaInvalid: the schema itself)."""
    validator = _validator(schema)
    if inexact := argument_errors.inexact(arguments, root="arguments"):
        return inexact
    try:
        return argument_errors.from_jsonschema(validator, arguments, root="arguments", limit=MAX_SCHEMA_ERRORS)
    except json_schema.TooCostly as exc:
        raise _too_costly() from exc
    except SchemaError as exc:  # a $ref that cannot be followed
        raise SchemaInvalid(_("the schema is not a valid JSON Schema: %(error)s") % {"error": exc.message}) from exc


def _too_costly():
    return SchemaInvalid(_("these arguments cannot be checked against the schema: it takes more than %(steps)s "
                           "steps (its $refs, enums or uniqueItems, over the arguments' size)")
                         % {"steps": json_schema.MAX_STEPS})


def filled(schema, arguments):
    """Valid `arguments` with the schema's defaults of what they leave out (agui_project/json_schema):
    the values the caller's tool will take, which policy and reviewers read. SchemaInvalid when that
    takes more than a check's steps (a big default copied into each of many items)."""
    try:
        return json_schema.with_defaults(_validator(schema), arguments)
    except json_schema.TooCostly as exc:
        raise _too_costly() from exc


def defaults_for(req):
    """Code defaults for an outside tool's request, so that a reviewer's edit is validated against
    the schema it was asked with (services.decide treats it like a registered tool's)."""

    def validate(arguments, requester=None):
        try:
            problems = errors(req.schema, arguments)
        except SchemaInvalid as exc:
            raise registry.ArgumentsInvalid({"arguments": [exc.message]}) from exc
        if problems:
            raise registry.ArgumentsInvalid(problems)
        try:
            return filled(req.schema, arguments)
        except SchemaInvalid as exc:
            raise registry.ArgumentsInvalid({"arguments": [exc.message]}) from exc

    return registry.ToolDefaults(name=req.tool_name, description=req.description, schema=req.schema,
                                 validate=validate)
