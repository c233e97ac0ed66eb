"""The scheduler's own commands (``sbatch``, ``condor_q``, ...) on this machine's PATH, each
forwarded to the stack's login host as its login user: one mechanism (:mod:`.forward`, run by
the shims :mod:`.commands` writes) with a small per-transport part (``docker exec``, the pinned
SSH route, the in-process fake's relay)."""
