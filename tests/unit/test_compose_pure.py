"""The pure parts of the compose provider: content tags, build-step parsing, ownership."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_stacks.dockerutil import content_tag
from pytest_stacks.providers import reaper
from pytest_stacks.providers.base import RunContext
from pytest_stacks.providers.build_log import failed_step as _failed_step
from pytest_stacks.providers.labels import (
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    process_start_time,
)


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "Dockerfile").write_text("FROM x\nRUN true\n")
    (tmp_path / "slurm.conf").write_text("A=1\n")
    return tmp_path


def test_content_tag_is_stable_and_tracks_every_input(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    tag = content_tag(folder, {"V": "1"}, "sha256:base")
    assert tag == content_tag(folder, {"V": "1"}, "sha256:base")
    assert tag != content_tag(folder, {"V": "2"}, "sha256:base")
    assert tag != content_tag(folder, {"V": "1"}, "sha256:other")
    (folder / "slurm.conf").write_text("A=2\n")
    assert tag != content_tag(folder, {"V": "1"}, "sha256:base")


def test_readme_edits_do_not_rebuild(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    tag = content_tag(folder, {}, "b")
    (folder / "README.md").write_text("docs\n")
    assert content_tag(folder, {}, "b") == tag


def test_failed_build_step_is_named() -> None:
    output = ("#5 [slurm 2/3] RUN echo step-one\n#5 CACHED\n"
              "#6 [slurm 3/3] RUN this-command-does-not-exist --really\n"
              "#6 ERROR: executor failed running\n")
    assert _failed_step(output) == "RUN this-command-does-not-exist --really"
    assert _failed_step("Step 2/4 : RUN apt-get install nope\n") == "RUN apt-get install nope"
    assert _failed_step("nothing useful") == "(step unknown)"


def test_this_process_is_alive_and_a_dead_or_reused_pid_is_not() -> None:
    me = RunContext.for_this_process("r", Path("/tmp/x")).labels("s")
    assert reaper.owner_alive(me)
    reused = {**me, LABEL_OWNER_START: str(int(process_start_time(os.getpid())) + 1)}
    assert not reaper.owner_alive(reused)
    assert not reaper.owner_alive({**me, LABEL_OWNER_PID: "999999999"})
    assert not reaper.owner_alive({**me, LABEL_OWNER_PID: "garbage"})


def test_kept_stacks_and_other_hosts_are_never_reaped() -> None:
    """Kept-ness is a record of its own (places.kept_runs), whatever the owner's labels say:
    a stack kept by `pytest-stacks up` or --stack-keep outlives its dead owner."""
    me = RunContext.for_this_process("r", Path("/tmp/x")).labels("s")
    dead = {**me, LABEL_OWNER_PID: "999999999"}
    assert not reaper.owner_alive(dead)
    assert reaper.owner_alive(dead, kept={"r"})
    assert reaper.owner_alive({**dead, LABEL_OWNER_HOST: "another-host"})


class _Thing:
    """A container, network or volume as the docker SDK shows it, whose removal may fail."""

    def __init__(self, name: str, refuse: str = "", stays: bool = False) -> None:
        self.id = self.name = name
        self.labels: dict[str, str] = {}
        self.attrs: dict[str, object] = {"Labels": {}}
        self.refuse, self.stays = refuse, stays

    def remove(self, **_: object) -> None:
        if self.refuse:
            raise RuntimeError(self.refuse)


def test_a_removal_is_proven_by_looking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the engine still lists after removal is named, whatever remove() said; and an
    engine that cannot be asked never reads as "all gone"."""
    quiet = _Thing("pst-c1", stays=True)  # remove() returns, yet it is still there
    loud = _Thing("pst-n1", refuse="network has active endpoints")
    resources = reaper.RunResources("run-1", {}, containers=[quiet], networks=[loud])

    def inventory(run_id: str | None = None) -> dict[str, reaper.RunResources]:
        return {"run-1": reaper.RunResources("run-1", {}, containers=[quiet], networks=[loud])}

    monkeypatch.setattr(reaper, "inventory", inventory)
    left = reaper.remove(resources)
    assert "network pst-n1: network has active endpoints" in left
    assert "run run-1: still present after removal: container pst-c1, network pst-n1" in left

    def broken(run_id: str | None = None) -> dict[str, reaper.RunResources]:
        raise RuntimeError("engine gone")

    monkeypatch.setattr(reaper, "inventory", broken)
    assert reaper.remove(reaper.RunResources("run-1", {})) == [
        "run run-1: cannot look again to prove its resources removed: engine gone"]
    assert reaper.sweep_run("run-1") == ["run run-1: cannot list its resources to remove them: "
                                         "engine gone"]


def test_every_built_stack_tags_its_image_with_its_backends_variable() -> None:
    """The provider sets the backend's image-tag variable (registry); a compose file that
    tagged its image with another name would run a stale image."""
    from pytest_stacks import registry
    from pytest_stacks.manifest import load

    manifest = load(Path(__file__).resolve().parents[2] / "manifest.yaml")
    checked = 0
    for stack in manifest.stacks:
        if stack.compose is None or stack.image is not None or stack.provider != "compose":
            continue
        variable = registry.BACKENDS[stack.backend].image_tag_variable
        text = (stack.compose.directory / "compose.yaml").read_text()
        assert variable and "${" + variable in text, (stack.name, variable)
        checked += 1
    assert checked >= 8


def test_a_pin_gone_from_its_suite_is_said_in_the_dockerfiles_own_words() -> None:
    """The classic builder's output (colour codes and all), where the failed RUN line is echoed
    with the message unexpanded: the real line is the one said, never the template."""
    from pytest_stacks.providers.build_log import pin_gone

    output = ("\x1b[91m+ set +x\n\x1b[0m\x1b[91mPIN-GONE: condor 25.14.1+dfsg-1 (the pinned "
              "HTCONDOR_VERSION) is not in Debian sid any more; sid has condor 25.15.0+dfsg-1 "
              "now. Fix: move HTCONDOR_VERSION.\n\x1b[0mThe command '/bin/sh -c set -eux; echo "
              "\"PIN-GONE: condor ${HTCONDOR_VERSION} (the pinned\"' returned a non-zero code: 3")
    said = pin_gone(output)
    assert said.startswith("condor 25.14.1+dfsg-1 (the pinned HTCONDOR_VERSION)"), said
    assert "sid has condor 25.15.0+dfsg-1 now" in said and "${" not in said
    assert pin_gone("#7 3.2 E: Version '1' for 'condor' was not found") == ""


MADISON = ("  slurmctld |  26.05.5-1 | http://deb.debian.org/debian sid/main amd64 Packages\n"
           "  slurmctld | 24.11.5-4+deb13u1 | http://deb.debian.org/debian trixie/main amd64 "
           "Packages\n")


@pytest.mark.parametrize("dockerfile", ["slurm", "slurm-cluster", "htcondor", "htcondor-pool"])
def test_the_pin_check_reads_madisons_padded_columns(dockerfile: str) -> None:
    """apt-cache madison pads its version column to the widest version listed (a sid pin on a
    trixie base lists both): the Dockerfiles' check must find the pin, padded or not, and
    name the newest version the suite has, trimmed."""
    import re
    import subprocess
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "stacks" / dockerfile / "Dockerfile"
            ).read_text()
    listed, newest = re.findall(r"apt-cache madison \S+ \| awk -F'\|' '([^']+)'", text)[:2]
    sample = MADISON if "slurm" in dockerfile else MADISON.replace("slurmctld", "condor")
    versions = subprocess.run(["awk", "-F|", listed], input=sample, capture_output=True,
                              text=True, check=True).stdout.split("\n")
    assert "26.05.5-1" in versions and "24.11.5-4+deb13u1" in versions, versions
    first = subprocess.run(["awk", "-F|", newest], input=sample, capture_output=True,
                           text=True, check=True).stdout
    assert first == "26.05.5-1\n", first
