"""What a shim does: forward one command (argv, stdin, stdout, stderr, exit code) to the
stack's login host as its login user, through the route :mod:`.route` records.

The streams are the caller's own file descriptors, handed to ``docker exec`` or ``ssh`` as
they are, so bytes pass unchanged and the exit code is the command's. The fake's relay is the
one route that carries them as messages (the fake answers a whole command at once).

Before anything is sent, the paths a command names are checked against what the login host
sees: the run's shared folder is the same path on both sides; a file of this machine's outside
it (under the current folder, the temp folder or the home folder) is refused with the reason,
never silently missing there.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_stacks.login import relay
from pytest_stacks.login.route import LoginRoute

#: Runs on the login host: into the caller's folder (the shared one) or the login home, then
#: the command itself, so a missing command gets the login shell's own words and exit 127.
REMOTE = 'if [ -n "$1" ]; then cd -- "$1" || exit 1; else cd; fi; shift; exec "$@"'
#: The exit code of a command pytest-stacks refused to send (what it says is on stderr).
REFUSED = 2
#: The exit code when the login host could not be reached (ssh's own code for that).
UNREACHABLE = 255


def say(text: str) -> None:
    sys.stderr.write(f"pytest-stacks: {text}\n")
    sys.stderr.flush()


def _user_areas(cwd: Path) -> list[Path]:
    areas = [cwd, Path(tempfile.gettempdir()).resolve(), Path.home().resolve()]
    return [a for a in areas if a != Path("/")]


def _named_paths(args: list[str]) -> list[str]:
    """Each argument, and the value of each ``--option=value``: what may name a file."""
    named = []
    for arg in args:
        if arg.startswith("--") and "=" in arg:
            named.append(arg.split("=", 1)[1])
        elif not arg.startswith("-"):
            named.append(arg)
    return [n for n in named if n and "\0" not in n and len(n) < 4096]


def unseen_paths(route: LoginRoute, cwd: Path, args: list[str]) -> list[Path]:
    """The files of this machine the command names that the login host does not see."""
    found = []
    for name in _named_paths(args):
        try:
            path = (cwd / name).resolve()
            exists = path.exists()
        except (OSError, ValueError):
            continue
        if not exists or route.reaches(path):
            continue
        if any(path == area or path.is_relative_to(area) for area in _user_areas(cwd)):
            found.append(path)
    return found


def refusal(route: LoginRoute, command: str, cwd: Path, args: list[str]) -> str:
    """Why the command cannot be sent ('' when it can)."""
    unseen = unseen_paths(route, cwd, args)
    if not unseen:
        return ""
    shown = ", ".join(str(p) for p in unseen[:3])
    if not route.shared:
        return (f"{command}: {shown} is on this machine only: stack {route.stack} has no folder "
                f"shared with it (an existing site: copy the file there first, e.g. over its "
                f"ssh route, or name a path on the site).")
    return (f"{command}: {shown} is on this machine only: the login host of stack "
            f"{route.stack} sees only {route.shared} at the same path. Write the file there "
            f"(the fixture's stack_commands.shared) and run the command from there "
            f"(cwd=stack_commands.shared).")


def _docker_argv(route: LoginRoute, remote: list[str], interactive: bool) -> list[str]:
    flags = ["-i"] + (["-t"] if interactive else [])
    return [route.docker or "docker", "exec", *flags, "--user", route.user, route.target,
            *remote]


def _ssh_argv(route: LoginRoute, remote: list[str], interactive: bool) -> list[str]:
    return ["ssh", "-F", route.target, "-t" if interactive else "-T", "login", "--",
            shlex.join(remote)]


def _container_gone(route: LoginRoute) -> bool:
    done = subprocess.run([route.docker or "docker", "inspect", "--format",
                           "{{.State.Running}}", route.target], capture_output=True,
                          text=True, check=False)
    return done.returncode != 0 or done.stdout.strip() != "true"


def _gone(route: LoginRoute, why: str) -> str:
    return (f"the login host of stack {route.stack} cannot be reached ({why}). Is the stack "
            f"still up? A test's stack ends with its run; a kept one with `pytest-stacks down`. "
            f"Bring it up again (`pytest-stacks up {route.stack}`, or run the tests again).")


def _through_relay(route: LoginRoute, argv: list[str], remote_cwd: str) -> int:
    data = b""
    try:
        mode = os.fstat(0).st_mode
        if not os.isatty(0) and (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
            data = sys.stdin.buffer.read()
    except OSError:
        pass
    try:
        code, out, err = relay.call(route.target, argv, remote_cwd, data)
    except OSError as exc:
        say(f"stack {route.stack} is an in-process fake, and the test process that holds it "
            f"has ended or let it go ({exc.strerror or exc}); its commands work only while "
            f"its tests run (use them from a test, through the stack_commands fixture).")
        return UNREACHABLE
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    sys.stderr.buffer.write(err)
    sys.stderr.flush()
    return code


def run(route: LoginRoute, argv: list[str], *, interactive: bool = False) -> int:
    """Forward ``argv`` (argv[0]: the command's name) as the login user; its exit code."""
    try:
        cwd = Path.cwd()
    except OSError:
        cwd = Path("/")
    if problem := refusal(route, argv[0], cwd, argv[1:]):
        say(problem)
        return REFUSED
    remote_cwd = str(cwd) if route.reaches(cwd) else ""
    if route.kind == "relay":
        code = _through_relay(route, argv, remote_cwd)
    else:
        remote = ["sh", "-c", REMOTE, "sh", remote_cwd, *argv]
        command = (_docker_argv if route.kind == "docker" else _ssh_argv)(route, remote,
                                                                          interactive)
        try:
            code = subprocess.run(command, check=False).returncode
        except FileNotFoundError:
            say(f"the `{command[0]}` command is not installed here; stack {route.stack}'s "
                f"commands go through it")
            return UNREACHABLE
        except KeyboardInterrupt:
            return 130
        if route.kind == "docker" and code != 0 and _container_gone(route):
            say(_gone(route, f"its container {route.target[:12]} is not running"))
            return UNREACHABLE
        if route.kind == "ssh" and code == UNREACHABLE:
            say(_gone(route, "ssh could not connect through its pinned route"))
            return code
    if code == 127 and route.commands:
        say(f"stack {route.stack} ({route.kind}) has: {', '.join(route.commands)}")
    return code


def main(route_file: str, argv: list[str]) -> int:
    """The shim's entry: ``argv[0]`` is the shim's path; its name is the command's."""
    route = LoginRoute.read(Path(route_file))
    return run(route, [Path(argv[0]).name, *argv[1:]])
