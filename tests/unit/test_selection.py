"""Stack selection and dispatch: pure functions, no pytest plugin involved."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_stacks.errors import UnknownStackError
from pytest_stacks.manifest import Manifest, load
from pytest_stacks.selection import (
    missing_capabilities,
    parse_specifier,
    select,
    unknown_capabilities,
    version_matches,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def repo_manifest() -> Manifest:
    return load(REPO / "manifest.yaml")


def names(stacks: list) -> list[str]:  # type: ignore[type-arg]
    return [s.name for s in stacks]


def test_no_pattern_means_the_fakes(repo_manifest: Manifest) -> None:
    chosen = select(repo_manifest, [])
    assert chosen and all(s.provider == "fake" for s in chosen)


def test_globs_and_names_keep_manifest_order(repo_manifest: Manifest) -> None:
    chosen = names(select(repo_manifest, ["slurm-2[46].??", "slurm-20.11"]))
    assert chosen == ["slurm-20.11", "slurm-24.11", "slurm-26.05"]


def test_comma_separated_patterns(repo_manifest: Manifest) -> None:
    chosen = names(select(repo_manifest, ["slurm-22.05,slurm-26.05"]))
    assert chosen == ["slurm-22.05", "slurm-26.05"]


def test_duplicates_collapse(repo_manifest: Manifest) -> None:
    assert names(select(repo_manifest, ["slurm-22.05", "slurm-2*"])).count("slurm-22.05") == 1


def test_unknown_pattern_names_the_closest_and_all_known(repo_manifest: Manifest) -> None:
    with pytest.raises(UnknownStackError) as caught:
        select(repo_manifest, ["slurm-24.1"])
    message = str(caught.value)
    assert "unknown stack 'slurm-24.1'" in message
    assert "Did you mean 'slurm-24.11'?" in message
    assert all(name in message for name in repo_manifest.names())


def test_one_bad_pattern_among_good_ones_still_fails(repo_manifest: Manifest) -> None:
    with pytest.raises(UnknownStackError):
        select(repo_manifest, ["slurm-*", "condor-*"])


def test_capability_dispatch(repo_manifest: Manifest) -> None:
    stack = repo_manifest.get("slurm-24.11")
    assert missing_capabilities(stack, ["submit", "outputs"]) == []
    assert missing_capabilities(stack, ["mpi", "submit", "logs"]) == ["mpi"]


def test_unknown_capability_names_are_found_with_a_hint(repo_manifest: Manifest) -> None:
    assert unknown_capabilities(repo_manifest, ["submit", "outputz", "zzz"]) == [
        ("outputz", "outputs"), ("zzz", None)]


@pytest.mark.parametrize(("stack", "spec", "backend", "expected"), [
    ("slurm-24.11", ">=24.11", None, True),
    ("slurm-22.05", ">=24.11", None, False),
    ("slurm-22.05", "<23.11,>=22.05", None, True),
    ("slurm-24.11", ">=24.11", "htcondor", False),
    ("htcondor-23.9", "~=23.9", "htcondor", True),
])
def test_version_dispatch(repo_manifest: Manifest, stack: str, spec: str, backend: str | None,
                          expected: bool) -> None:
    assert version_matches(repo_manifest.get(stack), spec, backend) is expected


def test_bad_specifier_is_explained() -> None:
    with pytest.raises(ValueError, match="not a PEP 440 version specifier"):
        parse_specifier("newer than 24")
