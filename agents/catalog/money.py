"""Money arguments of the demo tools: amounts in whole cents, the precision that moves.

The tools round to cents (half up) when they act, so an argument finer than a cent was judged as one
value and moved as another: 4999.995 passed a rule `amount gte 5000 -> deny` and moved 5000.00, and
0.004 passed `gt 0` and moved 0.00. Validated here, policy and the reviewer read what moves.
"""

from decimal import ROUND_HALF_UP, Decimal
from typing import Annotated

from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from pydantic import AfterValidator, Field


def _whole_cents(value: float) -> float:
    if Decimal(repr(value)).as_tuple().exponent < -2:
        raise ValueError(_("An amount has at most two decimal places (whole cents)."))
    return value


AMOUNT = gettext_noop("Amount")


def amount(*, le, description, title=AMOUNT):
    """A positive amount of at most `le`, in whole cents. `description` (the model's) and `title`
    (the editor's label) are msgids: reviewers read them in their language (approvals/reader_schema)."""
    return Annotated[float, Field(gt=0, le=le, title=title, description=description), AfterValidator(_whole_cents)]


def shown(amount) -> str:
    """An amount to whole cents as the active language writes it ("1,500.00", "1 500,00"): the
    descriptions are said in every language, and a French page read "500.00" beside "4 982,10"."""
    return number_format(Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP), 2, force_grouping=True)
