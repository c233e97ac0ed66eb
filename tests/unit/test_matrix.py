"""Lanes -> matrix rows, the support window, the pins, and the matrix/window commands."""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from pytest_stacks import ci as matrix
from pytest_stacks import dockerutil
from pytest_stacks.manifest import Manifest, load, loads

ROOT = Path(__file__).resolve().parents[2]

BOOKWORM = "https://deb.debian.org/debian?suite=bookworm&components=main&binaryArch=amd64"
TRIXIE = "https://deb.debian.org/debian?suite=trixie&components=main&binaryArch=amd64"
SID = "https://deb.debian.org/debian?suite=sid&components=main&binaryArch=amd64"
DIGEST = "sha256:" + "ab" * 32

HEAD = """\
version: 1
capabilities:
  submit: s
  status: s
backends:
  slurm:
    window:
      anchor: "22.05"
      leading_edge: "26.05"
  htcondor:
    window:
      anchor: "23.9"
      leading_edge: "25.12"
stacks:
  - name: fake-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit, status]
    lanes: [pr, full]
"""


def slurm(name: str, version: str, deb: str, suite: str, url: str, lanes: str = "[pr, full]",
          *, marker: str = "", canary: bool = True, config: str = "single-node") -> str:
    text = f"""\
  - name: {name}
    description: Slurm {version}
    backend: slurm
    version: "{version}"
    provider: compose
    transport: local
    configuration: {config}
    capabilities: [submit, status]
    lanes: {lanes}
    base_image: {{name: debian, tag: {suite}-slim, seed: bookworm}}
    compose:
      directory: stacks/slurm
      service: slurm
      build_args:
        DEBIAN_SUITE: {suite}
        # renovate: datasource=deb depName=slurm-wlm{marker} registryUrl={url}
        SLURM_VERSION: "{deb}"
"""
    if canary:
        text += '    canary:\n      build_args: {SLURM_VERSION: ""}\n'
    return text


def condor_image(name: str, version: str, tag: str, lanes: str = "[pr, full]", *,
                 leading: bool = False, digest: bool = False) -> str:
    marker = "    # renovate: depType=leading-edge\n" if leading else ""
    pin = f", digest: {DIGEST}" if digest else ""
    return f"""\
  - name: {name}
    backend: htcondor
    version: "{version}"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit, status]
    lanes: {lanes}
    requires: [docker, registry]
{marker}    image: {{name: htcondor/mini, tag: {tag}{pin}}}
    compose:
      directory: stacks/htcondor
      service: htcondor
    canary:
      image: {{tag: 25.x-el9}}
"""


def condor_deb(name: str = "htcondor-23.9", lanes: str = "[pr, full]") -> str:
    return f"""\
  - name: {name}
    backend: htcondor
    version: "23.9.6"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit, status]
    lanes: {lanes}
    compose:
      directory: stacks/htcondor
      service: htcondor
      build_args:
        DEBIAN_SUITE: trixie
        # renovate: datasource=deb depName=htcondor registryUrl={TRIXIE}
        HTCONDOR_VERSION: "23.9.6+dfsg-2.1+b10"
"""


def standard_stacks() -> str:
    return "".join([
        slurm("slurm-22.05", "22.05.8", "22.05.8-4+deb12u3", "bookworm", BOOKWORM),
        slurm("slurm-24.11", "24.11.5", "24.11.5-4+deb13u1", "trixie", TRIXIE, "[full]"),
        slurm("slurm-26.05", "26.05.5", "26.05.5-1", "sid", SID, marker=" depType=leading-edge"),
        condor_deb(),
        condor_image("htcondor-25", "25.12.2", "25.12.2-el9", leading=True, digest=True),
        condor_image("htcondor-25.0", "25.0.14", "25.0.14-el9", "[full]"),
    ])


@pytest.fixture
def make(tmp_path: Path):
    """Write a manifest (with the compose folders it names) and load it."""
    for folder in ("slurm", "htcondor"):
        (tmp_path / "stacks" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "stacks" / folder / "compose.yaml").write_text("services: {}\n")

    def _make(stacks: str, head: str = HEAD) -> Manifest:
        path = tmp_path / "manifest.yaml"
        path.write_text(head + stacks)
        return load(path)

    return _make


# ---------------------------------------------------------------- lanes


def test_pr_lane_is_leading_edge_plus_anchor_per_backend(make) -> None:
    rows = matrix.lane_rows(make(standard_stacks()), "pr")
    assert [r["stack"] for r in rows] == ["slurm-22.05", "slurm-26.05", "htcondor-23.9",
                                          "htcondor-25"]
    assert {(r["stack"], r["role"]) for r in rows} >= {("slurm-22.05", "anchor"),
                                                       ("slurm-26.05", "leading-edge")}
    assert all(not r["stack"].startswith("fake-") for r in rows)


def test_rows_carry_everything_a_job_needs(make) -> None:
    rows = {r["stack"]: r for r in matrix.lane_rows(make(standard_stacks()), "full")}
    row = rows["slurm-22.05"]
    for key in ("stack", "backend", "version", "role", "provider", "runner_needs", "pytest_args",
                "artifact", "timeout_minutes", "runs_on", "inputs", "fingerprint"):
        assert key in row, key
    assert row["pytest_args"] == "--stack=slurm-22.05"
    assert row["runner_needs"] == ["docker"]
    assert rows["htcondor-25"]["runner_needs"] == ["docker", "registry"]
    assert row["inputs"]["build_arg.SLURM_VERSION"] == "22.05.8-4+deb12u3"
    assert rows["htcondor-25"]["inputs"]["image"] == f"htcondor/mini:25.12.2-el9@{DIGEST}"
    assert isinstance(row["timeout_minutes"], int) and 10 <= row["timeout_minutes"] <= 360
    json.dumps(list(rows.values()))  # a GitHub matrix must be plain JSON


def test_artifact_names_are_unique_and_safe(make) -> None:
    for lane in matrix.LANES:
        names = [r["artifact"] for r in matrix.lane_rows(make(standard_stacks()), lane)]
        assert len(names) == len(set(names))
        assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) for n in names)
        assert all(lane in n for n in names)


def test_full_lane_is_the_whole_window(make) -> None:
    rows = matrix.lane_rows(make(standard_stacks()), "full")
    assert [r["stack"] for r in rows] == ["slurm-22.05", "slurm-24.11", "slurm-26.05",
                                          "htcondor-23.9", "htcondor-25", "htcondor-25.0"]


def test_canary_lane_floats(make) -> None:
    rows = {r["stack"]: r for r in matrix.lane_rows(make(standard_stacks()), "canary")}
    assert "htcondor-23.9" not in rows  # no canary: block
    assert rows["slurm-22.05"]["pytest_args"] == "--stack=slurm-22.05 --stack-lane=canary"
    assert rows["slurm-22.05"]["inputs"]["build_arg.SLURM_VERSION"] == ""
    assert rows["htcondor-25"]["inputs"]["image"] == "htcondor/mini:25.x-el9"
    assert rows["slurm-22.05"]["artifact"] != matrix.lane_rows(
        make(standard_stacks()), "pr")[0]["artifact"]


def test_one_row_per_configuration(make) -> None:
    stacks = standard_stacks() + slurm("slurm-22.05-multi", "22.05.8", "22.05.8-4+deb12u3",
                                       "bookworm", BOOKWORM, "[full]", config="multi-node")
    rows = [r for r in matrix.lane_rows(make(stacks), "full") if r["version"] == "22.05.8"]
    assert [(r["stack"], r["configuration"]) for r in rows] == [
        ("slurm-22.05", "single-node"), ("slurm-22.05-multi", "multi-node")]


def test_empty_lane_is_reported_not_emitted(make) -> None:
    manifest = make(slurm("slurm-22.05", "22.05.8", "22.05.8-4+deb12u3", "bookworm", BOOKWORM,
                          canary=False)
                    + slurm("slurm-26.05", "26.05.5", "26.05.5-1", "sid", SID,
                            marker=" depType=leading-edge", canary=False)
                    + condor_deb()
                    + condor_image("htcondor-25", "25.12.2", "25.12.2-el9", leading=True
                                   ).replace("    canary:\n      image: {tag: 25.x-el9}\n", ""))
    assert matrix.lane_rows(manifest, "canary") == []
    with pytest.raises(matrix.EmptyLaneError, match="canary lane is empty"):
        matrix.matrix(manifest, "canary")


@pytest.mark.parametrize(("drop", "message"), [
    ("slurm-22.05", "pr lane misses the anchor 22.05 of backend 'slurm'"),
    ("slurm-26.05", "pr lane misses the leading edge 26.05 of backend 'slurm'"),
])
def test_pr_lane_must_hold_leading_edge_and_anchor(make, drop: str, message: str) -> None:
    stacks = standard_stacks()
    block_start = stacks.index(f"  - name: {drop}\n")
    lanes_at = stacks.index("lanes: [pr, full]", block_start)
    stacks = stacks[:lanes_at] + "lanes: [full]" + stacks[lanes_at + len("lanes: [pr, full]"):]
    with pytest.raises(matrix.LaneError, match=re.escape(message)):
        matrix.lane_rows(make(stacks), "pr")
    matrix.lane_rows(make(stacks), "full")  # the other lanes are unaffected


def test_pr_lane_needs_a_stack_at_each_edge(make) -> None:
    stacks = standard_stacks().replace('leading_edge: "26.05"', 'leading_edge: "26.05"')
    head = HEAD.replace('anchor: "22.05"', 'anchor: "21.08"')
    with pytest.raises(matrix.LaneError, match=r"no stack at its anchor 21\.08"):
        matrix.lane_rows(make(stacks, head), "pr")


def test_unknown_lane() -> None:
    with pytest.raises(matrix.LaneError, match="unknown lane"):
        matrix.lane_stacks(load(ROOT / "manifest.yaml"), "nightly")


def test_the_repository_manifest_has_valid_lanes() -> None:
    manifest = load(ROOT / "manifest.yaml")
    assert matrix.pr_lane_problems(manifest) == []
    for lane in ("pr", "full"):
        assert matrix.lane_rows(manifest, lane), lane


# ---------------------------------------------------------------- window


def test_window_table(make) -> None:
    table = matrix.window_markdown(make(standard_stacks()))
    lines = table.strip().splitlines()
    assert lines[0].startswith("| Backend |") and lines[1].startswith("|---")
    body = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    assert [(r[0], r[2], r[3]) for r in body] == [
        ("slurm", "22.05.8", "anchor"), ("slurm", "24.11.5", "supported"),
        ("slurm", "26.05.5", "leading-edge"), ("htcondor", "23.9.6", "anchor"),
        ("htcondor", "25.0.14", "supported"), ("htcondor", "25.12.2", "leading-edge")]
    assert body[0][4] == "`slurm-22.05` (local, single-node)" and body[0][5] == "pr, full, canary"
    assert body[1][5] == "full, canary"
    assert "fake-slurm" not in table


def test_window_table_shows_legacy_and_missing_edges(make) -> None:
    stacks = slurm("slurm-20.11", "20.11.4", "20.11.7+really20.11.4-2+deb11u1", "bookworm",
                   BOOKWORM, "[full]") + standard_stacks().replace(
        slurm("slurm-22.05", "22.05.8", "22.05.8-4+deb12u3", "bookworm", BOOKWORM), "")
    table = matrix.window_markdown(make(stacks))
    assert ("| slurm | 22.05 .. 26.05 | 20.11.4 | legacy | `slurm-20.11` (local, single-node) |"
            in table)
    assert "| slurm | 22.05 .. 26.05 | 22.05 | anchor | (no stack) | - |" in table


# ---------------------------------------------------------------- pins


def test_manifest_pins(make) -> None:
    pins = matrix.manifest_pins(make(standard_stacks()))
    assert pins == {
        ("slurm-wlm", "deb", "22.05.8-4+deb12u3"), ("slurm-wlm", "deb", "22.05.8"),
        ("slurm-wlm", "deb", "24.11.5-4+deb13u1"), ("slurm-wlm", "deb", "24.11.5"),
        ("slurm-wlm", "deb", "26.05.5-1"), ("slurm-wlm", "deb", "26.05.5"),
        ("htcondor", "deb", "23.9.6+dfsg-2.1+b10"), ("htcondor", "deb", "23.9.6"),
        ("htcondor/mini", "docker", "25.12.2-el9"), ("htcondor/mini", "docker", "25.12.2"),
        ("htcondor/mini", "docker", "25.0.14-el9"), ("htcondor/mini", "docker", "25.0.14"),
    }
    assert matrix.pin_problems(make(standard_stacks())) == []


def test_an_unannotated_pin_is_reported_untracked(make) -> None:
    stacks = standard_stacks().replace(
        f"        # renovate: datasource=deb depName=slurm-wlm registryUrl={TRIXIE}\n", "")
    manifest = make(stacks)
    untracked = {p for p in matrix.manifest_pins(manifest) if p[1] == matrix.UNTRACKED}
    assert {p[2] for p in untracked} == {"24.11.5-4+deb13u1", "24.11.5"}
    problems = matrix.pin_problems(manifest)
    assert any("stacks[slurm-24.11].compose.build_args.SLURM_VERSION" in p
               and "not tracked by Renovate" in p for p in problems)


def test_leading_edge_markers_must_match_roles(make) -> None:
    stacks = standard_stacks().replace(" depType=leading-edge", "").replace(
        "depName=htcondor registryUrl", "depName=htcondor depType=leading-edge registryUrl")
    problems = matrix.pin_problems(make(stacks))
    assert any("stacks[slurm-26.05]" in p and "add 'depType=leading-edge'" in p
               for p in problems)
    assert any("stacks[htcondor-23.9]" in p and "role is anchor" in p for p in problems)


def test_deb_suite_must_match_the_build_suite(make) -> None:
    stacks = standard_stacks().replace(f"registryUrl={BOOKWORM}", f"registryUrl={TRIXIE}")
    problems = matrix.pin_problems(make(stacks))
    assert any("stacks[slurm-22.05]" in p and "suite 'trixie'" in p and "'bookworm'" in p
               for p in problems)


def test_annotation_fields_keep_renovates_order(make) -> None:
    stacks = standard_stacks().replace("datasource=deb depName=htcondor",
                                       "depName=htcondor datasource=deb")
    assert any("in the order" in p for p in matrix.pin_problems(make(stacks)))


def test_annotations_parse_yaml_dockerfile_and_shell_forms() -> None:
    text = textwrap.dedent("""\
        # renovate: datasource=deb depName=a registryUrl=https://x?suite=sid
        A_VERSION: "1.2-3"
        # renovate: datasource=deb depName=b
        ARG B_VERSION=4.5+dfsg-1
        # renovate: datasource=npm depName=c
        c_version="${C_VERSION:-6.7.8}"
        """)
    found = [(a.dep_name, a.key, a.value) for a in matrix.pin_annotations(text)]
    assert found == [("a", "A_VERSION", "1.2-3"), ("b", "B_VERSION", "4.5+dfsg-1"),
                     ("c", "c_version", "6.7.8")]


# ---------------------------------------------------------------- a version bump


def _bump(version: str) -> str:
    parts = version.split(".")
    return ".".join([*parts[:-1], str(int(parts[-1]) + 1)])


def test_simulated_version_bump_changes_rows_and_build_inputs(tmp_path: Path) -> None:
    """Edit one pin as Renovate's PR would (the Debian package and the stack's version in one
    change) in a copy of the repository's manifest: that stack's rows and build inputs change,
    nothing else does."""

    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    original = (ROOT / "manifest.yaml").read_text()
    (tmp_path / "manifest.yaml").write_text(original)
    before = load(tmp_path / "manifest.yaml")

    notes = {a.target_line: a for a in matrix.pin_annotations(original)}
    lines = original.splitlines(keepends=True)
    candidates = [s for s in before.stacks if s.compose and s.provider == "compose"
                  and any(k.endswith("VERSION") and v for k, v in s.compose.build_args.items())]
    target = sorted(candidates, key=lambda s: s.role != "leading-edge")[0]
    key = next(k for k, v in target.compose.build_args.items() if k.endswith("VERSION") and v)
    old_pin = target.compose.build_args[key]
    new_version = _bump(target.version)
    new_pin = old_pin.replace(target.version, new_version, 1)
    assert new_pin != old_pin
    # Renovate moves every occurrence of the pin (stacks of one version in several
    # configurations share it), with each such stack's version.
    for pin_line in (n for n, a in notes.items() if a.key == key and a.value == old_pin):
        lines[pin_line - 1] = lines[pin_line - 1].replace(old_pin, new_pin)
        version_line = next(i for i in range(pin_line - 1, -1, -1)
                            if re.match(rf'\s+version:\s*"?{re.escape(target.version)}"?\s*$',
                                        lines[i]))
        lines[version_line] = lines[version_line].replace(target.version, new_version)
    bumped = {s.name for s in before.stacks
              if s.compose and s.compose.build_args.get(key) == old_pin}
    bumped_text = "".join(lines)
    (tmp_path / "manifest.yaml").write_text(bumped_text)
    after = load(tmp_path / "manifest.yaml")

    for lane in ("pr", "full", "canary"):
        old_rows = {r["stack"]: r for r in matrix.lane_rows(before, lane)}
        new_rows = {r["stack"]: r for r in matrix.lane_rows(after, lane)}
        assert old_rows.keys() == new_rows.keys()
        for name, old in old_rows.items():
            new = new_rows[name]
            if name not in bumped:
                assert new == old
                continue
            assert new["version"] == new_version
            assert new["fingerprint"] != old["fingerprint"]
            if lane != "canary":  # the canary floats the pin anyway
                assert new["inputs"][f"build_arg.{key}"] == new_pin
    stack = after.get(target.name)
    assert stack.compose is not None and stack.compose.build_args[key] == new_pin
    assert stack.version == new_version
    old_tag = dockerutil.content_tag(target.compose.directory, target.compose.build_args, "base")
    new_tag = dockerutil.content_tag(stack.compose.directory, stack.compose.build_args, "base")
    assert old_tag != new_tag
    # Renovate sees the new values, and nothing else moved.
    pins_before = matrix.manifest_pins(before, original)  # the file now holds the bump
    pins_after = matrix.manifest_pins(after)
    changed = {value for _, _, value in pins_before ^ pins_after}
    assert changed == {old_pin, new_pin, target.version, new_version}


# ---------------------------------------------------------------- command line


def _cli(argv: list[str]) -> int:
    from pytest_stacks import cli

    return cli.main(argv)


def test_cli_matrix_json(make, capsys) -> None:
    manifest = make(standard_stacks())
    assert _cli(["matrix", "--lane", "pr", "--manifest", str(manifest.path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["include"] and len(out["include"]) == 4


def test_cli_matrix_github_output(make, capsys, monkeypatch, tmp_path: Path) -> None:
    manifest = make(standard_stacks())
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    assert _cli(["--manifest", str(manifest.path), "matrix", "--lane", "full",
                 "--format", "github"]) == 0
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert values["earlier"] == "1"
    assert values["has_rows"] == "true" and values["count"] == "6"
    assert len(json.loads(values["matrix"])["include"]) == 6
    assert "full lane: 6 job(s)" in capsys.readouterr().out


def test_cli_matrix_empty_lane(make, capsys, monkeypatch, tmp_path: Path) -> None:
    manifest = make(slurm("slurm-22.05", "22.05.8", "22.05.8-4+deb12u3", "bookworm", BOOKWORM,
                          canary=False)
                    + slurm("slurm-26.05", "26.05.5", "26.05.5-1", "sid", SID,
                            marker=" depType=leading-edge", canary=False))
    output = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(output))
    code = _cli(["matrix", "--lane", "canary", "--format", "github",
                 "--manifest", str(manifest.path)])
    captured = capsys.readouterr()
    assert code == 3
    assert "canary lane is empty" in captured.err and captured.out == ""
    assert output.read_text() == "has_rows=false\ncount=0\n"


def test_cli_matrix_errors_are_one_clear_line(make, capsys, monkeypatch, tmp_path) -> None:
    stacks = standard_stacks().replace("lanes: [pr, full]", "lanes: [full]", 1)
    manifest = make(stacks)
    assert _cli(["matrix", "--lane", "pr", "--manifest", str(manifest.path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "anchor 22.05" in err
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    assert _cli(["matrix", "--lane", "full", "--format", "github",
                 "--manifest", str(manifest.path)]) == 2
    assert "GITHUB_OUTPUT" in capsys.readouterr().err
    assert _cli(["matrix", "--lane", "pr", "--manifest", str(tmp_path / "nope.yaml")]) == 4
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such manifest" in err


def test_cli_window(make, capsys) -> None:
    manifest = make(standard_stacks())
    assert _cli(["window", "--manifest", str(manifest.path)]) == 0
    assert capsys.readouterr().out == matrix.window_markdown(manifest)


def test_loads_and_load_agree_on_pins(make) -> None:
    manifest = make(standard_stacks())
    text = manifest.path.read_text()
    again = loads(text, manifest.path)
    assert matrix.manifest_pins(again, text) == matrix.manifest_pins(manifest)


def test_cli_matrix_site_lane_empty_is_said_not_a_crash(make, capsys) -> None:
    """Issue 50: ``matrix --lane site`` on a manifest with no site stack was KeyError: 'site'."""
    manifest = make(standard_stacks())
    code = _cli(["matrix", "--lane", "site", "--manifest", str(manifest.path)])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    assert "site lane is empty (no real stack lists 'site' in its lanes)" in captured.err
    assert "KeyError" not in captured.err and captured.out == ""


def test_cli_version(capsys) -> None:
    """Issue 50: the CLI had no --version."""
    from importlib import metadata

    with pytest.raises(SystemExit) as exit_:
        _cli(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"pytest-stacks {metadata.version('pytest-stacks')}\n"


@pytest.mark.parametrize("edit", ["option", "stack folder", "test code"])
def test_a_row_changes_with_options_stack_folders_and_code(make, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           edit: str) -> None:
    """The pins leave out a stack's options, the content of its stack folder and the code
    that tests it; a row (which its job's results are bound to) must change with each, or a
    run of other inputs passes for the planned one."""
    monkeypatch.chdir(tmp_path)  # the project the plan is made in
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_it.py").write_text("def test_it(stack):\n    pass\n")
    before = {r["stack"]: r for r in matrix.matrix(make(standard_stacks()), "pr")["include"]}
    stacks = standard_stacks()
    if edit == "option":
        stacks = stacks.replace("  - name: slurm-22.05\n",
                                "  - name: slurm-22.05\n    options: {partition: big}\n")
    elif edit == "stack folder":
        (tmp_path / "stacks" / "slurm" / "entrypoint.sh").write_text("exec slurmctld -D\n")
    else:
        (tmp_path / "tests" / "test_it.py").write_text("def test_it(stack):\n    assert 0\n")
    after = {r["stack"]: r for r in matrix.matrix(make(stacks), "pr")["include"]}
    assert after["slurm-22.05"] != before["slurm-22.05"], edit
