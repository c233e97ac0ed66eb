"""Which HTCondor a login node's tools submit to: the schedd's own ``CondorVersion`` from its
ad in the collector, never the tools' own ``condor_version`` (that is the client's, and a site's
tools and daemons differ exactly when a version check matters).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.transports import CommandResult


def schedd_version(run: Callable[[list[str]], CommandResult]) -> str:
    """The ``CondorVersion`` of the schedd the login node's tools submit to, from its own ad
    in the collector: the only schedd there, or the one ``condor_q`` names in its header.
    ScheddError with what was seen where neither tells."""
    listed = run(["condor_status", "-schedd", "-af", "Name", "CondorVersion"])
    ads = dict(line.strip().split(None, 1) for line in listed.stdout.splitlines()
               if len(line.split(None, 1)) == 2)
    if listed.ok and len(ads) == 1:
        return next(iter(ads.values()))
    if listed.ok and ads:
        header = run(["condor_q", "-totals"])
        named = re.search(r"^-- Schedd: (\S+) :", header.stdout, re.MULTILINE)
        if named and named.group(1) in ads:
            return ads[named.group(1)]
    seen = "; ".join(f"{name}: {version}" for name, version in sorted(ads.items())) or "none"
    failed = "" if listed.ok else f" (condor_status failed: {listed.stderr.strip()[-300:]})"
    raise ScheddError(f"cannot tell the schedd's version: the collector's schedd ads give "
                      f"{seen}{failed}, and condor_q names none of them")
