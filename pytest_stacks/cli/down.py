"""``down``: end kept stacks, and only what this user's runs root holds; a name that is
neither kept nor the manifest's is a typo, said with the close names."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Collection
from typing import Any

from pytest_stacks import places
from pytest_stacks.cli.common import manifest
from pytest_stacks.errors import StacksError, UnknownStackError


def _fakes(args: argparse.Namespace) -> set[str]:
    """The manifest's in-process doubles by name (none if the manifest cannot be read:
    ``down`` must still end what was kept)."""
    try:
        return {s.name for s in manifest(args).stacks if s.is_fake}
    except StacksError:
        return set()


def cmd_down(args: argparse.Namespace) -> int:
    """End kept stacks (``pytest-stacks up``, ``--stack-keep=on-failure``), or only those of
    NAME: their containers, networks, volumes and kind clusters, removed and proven gone, then
    their run directory (credentials included). ``--force``: also every other run's
    resources, live ones included. What could not be removed is named; exit status 1. A NAME
    that is neither kept nor a stack of the manifest is a usage error, with the close names."""
    from pytest_stacks.providers import reaper
    from pytest_stacks.providers.labels import LABEL_STACK

    kept_runs = places.kept_runs()
    fakes = _fakes(args)
    ended, problems = _end_kept(args.name, kept_runs, fakes)
    if args.force and args.name not in fakes:
        for run_id, resources in reaper.inventory().items():
            if args.name and resources.labels.get(LABEL_STACK) != args.name:
                continue
            left = reaper.remove(resources)
            problems += left
            if not left:
                ended.append(f"removed run {run_id} ({resources.labels.get(LABEL_STACK)})")
    for line in ended:
        print(line)
    for problem in problems:
        print(f"could not remove: {problem}", file=sys.stderr)
    if not ended and not problems and args.name in fakes:
        print(f"{args.name} is an in-process double: it ends with the process that made it, "
              f"so there is nothing to bring down")
    elif not ended and not problems:
        if args.name:
            _known_or_refused(args, args.name, kept_runs)
        problems = _engine_holds(args.name)
        if not problems:
            print("nothing kept to bring down" + (f" for {args.name}" if args.name else ""))
        for problem in problems:
            print(problem, file=sys.stderr)
    return 1 if problems else 0


def _engine_holds(name: str | None) -> list[str]:
    """No record keeps anything (of ``name``): the engine's labels are asked too, so "nothing
    kept" is never said of a stack whose containers still run (a record lost or removed by
    hand). An engine that cannot answer is said, never read as "nothing there"."""
    from pytest_stacks.providers import reaper
    from pytest_stacks.providers.labels import LABEL_STACK

    try:
        runs = reaper.inventory()
    except Exception as exc:
        return [f"no kept-run record names {name or 'a stack'}, but the engine could not be "
                f"asked whether it still runs ({exc}); run `pytest-stacks down` again once "
                f"Docker answers"]
    found = [(run_id, resources) for run_id, resources in sorted(runs.items())
             if not name or resources.labels.get(LABEL_STACK) == name]
    lines = []
    for run_id, resources in found:
        stack = resources.labels.get(LABEL_STACK)
        owner = "its owner is alive" if reaper.owner_alive(resources.labels) \
            else "its owner is gone"
        lines.append(f"no kept-run record names {name or 'a stack'}, but the engine holds run "
                     f"{run_id}'s {resources.count} resource(s) of stack {stack} ({owner}): "
                     f"`pytest-stacks reap` removes a dead run's, `pytest-stacks down --force "
                     f"{stack}` any run's")
    return lines


def _end_kept(name: str | None, kept_runs: dict[str, dict[str, Any]],
              fakes: Collection[str] = ()) -> tuple[list[str], list[str]]:
    """End the kept runs (of stack ``name``, when given) whose run directory is this runs
    root's: (what was ended, what could not be). A record naming a folder that is not a run
    directory of ours is refused, never followed. A run of doubles alone (``fakes``, kept by
    an older ``up``) holds nothing outside its folder: no engine is asked."""
    import shutil

    from pytest_stacks.providers import kind, kind_owners, reaper

    ended: list[str] = []
    problems: list[str] = []
    for run_id, kept in kept_runs.items():
        if kept.get("problem"):  # it may keep any stack: named, never read as "not this one"
            problems.append(f"{kept['problem']}. Nothing of run {run_id} was ended")
            continue
        if name and name not in kept["stacks"]:
            continue
        try:
            run_dir = places.kept_run_dir(kept)
        except StacksError as exc:
            problems.append(str(exc))
            continue
        if kept["run_dir"] and run_dir is None:
            continue  # kept under another TMPDIR: protected here, ended from there
        only_fakes = bool(kept["stacks"]) and set(kept["stacks"]) <= set(fakes)
        left = [] if only_fakes else reaper.sweep_run(run_id)
        if run_dir is not None and not only_fakes:
            left += kind_owners.reap(kind.run_command, run_dir.parent, only_run=run_id)
        if left:
            problems += left
            continue
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
        places.unmark_kept(run_id)
        ended.append(f"ended run {run_id} ({', '.join(kept['stacks'])}; kept by {kept['why']})")
    return ended, problems


def _known_or_refused(args: argparse.Namespace, name: str,
                      kept_runs: dict[str, dict[str, Any]]) -> None:
    """Nothing was kept for ``name``: fine for a stack the manifest or a kept run knows; a
    name neither knows is a typo, refused with the close names of both (exit 4, as an unknown
    ``--stack`` under pytest)."""
    from pytest_stacks.suggest import did_you_mean

    known = {stack for kept in kept_runs.values() for stack in kept["stacks"]}
    # An unreadable manifest must not keep anyone from ending what they kept.
    with contextlib.suppress(StacksError):
        known |= set(manifest(args).names())
    if name in known:
        return
    raise UnknownStackError(f"no kept run has a stack {name!r}, and the manifest names none."
                      f"{did_you_mean(name, sorted(known))} `pytest-stacks list` shows the "
                      f"manifest's stacks (--manifest PATH: another manifest's).")
