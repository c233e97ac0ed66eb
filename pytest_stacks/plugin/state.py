"""The per-session state every part of the plugin reads (kept in the config's stash)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_stacks.errors import Problem
from pytest_stacks.lifecycle import StackPool, StackRecord
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.plugin.tally import Binding, Outcomes


@dataclass
class State:
    manifest: Manifest | None
    selected: list[Stack]
    explicit: bool
    pool: StackPool | None = None
    owner: bool = True
    ran: Counter[str] = field(default_factory=Counter)
    seen: Counter[str] = field(default_factory=Counter)
    infra: dict[str, str] = field(default_factory=dict)
    closing_problems: list[Problem] = field(default_factory=list)
    records: dict[str, StackRecord] = field(default_factory=dict)
    notes: list[Problem] = field(default_factory=list)  # said in the summary, not failing
    previous_sigterm: Any = None
    outcomes: Outcomes | None = None  # on the run's owner
    #: The stack tests this run collected, after deselection (None: it never collected).
    collected: list[str] | None = None
    #: Tests deselected by anything but the plugin's own backend filter (-k, -m, --deselect,
    #: --lf, a conftest or another plugin); under xdist, what the workers reported.
    deselected: int = 0
    #: Tests the plugin itself deselected (``for_backend``, ``for_transport``,
    #: ``for_provider``: about another stack); said in the summary beside :attr:`deselected`.
    own_deselected: int = 0
    #: The run reached collection: its results are written, also when it ends early.
    collecting: bool = False
    #: What binds its results to the code and inputs it ran with, taken then.
    binding: Binding | None = None

    def problems_of(self, stack: str) -> list[Problem]:
        return [p for p in self.closing_problems if p.stack == stack]


STATE = pytest.StashKey[State]()
#: Set on the items the plugin itself deselects (a test about another backend): not a
#: narrowing of the suite, so not counted in :attr:`State.deselected`.
OWN_DESELECTION = pytest.StashKey[bool]()


def state(config: pytest.Config) -> State:
    return config.stash[STATE]


def setting(config: pytest.Config, option: str, ini: str, default: str = "") -> str:
    """A setting as users give it: the command line's option, else the ini value, else the
    default. An option given as "" wins (``--stack-results=`` turns a file off)."""
    given = config.getoption(option)
    if given is not None:
        return str(given)
    return str(config.getini(ini) or default)


def choice_setting(config: pytest.Config, option: str, ini: str,
                   choices: tuple[str, ...]) -> str:
    """A :func:`setting` that must be one of ``choices`` (the first is the default); the
    command line's choices are pytest's to check, a bad ini value is a usage error naming
    the ini option and the choices."""
    value = setting(config, option, ini, choices[0]).strip() or choices[0]
    if value not in choices:
        raise pytest.UsageError(f"pytest-stacks: the ini option {ini} is {value!r}; use "
                                f"{', '.join(choices[:-1])} or {choices[-1]}")
    return value


def item_stack(item: pytest.Item) -> Stack | None:
    """The stack a collected test is parametrised with, if any."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get("stack")
    return value if isinstance(value, Stack) else None
