"""Providers: how a stack comes up and goes down (compose, kind, fake), looked up in the
registry by the stack's ``provider`` and ``backend``."""

from __future__ import annotations

from typing import cast

from pytest_stacks import registry
from pytest_stacks.backends.outages import NOTHING, OutageWords
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import FakeFactory, Provider, SiteAdapter, StackAdapter


def provider_for(stack: Stack) -> Provider:
    return cast(Provider, registry.resolve(registry.PROVIDERS[stack.provider].factory)())


def stack_adapter(stack: Stack) -> StackAdapter:
    """The backend's container-stack adapter, or an infrastructure error saying there is none."""
    target = registry.BACKENDS[stack.backend].stack_adapter
    if target is None:
        raise InfrastructureError(stack.name, f"pytest-stacks cannot run {stack.backend} "
                                  f"stacks in containers yet. Select another stack.")
    return cast(StackAdapter, registry.resolve(target)())


def site_adapter(stack: Stack) -> SiteAdapter:
    """The backend's half of an existing deployment, or an infrastructure error."""
    target = registry.BACKENDS[stack.backend].site_adapter
    if target is None:
        raise InfrastructureError(stack.name, f"pytest-stacks cannot attach to an existing "
                                              f"{stack.backend} deployment yet")
    return cast(SiteAdapter, registry.resolve(target)())


def outage_words(stack: Stack) -> OutageWords:
    """The backend's words for "the service is not there" and "the request was refused"."""
    target = registry.BACKENDS[stack.backend].outages
    return cast(OutageWords, registry.resolve(target)) if target else NOTHING


def driver_note(stack: Stack) -> str:
    """What the backend's reference driver adds on this stack beyond documented use, or ""."""
    target = registry.BACKENDS[stack.backend].driver_note
    return str(registry.resolve(target)(stack)) if target else ""


def fake_factory(stack: Stack) -> FakeFactory:
    target = registry.BACKENDS[stack.backend].fake
    if target is None:
        raise InfrastructureError(stack.name, f"no fake exists for backend {stack.backend!r}")
    return cast(FakeFactory, registry.resolve(target))
