"""CI planning from the manifest: lanes, the support window, the pins. Pure: no providers."""

from __future__ import annotations

from pytest_stacks.ci.lanes import (
    EMPTY_LANE_EXIT,
    MAX_JOBS,
    EmptyLaneError,
    LaneError,
    build_inputs,
    lane_rows,
    lane_stacks,
    matrix,
    pr_lane_problems,
    row,
)
from pytest_stacks.ci.pins import (
    LEADING_EDGE,
    LOCAL_IMAGE_PREFIX,
    UNTRACKED,
    Annotation,
    manifest_pins,
    pin_annotations,
    pin_problems,
    pins_by_stack,
)
from pytest_stacks.ci.window import window_markdown
from pytest_stacks.manifest import LANES

__all__ = ["EMPTY_LANE_EXIT", "LANES", "LEADING_EDGE", "LOCAL_IMAGE_PREFIX", "MAX_JOBS",
           "UNTRACKED", "Annotation", "EmptyLaneError", "LaneError", "build_inputs",
           "lane_rows", "lane_stacks", "manifest_pins", "matrix", "pin_annotations",
           "pin_problems", "pins_by_stack", "pr_lane_problems", "row", "window_markdown"]
