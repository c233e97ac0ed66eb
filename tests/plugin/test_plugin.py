"""The plugin as users run it, through pytester."""

from __future__ import annotations

import textwrap

import pytest

from tests.manifests import Project, manifest_of, slurm_trio, stack

pytest_plugins = ["pytester"]

MANIFEST = slurm_trio()

TESTS = """
import pytest
from pytest_stacks.contract import JobSpec, submitted, wait_for, JobState

@pytest.mark.requires("submit", "status")
def test_runs(backend, stack):
    [h] = submitted(backend.submit([JobSpec(script="true\\n")]))
    [s] = wait_for(backend, [h], timeout=30)
    assert s.state is JobState.COMPLETED

@pytest.mark.requires("outputs")
def test_needs_outputs(backend):
    pass

@pytest.mark.stack_version(">=24.11")
def test_new_only(stack):
    assert stack.parsed_version.major >= 24

def test_plain():
    pass
"""


PROJECT = Project(MANIFEST, pyfiles={"test_user": TESTS})


def test_default_selection_is_the_fake_stacks(project: pytest.Pytester) -> None:
    project.mkdir("stack")
    project.path.joinpath("stack", "compose.yaml").write_text("services: {s: {image: x}}\n")
    real = stack("real-slurm", capabilities=("submit", "status", "outputs"), provider="compose",
                 compose="{directory: stack, service: s}")
    project.makefile(".yaml", manifest=MANIFEST.split("  - name: broken-slurm")[0] + real)
    result = project.runpytest("-v")
    result.assert_outcomes(passed=5, skipped=2)  # a compose stack would be an infra error
    assert "real-slurm" not in result.stdout.str()


def test_globs_select_stacks(project: pytest.Pytester) -> None:
    result = project.runpytest("-v", "--stack=fake-*")
    result.assert_outcomes(passed=5, skipped=2)
    result.stdout.fnmatch_lines([
        "*test_runs[[]fake-slurm[]] PASSED*",
        "*test_runs[[]fake-slurm-20.11[]] PASSED*",
        "*test_needs_outputs[[]fake-slurm-20.11[]] SKIPPED*",
    ])


def test_capability_skip_names_stack_and_capability(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", "--stack=fake-slurm-20.11")
    result.stdout.fnmatch_lines(["*stack fake-slurm-20.11 lacks capability: outputs*"])


def test_stack_version_marker(project: pytest.Pytester) -> None:
    result = project.runpytest("-rs", "--stack=fake-slurm-20.11")
    result.stdout.fnmatch_lines(
        ["*fake-slurm-20.11 (slurm 20.11.4) is outside stack_version('>=24.11')*"])


def test_unknown_stack_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurn")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown stack 'fake-slurn'*Did you mean 'fake-slurm'?*",
                                 "*Known stacks: fake-slurm, fake-slurm-20.11, broken-slurm*"])
    assert "Traceback" not in result.stderr.str()


def test_unknown_stack_under_xdist_is_reported_once(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-n", "2", "--stack=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (result.stdout.str() + result.stderr.str()).count("unknown stack 'nope'") == 1


def test_glob_that_matches_nothing_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=htcondor-*")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_unknown_capability_is_a_collection_error(project: pytest.Pytester) -> None:
    project.makepyfile(test_typo="""
        import pytest
        @pytest.mark.requires("outputz")
        def test_x(backend):
            pass
    """)
    result = project.runpytest("--stack=fake-slurm", "test_typo.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # as an unknown --stack (issue 58)
    result.stdout.fnmatch_lines(["*unknown capability 'outputz' (did you mean 'outputs'?)*"])


def test_stack_where_nothing_ran_fails_the_session(project: pytest.Pytester) -> None:
    project.makepyfile(test_only_mpi="""
        import pytest
        @pytest.mark.requires("mpi")
        def test_mpi(backend):
            pass
    """)
    result = project.runpytest("--stack=fake-slurm", "test_only_mpi.py")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL-CLOSED: fake-slurm: no test ran on this stack*"])


def test_deselecting_everything_on_a_stack_fails(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "-k", "plain")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*FAIL-CLOSED: fake-slurm*"])


def test_infrastructure_error_is_its_own_category(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=broken-slurm", "-k", "test_runs")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "1 infra" in out and "passed" not in out.splitlines()[-1]
    result.stdout.fnmatch_lines([
        "*INFRASTRUCTURE ERROR (not a test failure)*functional probe job did not finish*",
        "*broken-slurm*INFRASTRUCTURE ERROR*",
    ])


def test_disabling_the_plugin(project: pytest.Pytester) -> None:
    result = project.runpytest("-p", "no:stacks", "test_user.py")
    result.stdout.fnmatch_lines(["*fixture 'backend' not found*"])
    result = project.runpytest("-p", "no:stacks", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # the option does not exist


def test_list_stacks(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a row per line (the table fits COLUMNS; xdist: 80)
    result = project.runpytest("--stacks")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*fake-slurm-20.11*slurm*20.11.4*legacy*"])


def test_invalid_manifest_is_a_clear_usage_error(project: pytest.Pytester) -> None:
    project.makefile(".yaml", manifest=MANIFEST.replace("lanes: [pr]", "lanez: [pr]"))
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*manifest.yaml:*: stacks[[]0[]] (fake-slurm).lanez: unknown "
                                 "key*Did you mean 'lanes'?*"])
    assert "Traceback" not in result.stderr.str()


def test_xdist_shares_and_passes(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-n", "2", "--stack=fake-*")
    result.assert_outcomes(passed=5, skipped=2)
    assert result.ret == 0


def test_user_supplies_the_client_through_the_hook(project: pytest.Pytester) -> None:
    project.makeconftest("""
        class Mine:
            def __init__(self, default):
                self.default = default
            def __getattr__(self, name):
                return getattr(self.default, name)
            mine = True

        def pytest_stacks_backend(stack, default, info):
            return Mine(default)
    """)
    project.makepyfile(test_hook="""
        def test_uses_mine(backend):
            assert backend.mine is True
    """)
    result = project.runpytest("--stack=fake-slurm", "test_hook.py")
    result.assert_outcomes(passed=1)


def test_failure_report_carries_the_scheduler_view(project: pytest.Pytester) -> None:
    project.makepyfile(test_red=textwrap.dedent("""
        from pytest_stacks.contract import JobSpec, submitted, wait_for

        def test_red(backend):
            [h] = submitted(backend.submit([JobSpec(script="echo boom-marker; exit 9\\n")]))
            wait_for(backend, [h], timeout=30)
            assert False, "deliberate"
    """))
    result = project.runpytest("--stack=fake-slurm", "test_red.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*stack fake-slurm: scheduler view of this test's jobs*",
                                 "*ExitCode=9:0*", "*boom-marker*"])


def test_a_test_that_parametrizes_stack_itself_is_left_alone(project: pytest.Pytester) -> None:
    project.makepyfile(test_own="""
        import pytest
        @pytest.mark.parametrize("stack", ["a", "b"])
        def test_mine(stack):
            assert stack in ("a", "b")
    """)
    result = project.runpytest("test_own.py")
    result.assert_outcomes(passed=2)


def test_a_fakes_version_is_what_it_claims_never_observed(project: pytest.Pytester) -> None:
    """A double echoes its pin: in the junit properties and the summary its version is what
    the fake claims, never an observed daemon version."""
    result = project.runpytest("--stack=fake-slurm-20.11", "-k", "test_runs",
                               "--junitxml=report.xml")
    result.assert_outcomes(passed=1)
    xml = (project.path / "report.xml").read_text()
    assert 'name="pytest-stacks:stack" value="fake-slurm-20.11"' in xml
    assert 'name="pytest-stacks:claimed_version" value="fake, claims 20.11.4"' in xml
    assert "observed" not in xml
    result.stdout.fnmatch_lines(["fake-slurm-20.11 (slurm 20.11.4, fake): fake, claims 20.11.4*"])
    assert "daemon 20.11.4" not in result.stdout.str()


def test_an_unrelated_manifest_yaml_is_ignored(pytester: pytest.Pytester) -> None:
    """Installing the plugin must not break a project whose manifest.yaml is something else."""
    pytester.makefile(".yaml", manifest="apiVersion: v1\nkind: ConfigMap\n")
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_no_stack_selectable_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.mkdir("stack")
    pytester.path.joinpath("stack", "compose.yaml").write_text("services: {s: {image: x}}\n")
    only_real = MANIFEST.split("  - name: fake-slurm\n")[0] + stack(
        "real-slurm", provider="compose", compose="{directory: stack, service: s}")
    pytester.makefile(".yaml", manifest=only_real)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\n")
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, not a quiet skip
    result.stdout.fnmatch_lines(["*test_runs needs a stack but none is selected*"])
    assert "Traceback" not in result.stdout.str()


def test_a_stack_only_test_on_a_broken_stack_is_infra_not_pass(project: pytest.Pytester) -> None:
    project.makepyfile(test_meta="""
        def test_meta(stack):
            assert stack.version
    """)
    result = project.runpytest("--stack=broken-slurm", "test_meta.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "1 infra" in result.stdout.str()
    assert "passed" not in result.stdout.lines[-1]


HOOKS_OF_A_MANIFEST = ("pytest_pycollect_makeitem", "pytest_generate_tests",
                       "pytest_collection_modifyitems", "pytest_runtest_makereport",
                       "pytest_report_teststatus", "pytest_sessionfinish",
                       "pytest_terminal_summary")
#: One line per implementation: pytest_sessionfinish has two (the collection's exit for a
#: marker naming nothing the manifest knows, and the reporting's verdicts).
IMPLS_OF_A_MANIFEST = tuple(sorted((*HOOKS_OF_A_MANIFEST, "pytest_sessionfinish")))
HOOK_PROBE = f"""
    HOOKS = {HOOKS_OF_A_MANIFEST!r}

    def test_which_hooks_are_ours(pytestconfig):
        ours = sorted(
            name for name in HOOKS
            for impl in getattr(pytestconfig.hook, name).get_hookimpls()
            if impl.plugin_name.startswith("pytest-stacks")
            or getattr(impl.plugin, "__name__", "").startswith("pytest_stacks"))
        print("OUR-HOOKS:", ",".join(ours) or "none")
"""


def test_a_project_that_does_not_use_it_pays_nothing(pytester: pytest.Pytester) -> None:
    """Installed but unused: no collection or reporting hook of ours runs for its tests."""
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_probe=HOOK_PROBE)
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*OUR-HOOKS: none"])


def test_a_project_with_a_manifest_gets_the_hooks(project: pytest.Pytester) -> None:
    """The converse, so the probe above cannot pass by never seeing our hooks."""
    project.makepyfile(test_probe=HOOK_PROBE)
    result = project.runpytest("-s", "test_probe.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"*OUR-HOOKS: {','.join(IMPLS_OF_A_MANIFEST)}"])


def test_a_stack_test_without_a_manifest_is_an_error_not_a_pass(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_needs_stack="".join(
        f"def test_meta{i}(stack):\n    pass\n" for i in range(5)))
    result = pytester.runpytest("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    out = result.stdout.str() + result.stderr.str()
    # Said once, with the way out, not a traceback per test.
    assert out.count("uses the 'stack' fixture but pytest-stacks is not on") == 1, out
    assert "--stack fake-slurm" in out and "Traceback" not in out


K8S_MANIFEST = manifest_of(
    stack("fake-mpi-operator", "0.8.2", capabilities=("submit", "status"),
          backend="mpi-operator", transport="kubernetes", configuration="kwok"),
    windows={"mpi-operator": ("0.8", "0.8")})


def test_junit_records_the_identities_the_api_server_assigned(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", manifest=K8S_MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\n")
    pytester.makepyfile(test_k8s="""
        from pytest_stacks.contract import JobSpec, submitted, wait_for

        def test_mpijob(backend, stack):
            handles = submitted(backend.submit([JobSpec(script="true\\n",
                                backend_options={"shape": "mpijob", "workers": 2})]))
            wait_for(backend, handles, timeout=30)
    """)
    result = pytester.runpytest("--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    xml = (pytester.path / "junit.xml").read_text()
    for kind in ("MPIJob", "Service", "ConfigMap", "Secret", "Job", "Pod"):
        assert f'name="pytest-stacks:identity" value="{kind} ' in xml, kind
    assert xml.count('name="pytest-stacks:identity"') >= 8 and "owner=" in xml


def test_tests_about_other_backends_or_transports_are_deselected_not_skipped(
        project: pytest.Pytester) -> None:
    """A test about ssh says nothing about a stack reached locally: deselected there (it
    neither proves nor leaves unproven a capability), and a typo in the marker is an error."""
    project.makepyfile(test_scoped=textwrap.dedent("""
        import pytest

        @pytest.mark.for_transport("ssh")
        def test_over_ssh(stack):
            pass

        @pytest.mark.for_transport("local")
        def test_local(stack):
            pass

        @pytest.mark.for_backend("mpi-operator")
        def test_kubernetes(stack):
            pass
    """))
    result = project.runpytest("test_scoped.py", "--stack=fake-slurm", "-v", "-p", "no:randomly")
    result.assert_outcomes(passed=1, deselected=2)
    result.stdout.fnmatch_lines(["*test_local*fake-slurm*PASSED*"])
    project.makepyfile(test_typo=textwrap.dedent("""
        import pytest

        @pytest.mark.for_transport("sssh")
        def test_typo(stack):
            pass
    """))
    result = project.runpytest("test_typo.py", "--stack=fake-slurm")
    result.stdout.fnmatch_lines(["*for_transport names unknown transport(s) ?'sssh'?; known:*"])
    assert result.ret != 0


def test_one_broken_stack_is_said_once_with_its_tests_counted(project: pytest.Pytester) -> None:
    """Three tests on a stack that never came up: one reason, one count (the tests named
    under -v), not three copies of the same paragraph."""
    project.makepyfile(test_three=textwrap.dedent("""
        def test_a(backend):
            pass

        def test_b(backend):
            pass

        def test_c(backend):
            pass
    """))
    quiet = project.runpytest("test_three.py", "--stack=broken-slurm", "-p", "no:randomly")
    out = quiet.stdout.str()
    assert "3 infra" in out.splitlines()[-1], out
    assert "stack broken-slurm: 3 test(s) hit an infrastructure error" in out, out
    section = out.split("stack infrastructure errors")[1].split("= pytest-stacks =")[0]
    assert section.count("functional probe job did not finish") == 1, section
    assert out.count("functional probe job did not finish") == 1, out  # the line points above
    assert "test_three.py::test_b[broken-slurm]" not in section, section
    verbose = project.runpytest("test_three.py", "--stack=broken-slurm", "-v", "-p",
                                "no:randomly")
    section = verbose.stdout.str().split("stack infrastructure errors")[1]
    assert "  test_three.py::test_b[broken-slurm]" in section, section
