"""Running this repository's GitHub workflows with act, on this machine, unchanged.

act (built here from its Go module, pinned in ``scripts/act-lanes.sh``) runs every job on the
host (``-P ubuntu-latest=-self-hosted``). GitHub-hosted actions cannot be fetched here, so
each one the workflows use is mapped, by act's ``--local-repository``, to a small stand-in of
ours with the same inputs and outputs (``STANDINS``, the one list). What GitHub's runner does
and act's host mode does not is done by ``runner/``, first on PATH: keeping every step's job
summary (``bash``), and GitHub's issue API, which the canary job calls through ``gh``, is a
recorder (``gh``: what would have been sent is in ``ActRun.gh_calls``). The workflow files are
never edited: a run copies the project (its working tree as git sees it) into a new repository
and runs what a user would run on GitHub.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_stacks.gobuild import GoModuleBuild, ensure_built

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# Every action a workflow of ours (or the example project's) uses, and its stand-in. actions/
# checkout has none: act itself puts the repository under test in the workspace for a
# checkout of the repository the workflow belongs to (its "local checkout"), which is every
# checkout we make.
STANDINS: Mapping[str, Path | None] = {
    "actions/checkout": None,
    "actions/setup-python": HERE / "standins" / "setup-python",
    "actions/upload-artifact": HERE / "standins" / "upload-artifact",
    "actions/download-artifact": HERE / "standins" / "download-artifact",
}
_USES = re.compile(r"^\s*(?:-\s+)?uses:\s*([\w.-]+/[\w.-]+)(?:/[^@\s]*)?@([\w.-]+)", re.M)


def act_binary() -> Path:
    """act at the pinned version, built once from its module (cached by its inputs)."""
    version = os.environ.get("ACT_VERSION", "")
    if not version:
        raise RuntimeError("ACT_VERSION is not set: run these tests with scripts/act-lanes.sh, "
                           "which pins act")
    build = GoModuleBuild(name="act", requires={"github.com/nektos/act": version},
                          programs={"act": "github.com/nektos/act"})
    return ensure_built(build) / "bin" / "act"


def uses(workflows: Sequence[Path]) -> set[tuple[str, str]]:
    """The (owner/repo, ref) of every remote action or reusable workflow the files use."""
    found = set()
    for path in workflows:
        for repo, ref in _USES.findall(path.read_text()):
            found.add((repo, ref))
    return found


def local_repositories(workflows: Sequence[Path], extra: Mapping[str, Path]) -> list[str]:
    """act's ``--local-repository`` arguments: stand-ins for GitHub's actions, and ``extra``
    (``owner/repo`` -> folder, e.g. a user project's reusable workflow from this checkout).
    An action with no stand-in is an error here, not a download attempt at run time."""
    args = []
    missing = []
    for repo, ref in sorted(uses(workflows)):
        target = extra.get(repo, STANDINS.get(repo, HERE))
        if target is HERE:
            missing.append(f"{repo}@{ref}")
        elif target is not None:
            args += ["--local-repository", f"{repo}@{ref}={target}"]
    if missing:
        raise RuntimeError(f"no local stand-in for {', '.join(missing)}: add one to STANDINS "
                           f"in {Path(__file__).relative_to(ROOT)}")
    return args


def copy_project(source: Path, dest: Path) -> Path:
    """The project's files (in a git checkout: those git sees, committed and not ignored), in
    a new repository with one commit: what a push of this working tree would run."""
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=source,
                            capture_output=True, text=True, check=False).stdout.strip()
    if inside == "true":
        listed = subprocess.run(["git", "ls-files", "-coz", "--exclude-standard"], cwd=source,
                                capture_output=True, check=True).stdout.split(b"\0")
        for name in filter(None, (n.decode() for n in listed)):
            origin = source / name
            if not origin.is_file():
                continue  # deleted in the working tree
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target)
    else:
        shutil.copytree(source, dest)
    git = ["git", "-c", "user.name=act", "-c", "user.email=act@pytest-stacks.invalid"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "under act"], cwd=dest, check=True)
    return dest


@dataclass
class ActRun:
    returncode: int
    log: str
    artifacts: Path
    summaries: Path
    gh_log: Path

    def gh_calls(self) -> list[list[str]]:
        """The arguments of every `gh` call the jobs made, in order."""
        if not self.gh_log.exists():
            return []
        return [json.loads(line)["args"] for line in self.gh_log.read_text().splitlines()]

    def artifact(self, name: str) -> Path:
        folder = self.artifacts / name
        assert folder.is_dir(), (f"no artifact {name!r}; uploaded: "
                                 f"{sorted(p.name for p in self.artifacts.glob('*'))}")
        return folder

    def summaries_of(self, job: str) -> list[str]:
        """What each step of the job (of every matrix leg of it) wrote to its summary, in the
        order the steps started."""
        files = sorted(self.summaries.glob(f"{job}.*.md"), key=lambda p: int(p.name.split(".")[1]))
        return [p.read_text() for p in files]


def run_act(project: Path, event: str, payload: Mapping[str, object], work: Path, *,
            workflow: str, extra_repos: Mapping[str, Path] | None = None,
            env: Mapping[str, str] | None = None, timeout: float = 3600) -> ActRun:
    """``act EVENT -W WORKFLOW`` in ``project`` with every job on this host."""
    workflows = sorted((project / ".github" / "workflows").glob("*.yml"))
    extra = dict(extra_repos or {})
    for folder in extra.values():  # a reusable workflow's own uses need stand-ins too
        workflows += sorted((folder / ".github" / "workflows").glob("*.yml"))
    artifacts, summaries = work / "artifacts", work / "summaries"
    event_file = work / "event.json"
    event_file.write_text(json.dumps(payload))
    full_env = {**os.environ, **(env or {}),
                "PATH": f"{HERE / 'runner'}:{os.environ['PATH']}",
                "ACT_ARTIFACTS": str(artifacts), "ACT_SUMMARIES": str(summaries),
                "ACT_GH_CALLS": str(work / "gh-calls.jsonl")}
    full_env.pop("VIRTUAL_ENV", None)  # each job makes its own (the setup-python stand-in)
    argv = [str(act_binary()), event, "-W", f".github/workflows/{workflow}",
            "-e", str(event_file), "-P", "ubuntu-latest=-self-hosted",
            "--concurrent-jobs", "4", "--no-cache-server",
            # host workspaces (each job's copy of the project, its virtual environment) in
            # this run's folder, removed below: act leaves them in ~/.cache/act otherwise
            "--action-cache-path", str(work / "act-cache"),
            # github.token: one made up per run (act would ask `gh auth token` for a real one)
            "-s", f"GITHUB_TOKEN=act-{secrets.token_hex(16)}",
            *local_repositories(workflows, extra)]
    try:
        with (work / "act.log").open("w") as log:
            done = subprocess.run(argv, cwd=project, env=full_env, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=timeout, check=False)
    finally:
        shutil.rmtree(work / "act-cache", ignore_errors=True)
    artifacts.mkdir(exist_ok=True)
    summaries.mkdir(exist_ok=True)
    return ActRun(done.returncode, (work / "act.log").read_text(), artifacts, summaries,
                  work / "gh-calls.jsonl")
