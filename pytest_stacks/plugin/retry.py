"""``--stack-infra-retry=N`` (issue 60 item 5): how many times a broken stack may be brought up
fresh to run its not-yet-run tests again.

Only the setting exists yet. Its value is checked before anything starts, so a typo never costs
a bring-up; a value above 0 is refused (fail closed) until the plugin can really tear a broken
stack down, bring it up again and record each attempt in the results file: an accepted retry
that silently did nothing would let a flaky runner's red build look like a clean one.
"""

from __future__ import annotations

import pytest

from pytest_stacks.plugin.state import setting

DEFAULT_RETRIES = 0
OPTION = "--stack-infra-retry"
INI = "stacks_infra_retry"


def add_option(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """The option and its ini setting (the plugin's addoption would otherwise outgrow the
    house's function size)."""
    group.addoption(OPTION, default=None, metavar="N",
                    help="How many times a stack found broken (an infrastructure fault, never "
                         "a product failure) may be brought up fresh to run its not-yet-run "
                         f"tests again: a whole number >= 0. Default: the '{INI}' ini option, "
                         "else 0. Only 0 is supported yet: a larger count is refused, never "
                         "silently ignored.")
    parser.addini(INI, f"Retries of a broken stack ({OPTION}).", default="")


def parse_retries(raw: str) -> int:
    """The number of retries a user wrote, or ValueError saying why not (a whole number >= 0;
    empty, negative, fractional and words are refused, not rounded or defaulted)."""
    text = raw.strip()
    if not text or not (text.isascii() and text.isdigit()):
        raise ValueError(f"must be a whole number >= 0 (got {raw!r})")
    return int(text)


def retry_setting(config: pytest.Config) -> int:
    """``--stack-infra-retry``, else the ``stacks_infra_retry`` ini value, else 0; bad input is
    a usage error (exit 4) naming the option and the fix, never a traceback."""
    given = config.getoption("stack_infra_retry")
    raw = setting(config, "stack_infra_retry", INI, str(DEFAULT_RETRIES))
    name = OPTION if given is not None else f"the ini option {INI}"
    try:
        retries = parse_retries(raw)
    except ValueError as exc:
        raise pytest.UsageError(
            f"pytest-stacks: {name} {exc}; use {OPTION}=0 (the default: a broken stack's "
            f"tests end as infrastructure errors) or leave it out") from None
    if retries > 0:
        raise pytest.UsageError(
            f"pytest-stacks: {name} is {retries}, but bringing a broken stack up again is not "
            f"supported yet: a broken stack's tests end as infrastructure "
            f"errors. Use {OPTION}=0 or leave it out")
    return retries
