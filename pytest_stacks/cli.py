"""``pytest-stacks``: a thin command line over the same library the plugin uses."""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_stacks import report
from pytest_stacks.errors import InfrastructureError, ManifestError, StacksError
from pytest_stacks.manifest import Manifest
from pytest_stacks.manifest import load as load_manifest
from pytest_stacks.providers.base import RunContext
from pytest_stacks.selection import select, unknown_stack_message

KEEP_MARK = "keep"


def _manifest(args: argparse.Namespace) -> Manifest:
    return load_manifest(Path(args.manifest))


def cmd_list(args: argparse.Namespace) -> int:
    print(report.stacks_table(_manifest(args)))
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    manifest = _manifest(args)
    if args.name not in manifest.names():
        raise StacksError(unknown_stack_message(args.name, manifest.names(), manifest))
    print(report.stack_details(manifest.get(args.name)))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from pytest_stacks import doctor

    manifest = None
    stacks = []
    if Path(args.manifest).exists():
        manifest = _manifest(args)
        stacks = select(manifest, args.stack) if args.stack else [
            s for s in manifest.stacks if s.provider == "compose"]
    return doctor.run(manifest, stacks, fix=args.fix)


def cmd_seed(args: argparse.Namespace) -> int:
    from pytest_stacks.providers import images

    for suite in args.suite:
        print(f"seeded {images.seed_debian(suite)}")
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    from pytest_stacks.lifecycle import reap_dead_run_dirs
    from pytest_stacks.providers import reaper

    reaped = reaper.reap_dead(dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    if not args.dry_run:
        for folder in reap_dead_run_dirs():
            print(f"removed the run directory of a dead run: {folder}")
    if not reaped:
        print("nothing to reap: no resources of dead runs")
    for run_id, counts in reaper.summary(reaped).items():
        print(f"{verb} run {run_id}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 0


def _keep_ctx() -> RunContext:
    from pytest_stacks.lifecycle import kept_root, new_run_id

    run_id = new_run_id()
    root = kept_root()
    # owner_pid 0 with start "keep": the reaper leaves a kept stack alone until `down`.
    return RunContext(run_id, root / run_id, 0, KEEP_MARK)


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def cmd_up(args: argparse.Namespace) -> int:
    from pytest_stacks.lifecycle import StackPool

    manifest = _manifest(args)
    chosen = select(manifest, [args.name])
    if len(chosen) != 1:
        raise StacksError(f"{args.name!r} matches {len(chosen)} stacks; name exactly one")
    [stack] = chosen
    pool = StackPool(_keep_ctx())
    signal.signal(signal.SIGTERM, _terminate)
    try:
        attached = pool.acquire(stack)
    except BaseException:
        # Kept stacks are never reaped, so a failed or interrupted `up` cleans up itself.
        problems = pool.teardown({stack.name: stack})
        for problem in problems:
            print(f"pytest-stacks: {problem}", file=sys.stderr)
        if not problems:
            shutil.rmtree(pool.ctx.run_dir, ignore_errors=True)
        raise
    info = {k: v for k, v in attached.info.items() if k != "env"}
    pool.release()
    print(json.dumps({"stack": stack.name, "run_dir": str(pool.ctx.run_dir), **info}, indent=2))
    print(f"\n{stack.name} is up and kept. Stop it with: pytest-stacks down {stack.name}",
          file=sys.stderr)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from pytest_stacks.providers import reaper
    from pytest_stacks.providers.base import LABEL_OWNER_START, LABEL_STACK

    removed = 0
    for run_id, resources in reaper.inventory().items():
        if args.name and resources.labels.get(LABEL_STACK) != args.name:
            continue
        if resources.labels.get(LABEL_OWNER_START) != KEEP_MARK and not args.force:
            continue
        left = reaper.remove(resources)
        from pytest_stacks.lifecycle import kept_root

        shutil.rmtree(kept_root() / run_id, ignore_errors=True)
        removed += resources.count
        for problem in left:
            print(problem, file=sys.stderr)
        print(f"removed run {run_id} ({resources.labels.get(LABEL_STACK)})")
    if not removed:
        print("nothing kept to bring down")
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    from pytest_stacks import dockerutil
    from pytest_stacks.providers.base import LABEL_STACK

    containers = dockerutil.client().containers.list(
        all=True, filters={"label": f"{LABEL_STACK}={args.name}"})
    if not containers:
        raise StacksError(f"no running stack {args.name!r}; start one with "
                          f"`pytest-stacks up {args.name}`")
    for container in containers:
        print(f"== {container.name}")
        print(container.logs(tail=args.tail).decode("utf-8", "replace"))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-stacks", description=__doc__)
    parser.add_argument("--manifest", default="manifest.yaml",
                        help="manifest path (default: ./manifest.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="table of the manifest's stacks").set_defaults(func=cmd_list)
    show = sub.add_parser("show", help="one stack in full")
    show.add_argument("name")
    show.set_defaults(func=cmd_show)
    doctor = sub.add_parser("doctor", help="check what the stacks need; --fix repairs it")
    doctor.add_argument("--fix", action="store_true")
    doctor.add_argument("--stack", action="append", default=[],
                        help="only what these stacks need (globs allowed)")
    doctor.set_defaults(func=cmd_doctor)
    seed = sub.add_parser("seed", help="debootstrap Debian base images (no registry needed)")
    seed.add_argument("suite", nargs="+", choices=["bullseye", "bookworm", "trixie"])
    seed.set_defaults(func=cmd_seed)
    reap = sub.add_parser("reap", help="remove what dead runs left behind")
    reap.add_argument("--dry-run", action="store_true")
    reap.set_defaults(func=cmd_reap)
    up = sub.add_parser("up", help="bring a stack up and keep it for a development loop")
    up.add_argument("name")
    up.set_defaults(func=cmd_up)
    down = sub.add_parser("down", help="bring kept stacks down")
    down.add_argument("name", nargs="?")
    down.add_argument("--force", action="store_true",
                      help="also remove stacks of runs that are not kept (even live ones)")
    down.set_defaults(func=cmd_down)
    logs = sub.add_parser("logs", help="container logs of a running stack")
    logs.add_argument("name")
    logs.add_argument("--tail", type=int, default=200)
    logs.set_defaults(func=cmd_logs)
    try:
        from pytest_stacks import matrix
    except ImportError:
        pass
    else:
        matrix.register_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ManifestError as exc:
        print(f"pytest-stacks: invalid manifest:\n{exc}", file=sys.stderr)
        return 2
    except InfrastructureError as exc:
        print(f"pytest-stacks: INFRASTRUCTURE ERROR: {exc}", file=sys.stderr)
        if exc.logs:
            print(exc.logs[-5000:], file=sys.stderr)
        return 3
    except StacksError as exc:
        print(f"pytest-stacks: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an engine or OS error: one line, not a traceback
        print(f"pytest-stacks: {args.command} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
