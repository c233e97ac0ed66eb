"""HTCondor's words for "the schedd or the collector is not there" and for "your request was
refused".

CEDAR, the wire protocol, reports a peer it cannot reach as ``CEDAR:6001`` (failed to connect)
and friends; the security layer (SECMAN) reports a session it could not make or resume with a
peer that went away as ``SECMAN:2003``, ``2004`` or ``2007``; the bindings wrap them in
``Failed to connect to schedd`` or ``Failed to fetch ads from schedd, errmsg=...`` (with no
errmsg, the 25.14 bindings' answer to a constraint the schedd cannot parse: a refusal).
Those recorded from the pinned stacks are in tests/data/outages/htcondor-*.json.
"""

from __future__ import annotations

from pytest_stacks.backends.outages import OutageWords, Phrase

SCHEDD = "schedd unreachable"
COLLECTOR = "collector unreachable"

WORDS = OutageWords(
    backend="htcondor",
    gone=(
        Phrase(r"Failed to connect to schedd", SCHEDD),
        Phrase(r"Unable to (locate|find) (local )?(schedd|scheduler)", SCHEDD),
        Phrase(r"Can't find address (of|for) (local )?schedd", SCHEDD),
        Phrase(r"Failed to (fetch|query|connect to) (the )?collector|"
               r"Unable to (locate|contact) (the )?collector|"
               r"Failed to end classad message|Unable to query collector", COLLECTOR),
        Phrase(r"CEDAR:600[0-9]", SCHEDD),
        # A session with a peer that went away: 2003/2004 could not start one, 2007 (recorded
        # on htcondor-25, its schedd SIGKILLed) could not resume the cached one.
        Phrase(r"SECMAN:200[347]", SCHEDD),
        Phrase(r"SECMAN:.*(timed out|connection refused|failed to connect)", SCHEDD),
        # pytest-stacks' own words for a bindings call it ended after its deadline (.bounded).
        Phrase(r"the schedd did not answer within \d+ s", SCHEDD),
        Phrase(r"the bindings worker (exited|is gone)", SCHEDD),
    ),
    refused=(
        # A constraint the schedd cannot parse, as the 25.14 bindings say it (no errmsg).
        Phrase(r"Failed to fetch ads from schedd, errmsg=\s*$", "query refused"),
        Phrase(r"Submit (failed|error)|ERROR: .*submit", "submission refused"),
        Phrase(r"Parse error|Unrecognized (command|attribute)|invalid expression",
               "request refused"),
        Phrase(r"SECMAN:2010|not authorized|PERMISSION DENIED", "request refused"),
    ),
)
