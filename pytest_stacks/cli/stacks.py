"""The stack commands: list, show, doctor, seed, reap, build, up, down, logs, timings."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from pytest_stacks import places, progress, signals, tables
from pytest_stacks.cli.common import manifest
from pytest_stacks.cli.down import cmd_down
from pytest_stacks.errors import StacksError, UnknownStackError
from pytest_stacks.manifest import Stack
from pytest_stacks.selection import select, unknown_stack_message


def cmd_list(args: argparse.Namespace) -> int:
    print(tables.stacks_table(manifest(args)))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    loaded = manifest(args)
    if args.name not in loaded.names():
        raise UnknownStackError(unknown_stack_message(args.name, loaded.names(), loaded))
    print(tables.stack_details(loaded.get(args.name), loaded.origins.get(args.name, {}),
                               loaded))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from pytest_stacks import doctor

    loaded = manifest(args)
    wanted = [*args.names, *args.stack]
    stacks = select(loaded, wanted) if wanted else [
        s for s in loaded.stacks if s.provider == "compose"]
    return doctor.run(loaded, stacks, fix=args.fix)


def cmd_seed(args: argparse.Namespace) -> int:
    from pytest_stacks.providers import images

    for suite in args.suite:
        print(f"seeded {images.seed_debian(suite)}")
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    """Remove what dead runs left; every removal is proven by looking again, and anything
    that could not be removed (or an owner record that cannot be read) is named and makes
    the exit status 1."""
    from pytest_stacks import places
    from pytest_stacks.lifecycle import reap_dead_run_dirs, runs_root, unreadable_owners
    from pytest_stacks.providers import kind, kind_owners, reaper

    if args.names:
        return _reap_sites(args)
    reaped, problems = reaper.reap_dead(dry_run=args.dry_run)
    # A malformed kept-run record keeps its run from every reaper, and is said: never read as
    # "nothing kept", nor its run as dead.
    problems += [f"{kept['problem']}; its run is left alone" for kept in
                 places.kept_runs().values() if kept.get("problem")]
    verb = "would remove" if args.dry_run else "removed"
    # kind clusters carry no labels of ours: their owner records say which runs are dead.
    clusters = [o.cluster for o in kind_owners.dead(runs_root())]
    if args.dry_run:
        problems += kind_owners.records(runs_root())[1] + unreadable_owners()
    else:
        problems += kind_owners.reap(kind.run_command, runs_root())
    failed = " ".join(problems)
    for cluster in clusters:
        if cluster not in failed:
            print(f"{verb} kind cluster {cluster} of a dead run (and its docker network)")
    if not args.dry_run:
        folders, unreadable = reap_dead_run_dirs()
        problems += unreadable
        for folder in folders:
            print(f"removed the run directory of a dead run: {folder}")
    if not reaped and not clusters and not problems:
        print("nothing to reap: no resources of dead runs")
    for run_id, counts in reaper.summary(reaped).items():
        if run_id not in failed:
            print(f"{verb} run {run_id}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    for problem in problems:
        print(f"could not remove: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _reap_sites(args: argparse.Namespace) -> int:
    """The dead runs of this host on existing deployments: their jobs ended, their working
    folders or namespaces removed, each proven gone. Live runs, other hosts' runs and records
    that cannot be read are left alone (and the last are named)."""
    from pytest_stacks.providers.existing import Site, reap

    loaded = manifest(args)
    problems: list[str] = []
    total = 0
    for stack in select(loaded, args.names):
        if not stack.is_site:
            raise StacksError(f"{stack.name} is not an existing deployment (provider "
                              f"{stack.provider}); `pytest-stacks reap` without a name cleans "
                              f"this machine's stacks")
        removed, left = reap(Site.of(stack), current_run="", echo=print, dry_run=args.dry_run)
        total += len(removed)
        problems += [f"{stack.name}: {line}" for line in left]
    if not total and not problems:
        print("nothing to reap: no dead runs of this host on " + ", ".join(args.names))
    for problem in problems:
        print(f"could not remove: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _stderr_lines(line: str) -> None:
    """Progress of long steps, as plain lines on stderr (stdout carries the JSON)."""
    print(f"[pytest-stacks {time.strftime('%H:%M:%S')}] {line}", file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    from pytest_stacks.lifecycle import StackPool, new_run_id
    from pytest_stacks.providers.base import RunContext

    chosen = select(manifest(args), [args.name])
    if len(chosen) != 1:
        raise StacksError(f"{args.name!r} matches {len(chosen)} stacks; name exactly one")
    [stack] = chosen
    if stack.is_fake:
        return _up_fake(stack)
    run_id = new_run_id()
    pool = StackPool(RunContext.for_this_process(run_id, places.up_root() / run_id,
                                                 keeps=True))
    previous = signals.sigterm_as_interrupt()
    stop_listening = progress.listen(_stderr_lines)
    try:
        attached = pool.acquire(stack)
    except BaseException:
        # Kept stacks are never reaped, so a failed or interrupted `up` cleans up itself.
        with signals.deferred():
            problems = pool.teardown({stack.name: stack})
        for problem in problems:
            print(f"pytest-stacks: {problem}", file=sys.stderr)
        if not problems:
            pool.run_dir.remove()
        # Not kept: what could not be proven gone is a dead run's, for `pytest-stacks reap`.
        raise
    finally:
        stop_listening()
        signals.restore(previous)
    # Kept once it is up, while this process (its owner) is alive: no reaper takes it for a
    # dead run's once this command has exited, and a failed `up` leaves no record behind.
    places.mark_kept(run_id, pool.ctx.run_dir, [stack.name], "pytest-stacks up")
    shown: dict[str, Any] = {"stack": stack.name, "run_dir": str(pool.ctx.run_dir),
                             **attached.public_info()}
    pool.release()
    print(json.dumps(shown, indent=2))
    print(f"\n{stack.name} is up and kept. Stop it with: pytest-stacks down {stack.name}",
          file=sys.stderr)
    return 0


def _up_fake(stack: Stack) -> int:
    """An in-process double lives and dies with the process that made it: there is nothing
    to keep up for later runs. It is brought up once here (a probe job proves it works, no
    engine needed) and said to be what it is; nothing is recorded as kept."""
    from pytest_stacks.lifecycle import StackPool, new_run_id
    from pytest_stacks.providers.base import RunContext

    run_id = new_run_id()
    pool = StackPool(RunContext.for_this_process(run_id, places.runs_root() / run_id))
    try:
        attached = pool.acquire(stack)
        shown = {"stack": stack.name, **attached.public_info()}
    finally:
        pool.teardown({stack.name: stack})
        pool.run_dir.remove()
    print(json.dumps(shown, indent=2))
    print(f"\n{stack.name} works (a probe job ran). It is an in-process double: nothing is "
          f"kept, and there is nothing to bring down; each test process makes its own "
          f"(pytest --stack={stack.name}).", file=sys.stderr)
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    known = manifest(args)
    if args.name in known.names() and known.get(args.name).is_fake:
        # A fake lives inside the pytest run that uses it: no container, no engine to ask.
        raise StacksError(
            f"{args.name} is a fake: it runs in process, inside the pytest run that uses it, "
            f"and has no containers or daemon logs to show. A failing test's report carries "
            f"what it did; tests read it with the stack_logs fixture.")
    from pytest_stacks import dockerutil
    from pytest_stacks.providers.labels import LABEL_STACK

    containers = dockerutil.client().containers.list(
        all=True, filters={"label": f"{LABEL_STACK}={args.name}"}, ignore_removed=True)
    if not containers:
        raise StacksError(f"no running stack {args.name!r}; start one with "
                          f"`pytest-stacks up {args.name}`")
    for container in containers:
        print(f"== {container.name}")
        print(container.logs(tail=args.tail).decode("utf-8", "replace"))
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    """Prepare stacks ahead of a run: every image and program their bring-up needs, built
    (several stacks at once; shared builds once), nothing started; ``--programs-only``: the
    Go programs alone, which need no engine."""
    from pytest_stacks.lifecycle import prepare

    chosen = [s for s in select(manifest(args), args.names) if not s.is_fake]
    if not chosen:
        print("nothing to build: the stacks named are in-process fakes")
        return 0
    stop_listening = progress.listen(_stderr_lines)
    previous = signals.sigterm_as_interrupt()  # a killed build kills what it started
    try:
        if args.programs_only:
            failed = prepare.build_programs(chosen)
        else:
            failed = prepare.build_stacks(chosen)
    finally:
        stop_listening()
        signals.restore(previous)
    for name, error in failed.items():
        print(f"{name}: FAILED: {error}")
    print(f"built: {', '.join(s.name for s in chosen)}" if not failed else
          f"{len(failed)} build(s) failed")
    return 1 if failed else 0


def cmd_timings(args: argparse.Namespace) -> int:
    """The timings files summed per step. What was not read is said on stderr: a file that is
    missing or not a regular file (a FIFO would wait for a writer forever: never opened) makes
    the exit status 1; lines that are not a step's are counted per file. The table of what
    was read is printed either way."""
    from pathlib import Path

    from pytest_stacks import progress

    found = progress.read_timings([Path(p) for p in args.paths])
    print(found.table())
    for line in [*found.missing, *found.skipped]:
        print(f"pytest-stacks timings: {line}", file=sys.stderr)
    return 1 if found.missing else 0


def register(sub: Any) -> None:
    sub.add_parser("list", help="table of the manifest's stacks", description=(
        "Print a table of the manifest's stacks: backend, version, role in the support "
        "window, provider, lanes and capabilities. As wide as COLUMNS (or the terminal) "
        "says.")).set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="one stack in full", description=(
        "Print one stack in full: versions, provider, transport, capabilities, what it "
        "requires of this machine, its images and build args, and which file and line each "
        "field came from (your manifest or the catalogue)."))
    show.add_argument("name", metavar="NAME", help="a stack of the manifest")
    show.set_defaults(func=cmd_show)
    doctor = sub.add_parser("doctor", help="check what the stacks need; --fix repairs it",
                            description=(
        "Check what the named stacks need of this machine (Docker engine, compose v2, base "
        "images, disk, Go, kubectl; for an existing deployment its preflight), a line each "
        "with the fix. Fakes need nothing. Without names: what the container stacks need. "
        "Exit 1 when a check fails; --fix repairs what it can on Debian as root."))
    doctor.add_argument("names", nargs="*", metavar="NAME",
                        help="only these stacks (globs allowed); for an existing deployment, "
                             "its preflight alone")
    doctor.add_argument("--fix", action="store_true",
                        help="repair what fails and can be repaired (Debian, as root): install "
                             "and start the Docker engine and compose v2, seed base images, "
                             "remove superseded images; then check again")
    doctor.add_argument("--stack", action="append", default=[],
                        help="only what these stacks need (globs allowed)")
    doctor.set_defaults(func=cmd_doctor)
    seed = sub.add_parser("seed", help="debootstrap Debian base images (no registry needed)",
                          description=(
        "Build the Debian base images the stack images start from with debootstrap, from "
        "Debian's archive: stacks then build on a machine that reaches no image registry."))
    seed.add_argument("suite", nargs="+", choices=["bullseye", "bookworm", "trixie"],
                      help="the Debian suites whose base images to build")
    seed.set_defaults(func=cmd_seed)
    reap = sub.add_parser("reap", help="remove what dead runs left behind", description=(
        "Remove what runs that died left behind (containers, networks, volumes, kind "
        "clusters, run directories), each proven gone; kept stacks are left alone. With "
        "names of existing deployments: this host's dead runs on them. Exit 1 when "
        "something could not be removed."))
    reap.add_argument("names", nargs="*", metavar="NAME",
                      help="existing deployments to clean of this host's dead runs (instead "
                           "of this machine's engine)")
    reap.add_argument("--dry-run", action="store_true")
    reap.set_defaults(func=cmd_reap)
    _register_running(sub)


def _register_running(sub: Any) -> None:
    """The commands that start, end, read or prepare stacks."""
    up = sub.add_parser("up", help="bring a stack up and keep it for a development loop",
                        description=(
        "Bring one stack up, prove it (version, probe job) and keep it for a development "
        "loop: later pytest runs of the same pin borrow it instead of starting their own. "
        "Prints how to reach it as JSON. A fake is only probed: an in-process double lives "
        "in each test process, so nothing is kept. End a kept stack with `pytest-stacks "
        "down NAME`."))
    up.add_argument("name", metavar="NAME", help="a stack of the manifest")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="bring kept stacks down", description=(
        "End the stacks kept by `pytest-stacks up` or --stack-keep=on-failure (all of them, "
        "or NAME's): their containers, networks, volumes and kind clusters removed and proven "
        "gone, then their run directory. Exit 1 when something could not be removed."))
    down.add_argument("name", nargs="?")
    down.add_argument("--force", action="store_true",
                      help="also remove stacks of runs that are not kept (even live ones)")
    down.set_defaults(func=cmd_down)
    logs = sub.add_parser("logs", help="container logs of a running stack", description=(
        "Print the last lines of each container of a running (e.g. kept) stack."))
    logs.add_argument("name", metavar="NAME", help="a running (real) stack")
    logs.add_argument("--tail", type=int, default=200, metavar="N",
                      help="the last N lines of each container (default: 200)")
    logs.set_defaults(func=cmd_logs)
    build = sub.add_parser("build", help="prepare stacks ahead of a run: build their images "
                           "and programs, start nothing", description=(
        "Build everything the named stacks' bring-up needs (images, Go programs; builds "
        "shared between stacks once), start nothing: a machine is ready before the run. "
        "Exit 1 when a build failed."))
    build.add_argument("names", nargs="+", metavar="NAME", help="stack names or globs")
    build.add_argument("--programs-only", action="store_true",
                       help="only the Go programs (no Docker engine needed): start them while "
                            "a machine is still being set up")
    build.set_defaults(func=cmd_build)
    timings = sub.add_parser("timings", help="where bring-ups spent their time: the file "
                             "PYTEST_STACKS_TIMINGS named, summed per step")
    timings.add_argument("paths", nargs="+", metavar="PATH")
    timings.set_defaults(func=cmd_timings)
