"""A new user's first hour at the command line (issue 50): the fakes need no Docker to be
brought up, checked or brought down; a failed ``up`` leaves nothing kept; every subcommand's
``--help`` says what it is for; the same error exits with the same code as under pytest;
tables fit the terminal ``COLUMNS`` says."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pytest_stacks import dockerutil, places
from pytest_stacks.cli import build_parser, main

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def no_docker_and_a_private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine answers; kept records and run directories are this test's own."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    monkeypatch.setattr(dockerutil, "_CLIENT", None)  # none cached from an engine elsewhere
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.chdir(tmp_path)  # no manifest here: the catalogue


def test_a_fake_is_up_down_and_checked_without_docker(capsys: pytest.CaptureFixture[str]
                                                     ) -> None:
    assert main(["up", "fake-slurm"]) == 0
    out, err = capsys.readouterr()
    assert "kept" not in out + err.replace("nothing is kept", "")
    assert "in-process" in err
    assert places.kept_runs() == {}
    assert main(["down", "fake-slurm"]) == 0
    out, err = capsys.readouterr()
    assert "Docker" not in out + err and "in-process" in out
    assert main(["doctor", "fake-slurm"]) == 0
    out, err = capsys.readouterr()
    assert "Docker" not in out and "fake-slurm" in out


def test_a_failed_up_leaves_no_kept_record(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["up", "slurm-24.11"]) == 3
    err = capsys.readouterr().err
    assert err.count("no Docker engine is reachable") == 1, err
    assert places.kept_runs() == {}
    assert not list(places.up_root().iterdir())


def test_every_subcommand_says_what_it_is_for() -> None:
    parser = build_parser()
    [sub] = [a for a in parser._actions if a.dest == "command"]
    missing = [name for name, p in sub.choices.items() if not p.description]
    assert not missing, f"no --help description: {missing}"


@pytest.mark.parametrize("argv", [["show", "nope"], ["up", "nope"], ["doctor", "nope"]])
def test_an_unknown_stack_exits_as_under_pytest(argv: list[str],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == int(pytest.ExitCode.USAGE_ERROR)
    assert "unknown stack 'nope'" in capsys.readouterr().err


def test_an_unknown_stack_under_pytest(pytester: pytest.Pytester) -> None:
    assert pytester.runpytest("--stack=nope").ret == pytest.ExitCode.USAGE_ERROR


def test_a_bad_manifest_exits_as_under_pytest(tmp_path: Path, pytester: pytest.Pytester,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nstacks: [\n")
    assert main(["--manifest", str(bad), "list"]) == int(pytest.ExitCode.USAGE_ERROR)
    assert pytester.runpytest(f"--stack-manifest={bad}").ret == pytest.ExitCode.USAGE_ERROR


def test_the_exit_codes_are_documented_in_one_table() -> None:
    from pytest_stacks.cli import EXIT_CODES

    doc = (Path(__file__).parents[2] / "docs" / "getting-started.md").read_text()
    table = doc[doc.index("## Exit codes"):]
    for _, code in EXIT_CODES:
        assert f"| {code} |" in table


def test_tables_honour_columns(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in lines) <= 60, "\n".join(lines)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["list"]) == 0
    wide = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in wide) > 60


ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    import re

    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_short_and_keeps_the_set_up_commands_and_first_example() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 150
    for line in ("bash scripts/setup.sh", "bash scripts/test.sh",
                 "pytest --stack=fake-slurm              # your tests/"):
        assert line in readme


def test_every_relative_link_of_the_readme_and_docs_resolves() -> None:
    import re

    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            doc = (page.parent / path).resolve() if path else page
            if not doc.exists():
                broken.append(f"{page.name}: {target} (no such file)")
                continue
            if anchor and doc.suffix == ".md":
                anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", doc.read_text(), re.M)}
                if anchor not in anchors:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken
