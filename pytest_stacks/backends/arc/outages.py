"""A-REX's words for "the CE is not there" and for "your request was refused", as the
driver's errors carry them (pytest_stacks/backends/arc/rest.py): a connection that does not
answer, and HTTP refusals of the job collection or of one job."""

from __future__ import annotations

from pytest_stacks.backends.outages import OutageWords, Phrase

WORDS = OutageWords(
    backend="arc",
    gone=(
        Phrase(r"A-REX at \S+ did not answer .*(Connection refused|timed out|"
               r"Connection reset|Remote end closed)", "A-REX not responding"),
        Phrase(r"A-REX info: HTTP 5\d\d", "A-REX not responding"),
    ),
    refused=(
        Phrase(r"A-REX refused the submission", "submission refused"),
        Phrase(r"A-REX refused (action=)?\w+", "request refused"),
        Phrase(r"CERTIFICATE_VERIFY_FAILED|certificate (unknown|required)",
               "credentials refused"),
    ),
)
