"""Project manifests that extend the catalogue: merging, provenance, version skew, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load
from pytest_stacks.manifest.catalogue import (
    catalogue_manifest,
    catalogue_version,
    default_manifest,
)

REPO = Path(__file__).resolve().parents[2]


def project(tmp_path: Path, body: str, version: str | None = None,
            use: str | None = None) -> Path:
    path = tmp_path / "manifest.yaml"
    head = f'version: 1\ncatalogue:\n  version: "{version or catalogue_version()}"\n'
    path.write_text(head + (f"  use: {use}\n" if use else "") + textwrap.dedent(body))
    return path


def problems(path: Path) -> str:
    with pytest.raises(ManifestError) as caught:
        load(path)
    return str(caught.value)


def test_the_catalogue_is_this_repositorys_manifest_in_a_checkout() -> None:
    assert catalogue_manifest() == REPO / "manifest.yaml"


def test_no_project_manifest_means_the_catalogue(tmp_path: Path) -> None:
    assert default_manifest(tmp_path) == catalogue_manifest()
    (tmp_path / "manifest.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    assert default_manifest(tmp_path) == catalogue_manifest()  # someone else's manifest.yaml
    mine = project(tmp_path, "")
    assert default_manifest(tmp_path) == mine


def test_extending_uses_selected_stacks_and_adds_own(tmp_path: Path) -> None:
    (tmp_path / "stacks/mine").mkdir(parents=True)
    (tmp_path / "stacks/mine/compose.yaml").write_text("services: {slurm: {image: x}}\n")
    path = project(tmp_path, """\
        capabilities:
          my.feature: The site's own promise.
        stacks:
          - name: my-slurm
            extends: slurm-24.11
            capabilities: [submit, status, my.feature]
            options: {min_job_age: 2}
            timeouts: {job: 60}
          - name: my-own
            backend: slurm
            version: "24.11.5"
            provider: compose
            transport: local
            configuration: with-my-service
            capabilities: [submit, my.feature]
            lanes: [full]
            compose: {directory: stacks/mine, service: slurm}
        """, use="[fake-*, slurm-24.11]")
    manifest = load(path)
    assert manifest.catalogue == catalogue_manifest()
    assert manifest.names() == ["fake-slurm", "fake-slurm-20.11", "fake-htcondor",
                                "fake-htcondor-25", "fake-htcondor-lts-client",
                                "fake-mpi-operator", "slurm-24.11", "my-slurm", "my-own"]
    base, mine, own = manifest.get("slurm-24.11"), manifest.get("my-slurm"), manifest.get("my-own")
    assert "my.feature" in manifest.capabilities and "outputs.repeatable" in manifest.capabilities
    # Inherited: the catalogue's pins and folder; overridden: what the project says.
    assert mine.compose is not None and base.compose is not None
    assert mine.compose.directory == base.compose.directory == REPO / "stacks/slurm"
    assert mine.compose.build_args == base.compose.build_args and mine.version == base.version
    assert mine.capabilities == {"submit", "status", "my.feature"}
    assert mine.options == {**base.options, "min_job_age": 2} and mine.timeouts.job == 60
    assert own.compose is not None and own.compose.directory == tmp_path / "stacks/mine"
    origins = manifest.origins["my-slurm"]
    assert origins["options.min_job_age"].startswith(f"{path}:")
    assert origins["compose.build_args.SLURM_VERSION"].startswith(f"{REPO / 'manifest.yaml'}:")
    assert "via extends: slurm-24.11" in origins["compose.build_args.SLURM_VERSION"]
    assert manifest.origins["slurm-24.11"]["version"].startswith(f"{REPO / 'manifest.yaml'}:")


def test_no_use_means_every_catalogue_stack(tmp_path: Path) -> None:
    catalogue = load(catalogue_manifest())
    assert load(project(tmp_path, "")).names() == catalogue.names()


def test_version_skew_is_refused_with_both_versions(tmp_path: Path) -> None:
    text = problems(project(tmp_path, "", version="0.0"))
    assert "catalogue.version" in text and "written for the pytest-stacks catalogue 0.0" in text
    assert f'set catalogue.version: "{catalogue_version()}"' in text


@pytest.mark.parametrize(("body", "expected"), [
    ("catalogue: {version: '%s', use: [slurm-24.1]}\n",
     ["catalogue.use[0]: 'slurm-24.1' matches no catalogue stack", "Did you mean"]),
    ("stacks:\n  - {name: x, extends: slurm-2411}\n",
     ["stacks[0] (x).extends: 'slurm-2411' is not a catalogue stack", "Did you mean"]),
    ("stacks:\n  - {name: slurm-24.11, extends: slurm-24.11}\n",
     ["stack 'slurm-24.11' is also a catalogue stack in use", "manifest.yaml"]),
    ("capabilities: {submit: Something else entirely.}\n",
     ["capability 'submit' is already declared by the catalogue"]),
    ("backends: {slurm: {description: Mine., window: {anchor: '22.05', leading_edge: '26.05'}}}"
     "\n", ["backends.slurm.description: the catalogue describes backend 'slurm'",
            "Remove backends.slurm.description here"]),
    ("stacks:\n  - {name: x, extends: htcondor-23.9, transport: local}\n",
     ["stacks[0] (x).transport: the htcondor driver does not support transport 'local'"]),
])
def test_errors_in_the_combination_name_both_files(tmp_path: Path, body: str,
                                                   expected: list[str]) -> None:
    if body.startswith("catalogue:"):  # replaces the whole catalogue block
        path = tmp_path / "manifest.yaml"
        path.write_text("version: 1\n" + body % catalogue_version())
    else:
        path = project(tmp_path, body)
    text = problems(path)
    assert str(path) in text
    for fragment in expected:
        assert fragment in text, text


def test_a_merged_stack_problem_points_at_the_project_line(tmp_path: Path) -> None:
    path = project(tmp_path, "stacks:\n  - {name: x, extends: slurm-24.11, lanes: [nightly]}\n")
    text = problems(path)
    assert f"{path}:5: stacks[" in text and "'nightly' is not allowed" in text


def test_extends_needs_a_catalogue_block(tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(textwrap.dedent("""\
        version: 1
        capabilities: {submit: s}
        backends: {slurm: {window: {anchor: "22.05", leading_edge: "26.05"}}}
        stacks:
          - {name: x, extends: slurm-24.11}
        """))
    assert "'extends' starts from a catalogue stack, so it needs a top-level 'catalogue:'" \
        in problems(path)


# ------------------------------------------------------ the user's windows (issue 50 item 4)

def test_a_users_pr_lane_is_held_to_the_windows_they_wrote_only(tmp_path: Path) -> None:
    """Using a few catalogue stacks does not make the catalogue's window the user's: their pr
    lane is checked against the windows they wrote (here none), so a window edge no stack of
    theirs stands at fails nothing; one they write is held to it."""
    from pytest_stacks.ci import matrix

    body = "stacks:\n  - {name: my-slurm, extends: slurm-24.11, lanes: [pr]}\n"
    manifest = load(project(tmp_path, body, use="[fake-slurm, slurm-24.11]"))
    assert [r["stack"] for r in matrix(manifest, "pr")["include"]] == ["my-slurm"]
    written = load(project(tmp_path, body + "backends:\n  slurm:\n    window: {anchor: '22.05', "
                           "leading_edge: '26.05'}\n", use="[fake-slurm, slurm-24.11]"))
    from pytest_stacks.ci import LaneError
    with pytest.raises(LaneError, match=r"backend .slurm. has no stack at its leading edge 26\.05"):
        matrix(written, "pr")


#: A user's stack of a release past the catalogue's leading edge (25.14).
HTCONDOR_25_15 = """\
stacks:
  - name: my-htcondor
    extends: htcondor-25-mini
    version: "25.15.0"
    image: {name: htcondor/mini, tag: 25.15.0-el9}
"""


def test_a_user_widens_a_catalogue_window_in_their_own_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A stack newer than the catalogue's leading edge is refused with the way out in the
    user's own file; writing the wider window there is that way, and `show` says whose it is."""
    text = problems(project(tmp_path, HTCONDOR_25_15, use="[htcondor-25-mini]"))
    assert "'25.15.0' is newer than the htcondor window's leading_edge '25.14'" in text
    assert f"add backends.htcondor.window to {tmp_path / 'manifest.yaml'}" in text, text
    path = project(tmp_path, HTCONDOR_25_15 + "backends:\n  htcondor:\n    window: {anchor: "
                   "'23.9', leading_edge: '25.15'}\n", use="[htcondor-25-mini]")
    manifest = load(path)
    assert manifest.backends["htcondor"].window.leading_edge == "25.15"
    assert manifest.window_origins["htcondor.window"].startswith(f"{path}:")
    assert manifest.window_origins["slurm.window"].startswith(f"{catalogue_manifest()}:")
    from pytest_stacks.cli import main

    assert main(["--manifest", str(path), "show", "my-htcondor"]) == 0
    out = capsys.readouterr().out
    assert f"window:        23.9 .. 25.15 (from your file: {path}:" in out, out
    monkeypatch.setenv("COLUMNS", "250")  # the table fits COLUMNS: a row per line here
    assert main(["--manifest", str(path), "list"]) == 0
    out = capsys.readouterr().out
    assert "23.9 .. 25.15" in out and "your file:" in out and "the catalogue:" in out, out


@pytest.mark.parametrize(("window", "expected"), [
    ("{anchor: '23.9', leading_edge: '25.0'}",
     ["backends.htcondor.window.leading_edge: '25.0' is older than the catalogue's '25.14'",
      "widen a catalogue window, never narrow it", "Set it to '25.14' or newer"]),
    ("{anchor: '24.0', leading_edge: '25.14'}",
     ["backends.htcondor.window.anchor: '24.0' is newer than the catalogue's '23.9'",
      "htcondor-23.9 (23.9.6)", "Set it to '23.9' or older"]),
])
def test_narrowing_a_catalogue_window_is_refused_with_the_fix(
        tmp_path: Path, window: str, expected: list[str]) -> None:
    path = project(tmp_path, f"backends:\n  htcondor:\n    window: {window}\n",
                   use="[htcondor-23.9, htcondor-25-mini]")
    text = problems(path)
    assert f"{path}:7: " in text, text
    for fragment in expected:
        assert fragment in text, text
