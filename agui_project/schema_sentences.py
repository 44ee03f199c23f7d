"""A JSON Schema error (jsonschema's), in a sentence for the person reading it.

jsonschema says it in English and names Python values ("5 is not of type 'object'", a regular
expression): its errors name their keyword, and the common ones get a sentence here, marked for
translation and said in the active language; an unknown one keeps the library's message. Shared by
what checks a tool's arguments (approvals/argument_errors.py, also its pydantic sentences' numbers
and forms) and a thread's shared state (state/services.py), which imports no app.
"""

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext


def number(value):
    """A limit as the locale writes numbers, digits grouped ("1,000,000", "1 000 000"; a float
    field's `gt=0` is 0.0: said as 0)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return number_format(value, force_grouping=True)
    return value


def choices(values):
    """Values listed the reader's way ("USD, EUR, GBP"; Chinese "USD、EUR、GBP")."""
    return pgettext("list separator", ", ").join(str(v) for v in values)


def form(description):
    """The field's own description says what form: ours are marked for translation (said in the
    reader's language), an outside agent's schema's stay as written."""
    if description:
        return _("Not in the expected form (%(description)s).") % {"description": _(description).rstrip(".")}
    return _("Not in the expected form.")


JSON_TYPES = {
    "string": lambda: _("Must be text."), "integer": lambda: _("Must be a whole number."),
    "number": lambda: _("Must be a number."), "boolean": lambda: _("Must be true or false."),
    "object": lambda: _("Must be an object."), "array": lambda: _("Must be a list."),
    "null": lambda: _("Must be empty (null)."),
}


def jsonschema_sentence(err, not_allowed):
    """`err`'s sentence; `not_allowed(names)`: what names a property the schema does not take (a
    tool's arguments say "Not among the tool's arguments", a state "Not allowed here")."""
    keyword, value, schema = err.validator, err.validator_value, err.schema if isinstance(err.schema, dict) else {}
    if keyword == "required":
        missing = [name for name in value if isinstance(err.instance, dict) and name not in err.instance]
        return _("Required: %(names)s.") % {"names": choices(missing or value)}
    if keyword == "additionalProperties" and isinstance(err.instance, dict):
        known = set(schema.get("properties") or {})
        extra = sorted(k for k in err.instance if k not in known)
        return not_allowed(choices(extra))
    if keyword == "type":
        types = value if isinstance(value, list) else [value]
        if len(types) == 1 and types[0] in JSON_TYPES:
            return JSON_TYPES[types[0]]()
    if keyword == "minimum":
        return _("Must be at least %(limit)s.") % {"limit": number(value)}
    if keyword == "maximum":
        return _("Must be at most %(limit)s.") % {"limit": number(value)}
    if keyword == "exclusiveMinimum":
        return _("Must be greater than %(limit)s.") % {"limit": number(value)}
    if keyword == "exclusiveMaximum":
        return _("Must be less than %(limit)s.") % {"limit": number(value)}
    if keyword == "minLength":
        return ngettext("Must be at least %(count)s character long.", "Must be at least %(count)s characters long.",
                        value) % {"count": value}
    if keyword == "maxLength":
        return ngettext("Must be at most %(count)s character long.", "Must be at most %(count)s characters long.",
                        value) % {"count": value}
    if keyword == "minItems":
        return ngettext("Must have at least %(count)s item.", "Must have at least %(count)s items.", value) % {
            "count": value}
    if keyword == "maxItems":
        return ngettext("Must have at most %(count)s item.", "Must have at most %(count)s items.", value) % {
            "count": value}
    if keyword == "pattern":
        return form(schema.get("description"))
    if keyword == "enum":
        return _("Must be one of: %(choices)s.") % {"choices": choices(value)}
    if keyword == "const":
        return _("Must be %(value)s.") % {"value": value}
    return err.message
