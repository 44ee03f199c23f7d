"""Fixtures the approval tests share."""

import pytest

from tests.helpers import finance_member


@pytest.fixture
def fay(demo):
    """A second member of finance (finn is the demo's)."""
    return finance_member("fay", "fay@example.com")
