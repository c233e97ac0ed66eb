"""What every command shares: which manifest it reads."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_stacks.manifest import Manifest
from pytest_stacks.manifest import load as load_manifest
from pytest_stacks.manifest.catalogue import default_manifest


def manifest_path(args: argparse.Namespace) -> Path:
    """``--manifest``, else the project's manifest.yaml if it is a pytest-stacks manifest (the
    project: ``--project`` where a command takes one, else the current folder), else the
    catalogue shipped with pytest-stacks."""
    given = getattr(args, "manifest", None)
    return Path(given) if given else default_manifest(Path(getattr(args, "project", None)
                                                           or Path.cwd()))


def manifest(args: argparse.Namespace) -> Manifest:
    return load_manifest(manifest_path(args))
