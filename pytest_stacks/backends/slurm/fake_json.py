"""What the fake's ``squeue --json`` prints around the jobs, per Slurm release.

A client that reads the envelope (the release, the errors, the warnings) must find it where
its own stack's release puts it, so each series' layout is modelled as its release prints it
(tests/data/slurm/SERIES/squeue-all.json and tests/parity/recordings/*.corpus.json are the
reference):

- 21.08-22.05 (openapi/v0.0.37-38): ``meta`` (``plugin`` type and name, ``Slurm`` with an
  integer version), ``errors``, then ``jobs``; no warnings, no client, no command.
- 24.11 on (data_parser/v0.0.42+): ``jobs`` first, then ``last_backfill``, ``last_update``,
  ``meta`` (``plugin``, ``client``, ``command``, ``slurm`` with a string version), ``errors``,
  ``warnings`` ("Zero jobs to dump" when nothing is listed).

A series the fake does not know is refused (:class:`UnmodelledRelease`), never guessed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection

#: The OpenAPI plugin version the 21.08-22.05 series name in ``meta.plugin``.
_OPENAPI = {(21, 8): "v0.0.37", (22, 5): "v0.0.38"}
#: The data parser the 24.11-on series name in ``meta.plugin.data_parser``.
_DATA_PARSER = {(24, 11): "v0.0.42", (25, 5): "v0.0.43", (25, 11): "v0.0.44",
                (26, 5): "v0.0.45"}


class UnmodelledRelease(ValueError):
    """The fake has no recorded ``--json`` layout for this Slurm release."""


def has_json(series: tuple[int, int]) -> bool:
    """Whether the release's squeue has ``--json`` at all (added in 21.08)."""
    return series >= (21, 8)


def _version_parts(version: str) -> list[str]:
    return [*version.split("."), "0", "0"][:3]


def render(version: str, argv: tuple[str, ...], user: str, jobs: list[object],
           value_words: Collection[str], *, accounting: bool = False) -> str:
    """The release's whole ``--json`` document for these jobs, as its squeue prints it
    (``accounting``: slurmctld stores accounting in slurmdbd, which 24.11's ``meta`` names).

    Slashes are escaped (``\\/``) as every recorded release writes them, so a client that
    reads the bytes rather than the parsed document sees the same text.
    """
    major, minor, micro = _version_parts(version)
    series = (int(major), int(minor))
    document: dict[str, object]
    if series in _OPENAPI:
        plugin = _OPENAPI[series]
        document = {
            "meta": {"plugin": {"type": f"openapi/{plugin}",
                                "name": f"Slurm OpenAPI {plugin}"},
                     "Slurm": {"version": {"major": int(major), "micro": int(micro),
                                           "minor": int(minor)},
                               "release": version}},
            "errors": [],
            "jobs": jobs,
        }
    elif series in _DATA_PARSER:
        if series >= (26, 5):
            # Seen on 26.05: the command is shown whole (`-t all` keeps its "all").
            words = list(argv)
        else:
            # Seen on 24.11: `squeue --json -t all` is shown as ["squeue", "--json", "-t"],
            # and `-j 7` as "-j": an option's own word is left out.
            words = [w for i, w in enumerate(argv) if i == 0 or argv[i - 1] not in value_words]
        unset = {"set": True, "infinite": False, "number": 0}
        document = {
            "jobs": jobs,
            "last_backfill": unset,
            "last_update": {**unset, "number": int(time.time())},
            "meta": {"plugin": {"type": "", "name": "",
                                "data_parser": f"data_parser/{_DATA_PARSER[series]}",
                                "accounting_storage": (
                                    "accounting_storage/slurmdbd" if accounting else "")},
                     "client": {"source": "", "user": user, "group": user},
                     "command": words,
                     "slurm": {"version": {"major": major, "micro": micro, "minor": minor},
                               "release": version, "cluster": "stacks"}},
            "errors": [],
            "warnings": [] if jobs else [{"description": "Zero jobs to dump", "source": ""}],
        }
    else:
        known = ", ".join(f"{a}.{b:02d}" for a, b in sorted({**_OPENAPI, **_DATA_PARSER}))
        raise UnmodelledRelease(
            f"the fake Slurm {version} has no recorded `squeue --json` layout (modelled: "
            f"{known}); set the fake stack's version to one of those, or record the release's "
            f"output under tests/data/slurm/ and model it in {__name__}")
    return json.dumps(document, indent=2).replace("/", "\\/")
