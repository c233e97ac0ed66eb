"""Providers: how a stack comes up and goes down (compose, kind, fake)."""

from __future__ import annotations

from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import Provider


def provider_for(stack: Stack) -> Provider:
    if stack.provider == "fake":
        from pytest_stacks.providers.fake import FakeProvider
        return FakeProvider()
    if stack.provider == "compose":
        from pytest_stacks.providers.compose import ComposeProvider
        return ComposeProvider()
    if stack.provider == "kind":
        from pytest_stacks.providers.kind import KindProvider
        return KindProvider()
    raise ValueError(f"unknown provider {stack.provider!r}")
