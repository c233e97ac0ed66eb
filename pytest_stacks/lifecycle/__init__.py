"""The life of a run's stacks: the pool that brings each up once and tears it down once, the
run directory its processes meet in, and the probe that proves a stack before any test."""

from __future__ import annotations

from pytest_stacks.lifecycle.pool import StackPool
from pytest_stacks.lifecycle.rundir import (
    RunDirectory,
    StackRecord,
    new_run_id,
    reap_dead_run_dirs,
    unreadable_owners,
)
from pytest_stacks.places import runs_root, up_root

__all__ = ["RunDirectory", "StackPool", "StackRecord", "new_run_id", "reap_dead_run_dirs",
           "runs_root", "unreadable_owners", "up_root"]
