"""pytest-stacks: one backend-agnostic suite against pinned, real batch daemons and fakes."""

__version__ = "0.1.0"
