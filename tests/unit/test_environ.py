"""What worker threads (bring-ups, early teardowns) read of the process environment, which
pytest changes between test phases; and how an unexpected error from them is said."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from types import SimpleNamespace

import pytest

from pytest_stacks import dockerutil, environ
from pytest_stacks.errors import StacksError, said


class _Vanishing(Mapping[str, str]):
    """An environment whose ``PYTEST_CURRENT_TEST`` is listed but gone when read, as when the next
    test phase starts on the main thread between a worker thread's listing and its reading."""

    def __init__(self, **listed: str) -> None:
        self._listed = listed

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._listed))

    def __len__(self) -> int:
        return len(self._listed)

    def __getitem__(self, key: str) -> str:
        if key == "PYTEST_CURRENT_TEST":
            raise KeyError(key)
        return self._listed[key]


def test_a_key_removed_while_it_is_read_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = _Vanishing(PATH="/usr/bin", PYTEST_CURRENT_TEST="t.py::x (call)")
    monkeypatch.setattr(environ, "os", SimpleNamespace(environ=gone))
    with pytest.raises(KeyError):
        {**gone}  # noqa: B018 - the copy this module replaces fails here
    assert environ.snapshot({"EXTRA": "1"}) == {"PATH": "/usr/bin", "EXTRA": "1"}


def test_the_extra_variables_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPOSE_X", "from-env")
    env = environ.snapshot({"COMPOSE_X": "from-stack"})
    assert env["COMPOSE_X"] == "from-stack"
    assert env["PATH"] == os.environ["PATH"]


def test_an_unexpected_error_is_said_with_its_type() -> None:
    assert said(KeyError("PYTEST_CURRENT_TEST")) == "KeyError: 'PYTEST_CURRENT_TEST'"
    assert said(StacksError("the engine is gone")) == "the engine is gone"
    assert said(RuntimeError()) == "RuntimeError"


def test_the_engine_client_does_not_walk_the_environment_per_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """requests' proxy lookup iterates os.environ.items() on every call, from bring-up threads."""
    import docker
    import requests

    session = requests.Session()
    assert session.trust_env  # what the SDK would keep
    engine = SimpleNamespace(api=session, ping=lambda: True)
    monkeypatch.setattr(docker, "from_env", lambda **_: engine)
    monkeypatch.setattr(dockerutil, "_CLIENT", None)
    assert dockerutil.client() is engine
    assert session.trust_env is False
