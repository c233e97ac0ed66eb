"""bench/performance.py: docs/performance.md's table comes from what the benches printed,
or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import performance
from bench.performance import Figure


def test_a_figure_the_bench_no_longer_prints_stops_the_script() -> None:
    with pytest.raises(SystemExit, match=r"bench/kind.py printed no line matching"):
        performance._find(r"Succeeded: ([0-9.]+) s", "Succeeded: 41.0 s\n", "kind.py", index=1)
    assert performance._find(r"Succeeded: ([0-9.]+) s", "Succeeded: 41.0 s\nSucceeded: 30.5 s",
                             "kind.py", index=1) == ("30.5",)


def test_the_table_replaces_only_what_lies_between_the_markers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# Title\nbefore\n{performance.BEGIN}\nold table\n{performance.END}\n"
                      "after\n")
    monkeypatch.setattr(performance, "PAGE", readme)
    text = performance.table([Figure("fake lane", "< 2.5 s", "3.1 s", False),
                              Figure("slurm suite", "<= 45 s", "17 s", True)], "2026-12-02")
    performance.write_readme(text)
    written = readme.read_text()
    assert written.startswith("# Title\nbefore\n") and written.endswith("after\n")
    assert "old table" not in written
    assert "| fake lane | < 2.5 s | 3.1 s | **no** |" in written
    assert "| slurm suite | <= 45 s | 17 s | yes |" in written


def test_a_readme_without_the_markers_is_left_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# Title\nno markers here\n")
    monkeypatch.setattr(performance, "PAGE", readme)
    with pytest.raises(SystemExit, match="needs exactly one"):
        performance.write_readme("table")
    assert readme.read_text() == "# Title\nno markers here\n"
