"""Settings every test of this repository shares."""

from __future__ import annotations

from hypothesis import settings

# No wall-clock bound on a property test's examples: the fake lane runs while the real stacks'
# images and Go programs build in the background, and a busy machine is not a failure (timing
# belongs in bench/). Hypothesis's default deadline (200 ms an example) would say it is.
settings.register_profile("pytest-stacks", deadline=None)
settings.load_profile("pytest-stacks")
