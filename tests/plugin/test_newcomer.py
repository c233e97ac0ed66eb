"""A newcomer's way in (issue 58), as they see it through pytest: the plugin turned on by a
pytest-stacks manifest.yaml in the rootdir, what it says when it is not on, the truth in
``--help``, the unknown stack the manifest's ``catalogue.use`` left out, one deselected count,
a marker typo as a usage error, and a quiet ``-q``."""

from __future__ import annotations

import pytest

from pytest_stacks import cli, extras
from tests.manifests import Project

pytest_plugins = ["pytester"]

TESTS = """
import pytest

def test_on_any_stack(stack):
    assert stack.name

@pytest.mark.for_backend("htcondor")
def test_about_htcondor(stack):
    assert stack.backend == "htcondor"
"""

EXTENDING = 'version: 1\ncatalogue: {version: "0.1", use: [fake-slurm, slurm-22.05, slurm-26.05]}\n'


#: A project with tests and no ini option, as a user writes it first.
PROJECT = Project(ini=None, files={"tests/test_mine.py": TESTS})


def test_a_manifest_in_the_rootdir_turns_the_plugin_on(project: pytest.Pytester) -> None:
    project.makefile(".yaml", manifest=EXTENDING)
    result = project.runpytest("-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    result.assert_outcomes(passed=1, deselected=1)
    assert "fake-slurm (slurm 24.11.5, fake)" in out


def test_another_projects_manifest_yaml_leaves_it_off(project: pytest.Pytester) -> None:
    project.makefile(".yaml", manifest="apiVersion: v1\nkind: ConfigMap\n")
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest("-p", "no:randomly", "test_plain.py")
    result.assert_outcomes(passed=1)
    assert "pytest-stacks" not in result.stdout.str()


def test_not_on_names_the_test_and_the_line_to_add(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    out = result.stdout.str() + result.stderr.str()
    assert "pytest-stacks: tests/test_mine.py::test_on_any_stack uses the 'stack' fixture" in out
    assert "stacks_manifest = manifest.yaml` under [pytest] in pytest.ini" in out
    assert "a pytest-stacks manifest.yaml" in out and "in the rootdir" in out


def test_help_says_what_the_default_stack_is(project: pytest.Pytester) -> None:
    text = " ".join(project.runpytest("--help").stdout.str().split())
    assert "Default: the fake stacks." not in text
    assert "once pytest-stacks is on for the project" in text
    assert "otherwise none" in text


def test_an_unknown_stack_the_catalogue_has_names_catalogue_use(
        project: pytest.Pytester) -> None:
    project.makefile(".yaml", manifest=EXTENDING)
    result = project.runpytest("--stack=slurm-24.11")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "the catalogue" in err and "has slurm-24.11" in err, err
    assert "catalogue.use leaves it out. Add 'slurm-24.11' to catalogue.use in" in err
    assert "Did you mean" not in err


def test_one_deselected_count_with_the_plugins_own(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines([
        "run scope: *, 1 test(s) deselected: 1 by for_backend/for_transport/for_provider "
        "(about another stack's backend, transport or provider)",
        "*1 passed, 1 deselected*"])


def test_both_deselections_add_up_to_pytests(project: pytest.Pytester) -> None:
    (project.path / "tests" / "test_more.py").write_text("def test_k(stack):\n    pass\n")
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly",
                               "--deselect", "tests/test_more.py::test_k[fake-slurm]")
    result.stdout.fnmatch_lines(["run scope: *, 2 test(s) deselected: 1 by for_backend/*; "
                                 "1 by -k, -m, --deselect, a conftest or a plugin",
                                 "*1 passed, 2 deselected*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_marker_typo_is_a_usage_error(project: pytest.Pytester, workers: list[str]) -> None:
    project.makepyfile(test_typo="""
        import pytest
        @pytest.mark.requires("sumbit")
        def test_x(stack):
            pass
    """)
    result = project.runpytest_subprocess("--stack=fake-slurm", "-p", "no:randomly", *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stdout.fnmatch_lines(["*unknown capability 'sumbit' (did you mean 'submit'?)*"])


def test_quiet_counts_the_unproven_capabilities(project: pytest.Pytester) -> None:
    loud = project.runpytest("--stack=fake-slurm", "-p", "no:randomly")
    lines = [x for x in loud.stdout.lines if x.startswith("fake-slurm: ") and " unproven " in x]
    assert len(lines) > 1
    quiet = project.runpytest("--stack=fake-slurm", "-p", "no:randomly", "-q")
    assert quiet.ret == pytest.ExitCode.OK
    assert not [x for x in quiet.stdout.lines if x.startswith("fake-slurm: ")], \
        quiet.stdout.str()
    quiet.stdout.fnmatch_lines([f"{len(lines)} unproven capabilities; run without -q to see "
                                f"them, or read *problems* in *results.json"])


def test_a_stack_without_its_extra_is_a_usage_error_with_the_install_line(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(extras.EXTRAS, "docker", ("pytest_stacks_no_such_module",))
    result = project.runpytest("--stack=slurm-24.11", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "not installed: the 'docker' extra for slurm-24.11" in err, err
    assert "pip install 'pytest-stacks[docker]'" in err


def test_the_report_counts_each_unproven_capability_once_and_says_it_is_strict(
        project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    ran = project.runpytest("--stack=fake-slurm", "--stack=fake-htcondor", "-p", "no:randomly")
    assert ran.ret == pytest.ExitCode.OK, ran.stdout.str()  # warn, the default
    unproven = [x for x in ran.stdout.lines if x.startswith("fake-") and " unproven (" in x]
    capsys.readouterr()
    code = cli.main(["report", str(project.path / ".pytest-stacks" / "results.json"),
                     "--single"])
    out = capsys.readouterr().out
    assert code != 0
    assert f"{len(unproven)} problem(s)" in out, out
    assert f"### Problems ({len(unproven)})" in out
    assert "The report is always strict" in out and "--stack-unproven" in out
