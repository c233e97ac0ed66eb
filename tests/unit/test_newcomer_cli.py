"""A newcomer's rough edges in the command line and the packaging (issue 58): closed pipes,
narrow terminals, ``logs`` of a fake, ``--help`` without reST, the example's ``$schema``, the
extras a stack needs and the package's metadata."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from pytest_stacks import cli, doctor, extras
from pytest_stacks.manifest import load
from pytest_stacks.manifest.catalogue import catalogue_manifest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """``pytest-stacks matrix --lane full | head``: the reader goes away first."""
    command = Path(sys.executable).parent / "pytest-stacks"
    child = subprocess.Popen([str(command), "--manifest", str(REPO / "manifest.yaml"),
                              "matrix", "--lane", "full"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child writes a byte
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == cli.BROKEN_PIPE_EXIT
    assert err == ""


def test_a_narrow_terminal_wraps_whole_words(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    code, out, _ = _main(capsys, "--manifest", str(catalogue_manifest()), "list")
    assert code == 0
    manifest = load(catalogue_manifest())
    words = set(out.split())
    for stack in manifest.stacks:
        assert stack.name in words, stack.name  # never cut in the middle
        assert set(stack.capabilities) <= words, stack.name
    assert max(len(line) for line in out.splitlines()) <= 60
    assert len(out.splitlines()) < 10 * len(manifest.stacks)


def test_a_wide_terminal_keeps_the_table(capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = _main(capsys, "--manifest", str(catalogue_manifest()), "list")
    assert code == 0 and "┃ stack" in out


def test_logs_of_a_fake_says_it_is_a_fake(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    code, _, err = _main(capsys, "--manifest", str(catalogue_manifest()), "logs", "fake-slurm")
    assert code == 2
    assert "fake-slurm is a fake: it runs in process" in err
    assert "Docker" not in err and "doctor --fix" not in err


def _parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    parser = cli.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return [("pytest-stacks", parser), *sub.choices.items()]


@pytest.mark.parametrize("name,parser", _parsers(), ids=[n for n, _ in _parsers()])
def test_help_is_plain_text(name: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    assert not re.search(r"``|:(data|func|mod|class|attr|meth):`", text), text


def test_doctor_fix_has_a_help_line() -> None:
    [doctor_parser] = [p for n, p in _parsers() if n == "doctor"]
    [fix] = [a for a in doctor_parser._actions if "--fix" in a.option_strings]
    assert fix.help and "repair" in fix.help


def test_the_example_manifests_schema_resolves() -> None:
    manifest = REPO / "examples" / "user-project" / "manifest.yaml"
    first = manifest.read_text().splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert match, first
    target = (manifest.parent / match.group(1)).resolve()
    assert target == (REPO / "pytest_stacks" / "schema" / "manifest.schema.json").resolve()
    assert target.is_file()


@pytest.mark.parametrize("provider,transport,wanted", [
    ("fake", "bindings", []), ("compose", "local", ["docker"]),
    ("compose", "ssh", ["docker", "ssh"]), ("compose", "bindings", ["docker", "htcondor"]),
    ("kind", "kubernetes", ["docker", "kubernetes"]), ("existing", "ssh", ["ssh"]),
    ("existing", "kubernetes", ["kubernetes"])])
def test_which_extras_a_stack_needs(provider: str, transport: str, wanted: list[str]) -> None:
    assert extras.needed(provider, transport) == wanted


def test_doctor_checks_the_htcondor_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    stack = load(catalogue_manifest()).get("htcondor-23.9")
    monkeypatch.setitem(extras.EXTRAS, "htcondor", ("pytest_stacks_no_such_bindings",))
    [*_, bindings] = doctor.extras_checks([stack])
    assert bindings.name == "extra htcondor" and not bindings.ok
    assert "pip install 'pytest-stacks[htcondor]'" in bindings.line()
    monkeypatch.setitem(extras.EXTRAS, "htcondor", ("json",))
    [*_, bindings] = doctor.extras_checks([stack])
    assert bindings.ok, bindings.line()


def test_a_missing_module_names_its_extra(capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def no_docker(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError("No module named 'docker'", name="docker")

    from pytest_stacks.cli import down

    monkeypatch.setattr(down, "cmd_down", no_docker)
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action.choices["down"].set_defaults(func=no_docker)
    code, _, err = _main(capsys, "down")
    assert code == 1 and "Traceback" not in err
    assert "'docker' extra: pip install 'pytest-stacks[docker]'" in err


def test_the_package_says_where_it_lives_and_what_it_supports() -> None:
    project = PYPROJECT["project"]
    urls = project["urls"]
    assert urls["Repository"].startswith("https://github.com/")
    assert not re.search(r"OWNER|<owner>|invalid|example", " ".join(urls.values()))
    assert project["requires-python"] == ">=3.11"
    assert "pytest>=8,<10" in project["dependencies"]
    assert "Framework :: Pytest" in project["classifiers"]
    assert "Programming Language :: Python :: 3.11" in project["classifiers"]


def test_the_extras_hold_what_the_fakes_do_not_need() -> None:
    project = PYPROJECT["project"]
    optional = project["optional-dependencies"]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower() for r in reqs}

    base = names(project["dependencies"])
    assert not base & {"docker", "paramiko", "cryptography", "lightkube", "htcondor"}
    for extra in extras.EXTRAS:
        assert optional[extra], extra
    every = set().union(*(set(optional[e]) for e in extras.EXTRAS))
    assert set(optional["all"]) == every
    assert every <= set(optional["dev"])  # scripts/setup.sh installs '.[dev]': all of them
