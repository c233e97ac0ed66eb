"""Exception types that cross layer boundaries.

They are few on purpose: callers (the plugin, the CLI) turn them into user-facing messages, so
each carries a message written for a person, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class StacksError(Exception):
    """Base class: anything pytest-stacks reports to a user as a clear message."""


class ManifestError(StacksError):
    """The manifest cannot be used. ``problems`` holds one formatted line per defect."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class UnknownStackError(StacksError):
    """A requested stack name or pattern matches nothing in the manifest."""


class InfrastructureError(StacksError):
    """A stack could not be brought up, verified or torn down.

    This is never a product failure: the plugin reports it in its own category so a broken
    Docker engine can never pass for, or hide behind, a red test.
    """

    def __init__(self, stack: str, message: str, logs: str = "", *,
                 started: bool = True, during_run: bool = False) -> None:
        """``started`` False: a bring-up refused in its preflight, before it made anything
        (no engine, no toolchain), so a teardown has nothing of it to look for.
        ``during_run``: a stack that was up and proven broke under the run's tests (what
        ``--stack-infra-retry`` may bring up fresh), not one whose bring-up failed (a wrong
        pin fails the same way every time: bringing it up again would only cost time)."""
        self.stack = stack
        self.message = message
        self.logs = logs
        self.started = started
        self.during_run = during_run
        super().__init__(f"stack {stack!r}: {message}")


class BackendCallError(StacksError):
    """A whole bulk call failed (daemon down, auth refused). Per-job failures are values."""


#: The prefix every report puts before an infrastructure error (terminal, junit, Allure), so
#: a reader, Allure's categories and CI's log search all tell it from a test failure.
INFRA_PREFIX = "INFRASTRUCTURE ERROR (not a test failure)"


@dataclass(frozen=True)
class Problem:
    """One thing that keeps a run from being clean (or, with ``failing`` False, that a person
    should read): which stack (None: the run as a whole), what kind, and the text.

    Kinds: ``teardown`` (not proven: the stack's verdict is infra), ``unproven`` (a declared
    capability no passing test required), ``nothing-ran``, ``results`` (the results file).
    Records instead of "name: text" strings, so nobody parses a message back.
    """

    stack: str | None
    kind: str
    text: str
    failing: bool = True

    def __str__(self) -> str:
        return f"{self.stack}: {self.text}" if self.stack else self.text


def said(exc: BaseException) -> str:
    """An exception as a person reads it: our own errors by their message; anything else by its
    type too, since a bare ``'PYTEST_CURRENT_TEST'`` (a KeyError's text) says nothing."""
    if isinstance(exc, StacksError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


#: Keys whose values are credentials wherever they appear (kubeconfig, JSON, YAML, ``k=v``).
_SECRET_KEY = (r"(?:[\w-]*token|client-key-data|client-key|password|passwd|secret|"
               r"private[-_]key|api[-_]?key|credentials?)")
_SECRETS = (
    # "token": "v", 'password': 'v', token: v, password=v (the value quoted or not)
    re.compile(r"""(?ix)(["']?\b""" + _SECRET_KEY + r"""["']?\s*[:=]\s*)
                   (?:"[^"]*"|'[^']*'|[^\s"',}\]]+)"""),
    re.compile(r"(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]+"),  # an Authorization header
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@]+:)[^@\s/]+(?=@)"),  # user:password@host
)
REDACTED = "***"


def redact(text: str) -> str:
    """``text`` with every credential it may hold replaced by ``***`` (a kubeconfig's token,
    client-key-data or password, an Authorization header, a URL's password). Messages quote
    what they could not use, and what they could not use may be a credentials file: nothing
    pytest-stacks prints may carry one."""
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text
