"""approvals/argument_errors.py: what is wrong with a call's arguments, in sentences a reviewer
reads in their language — never a regular expression or a library's wording."""

import jsonschema
import pytest
from django.utils import translation

from agents.registry import get_agent
from approvals.argument_errors import from_jsonschema
from approvals.registry import ArgumentsInvalid

GOOD = {"from_account": "12345678", "to_account": "87654321", "amount": 100.0, "currency": "EUR"}


def errors_of(arguments):
    with pytest.raises(ArgumentsInvalid) as exc:
        get_agent("banking").tool("transfer_money").validate(arguments)
    return exc.value.errors


def test_our_tools_say_what_is_wrong_in_words_without_the_pattern():
    assert errors_of({**GOOD, "amount": -5}) == {"amount": ["Must be greater than 0."]}
    assert errors_of({**GOOD, "amount": 2_000_000}) == {"amount": ["Must be at most 1,000,000."]}
    assert errors_of({**GOOD, "amount": "a lot"}) == {"amount": ["Must be a number."]}
    assert errors_of({**GOOD, "to_account": "12ab"}) == {
        "to_account": ["Not in the expected form (Account number, digits only)."]}
    # digits are 0-9: a regex's \d also matches Arabic-Indic or full-width ones, which no account has
    for other in ("\u0660\u0669\u0668\u0667\u0666\u0665\u0664\u0663", "\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18"):
        assert "to_account" in errors_of({**GOOD, "to_account": other})
    with pytest.raises(ArgumentsInvalid):
        get_agent("support").tool("lookup_order_details").validate({"order_id": "\u0661\u0662\u0663\u0664"})
    assert errors_of({**GOOD, "currency": "JPY"}) == {"currency": ["Must be one of: USD, EUR, GBP."]}
    missing = {k: v for k, v in GOOD.items() if k != "amount"}
    assert errors_of(missing) == {"amount": ["This field is required."]}
    assert errors_of({**GOOD, "memo": "x"}) == {"memo": ["This is not one of the tool's arguments."]}


def test_the_reviewers_language():
    with translation.override("fr"):
        said = errors_of({**GOOD, "amount": -5, "to_account": "12ab"})
    assert said["amount"] == ["Doit être supérieur à 0."]
    assert "\\d" not in said["to_account"][0] and said["to_account"][0] != "Not in the expected form."
    with translation.override("id"):
        assert errors_of({**GOOD, "amount": -5})["amount"] != ["Must be greater than 0."]


@pytest.mark.parametrize(("language", "form", "one_of"), [
    ("fr", "N’a pas la forme attendue (Numéro de compte, chiffres uniquement).",
     "Doit être l’une des valeurs : USD, EUR, GBP."),
    ("zh-hans", None, None),
])
def test_no_english_inside_the_readers_sentence(language, form, one_of):
    """The field's description is said in the reader's language (it was the English one inside a French
    sentence), and the choices are listed without pydantic's English "or" and Python quotes."""
    with translation.override(language):
        said = errors_of({**GOOD, "to_account": "12ab", "currency": "JPY"})
        english = translation.gettext("Account number, digits only")
    assert english != "Account number, digits only"
    assert "Account number" not in said["to_account"][0] and english.rstrip(".") in said["to_account"][0]
    assert " or " not in said["currency"][0] and "'" not in said["currency"][0]
    if form:
        assert said == {"to_account": [form], "currency": [one_of]}


def test_an_mcp_servers_schema_the_same_way():
    schema = {"type": "object", "additionalProperties": False, "required": ["note_id", "tag"], "properties": {
        "note_id": {"type": "integer", "minimum": 1},
        "tag": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3, "description": "A lowercase word"},
        "color": {"enum": ["red", "blue"]}}}
    validator = jsonschema.Draft202012Validator(schema)
    assert from_jsonschema(validator, {}) == {"__root__": ["Required: note_id, tag."]}
    assert from_jsonschema(validator, {"note_id": 0, "tag": "ABCD", "color": "green", "x": 1}) == {
        "__root__": ["Not among the tool's arguments: x."],
        "color": ["Must be one of: red, blue."],
        "note_id": ["Must be at least 1."],
        "tag": ["Not in the expected form (A lowercase word).", "Must be at most 3 characters long."],
    }


def test_a_union_argument_is_named_by_its_place_not_by_pydantics_members():
    """pydantic's locations name a union's members ("limit.int", "limit.str"): a reviewer read them."""
    from typing import Annotated

    from pydantic import Field

    from agents.runtime.tools import tool

    @tool()
    def pick(ctx, limit: Annotated[int | str, Field(description="How many, or \"all\"")] = 1):
        """Pick some."""

    with pytest.raises(ArgumentsInvalid) as exc:
        pick.validate({"limit": [1]})
    assert list(exc.value.errors) == ["limit"], exc.value.errors


def test_choices_are_listed_the_readers_way():
    with translation.override("zh-hans"):
        assert errors_of({**GOOD, "currency": "JPY"})["currency"] == ["必须是以下值之一：USD、EUR、GBP。"]
