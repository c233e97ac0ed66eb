"""Run by :mod:`.other_client` with another release's Python (its own virtual environment, the
PyPI ``htcondor`` bindings of that version): one schedd call per process, a JSON request on
stdin and a JSON answer on stdout. Standard library and ``htcondor2`` only: nothing of
pytest-stacks is importable there, so this is what that release's client does, no more.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def _schedd(request: dict[str, Any]) -> tuple[Any, Any]:
    # The bindings read the environment when first imported.
    os.environ["_CONDOR_COLLECTOR_HOST"] = request["collector"]
    os.environ["_CONDOR_SEC_TOKEN_DIRECTORY"] = request["token_dir"]
    os.environ["_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS"] = "IDTOKENS"
    import htcondor2  # type: ignore[import-not-found,unused-ignore]

    ad = htcondor2.Collector(request["collector"]).locate(htcondor2.DaemonType.Schedd)
    return htcondor2, htcondor2.Schedd(ad)


def main() -> None:
    request = json.load(sys.stdin)
    htcondor2, schedd = _schedd(request)
    answer: dict[str, Any] = {"client": str(htcondor2.version())}
    if request["call"] == "submit":
        result = schedd.submit(htcondor2.Submit(request["description"]), spool=True, count=1)
        schedd.spool(result)
        answer["job_id"] = f"{result.cluster()}.{result.first_proc()}"
    elif request["call"] == "retrieve":
        schedd.retrieve([request["job_id"]])
    elif request["call"] != "version":
        raise SystemExit(f"unknown call {request['call']!r}")
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
