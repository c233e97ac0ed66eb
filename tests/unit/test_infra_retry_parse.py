"""The pure part of ``--stack-infra-retry``: what counts as a number of retries."""

from __future__ import annotations

import pytest

from pytest_stacks.plugin.retry import parse_retries


@pytest.mark.parametrize(("raw", "count"), [("0", 0), ("1", 1), (" 2 ", 2), ("10", 10)])
def test_whole_numbers_are_counts(raw: str, count: int) -> None:
    assert parse_retries(raw) == count


@pytest.mark.parametrize("raw", ["", " ", "-1", "+1", "1.0", "1e2", "one", "²", "٣"])
def test_anything_else_is_refused_with_what_was_given(raw: str) -> None:
    with pytest.raises(ValueError, match="whole number >= 0") as caught:
        parse_retries(raw)
    assert repr(raw) in str(caught.value)
