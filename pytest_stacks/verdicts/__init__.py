"""What runs proved, merged into one compatibility table: the results document each pytest run
with stacks writes (:mod:`.results`), their fail-closed merge across CI jobs (:mod:`.merge`)
and its renderings (:mod:`.render`). Pure: it reads files and the manifest, never pytest."""

from __future__ import annotations

from pytest_stacks.verdicts.results import (
    SCHEMA_ID,
    SCHEMA_VERSION,
    ResultsDoc,
    ResultsError,
    capability_status,
    dump,
    load,
    stack_verdict,
    validate,
)

__all__ = ["SCHEMA_ID", "SCHEMA_VERSION", "ResultsDoc", "ResultsError", "capability_status",
           "dump", "load", "stack_verdict", "validate"]
