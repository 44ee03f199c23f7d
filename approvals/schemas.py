"""JSON Schemas that callers send for tools this project does not know (approvals/outside.py):
checked themselves, bounded, and used to check the arguments, the first time and on every edit."""

import json

import jsonschema
from django.utils.translation import gettext as _

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
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaInvalid(_("the schema is not a valid JSON Schema: %(error)s") % {"error": exc.message}) from exc
    return cls(schema)


def errors(schema, arguments):
    """{path: [sentences]} of the arguments against the schema (SchemaInvalid: the schema itself)."""
    return argument_errors.from_jsonschema(_validator(schema), arguments, root="arguments", limit=MAX_SCHEMA_ERRORS)


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
        return arguments

    return registry.ToolDefaults(name=req.tool_name, description=req.description, schema=req.schema,
                                 validate=validate)
