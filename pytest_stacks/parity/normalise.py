"""Recordings as stable text: what differs between two runs of the same scenario by nature
(job ids, work folders, container names, addresses, times) becomes a placeholder; what belongs
to other work on a shared stack (other tests' jobs in a full queue listing) is dropped.

A run's own folder (``/tmp/pytest-stacks-0/<run id>``, where a driver keeps its local files)
becomes ``<run_dir>``; a listing of jobs is ordered by job, because a schedd lists its queue
in the order of its own tables, which is nothing a client may rely on; for the same reason
a list of typed entries (a Kubernetes object's ``status.conditions``) is ordered by type.

Job ids are recognised only where an id stands (an id field, ``JobId=``, ``job 17``, a line
that starts with it, ``slurm-17.out``, ``17.batch``), never as any number: a fake counts from 1,
and ``NumCPUs=1`` must not become a job.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

ID_KEYS = frozenset({"job_id", "jobid", "clusterid", "cluster", "array_job_id", "het_job_id"})
_RUN_DIR = re.compile(r"(?:/[\w.-]+)*/pytest-stacks-\d+/(?:kept/)?\d{14}-[0-9a-f]{8}")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
#: Values a server counts up for its own bookkeeping (an object's version in etcd).
COUNTER_KEYS = frozenset({"resourceversion"})
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_SINFUL = re.compile(r"<\d{1,3}(?:\.\d{1,3}){3}:\d+[^>\s]*>")
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{12,64}\b")
#: A folder a driver names with 12 random hex digits (``uuid4().hex[:12]``): a placeholder
#: even when those digits happen to hold no letter (about 1 in 280), which _HEX cannot tell
#: from a number.
_PATH_HEX = re.compile(r"(?<=/)[0-9a-f]{12}(?=/|\b)")
#: Both, in one left-to-right pass: placeholders are numbered in order of appearance.
_ANY_HEX = re.compile(f"{_PATH_HEX.pattern}|{_HEX.pattern}")
_EPOCH = re.compile(r"\b(?:1[5-9]|2[0-4])\d{8}\b")
_HMS = re.compile(r"\b\d{1,3}:\d{2}:\d{2}\b")
#: A placeholder's fixed-width column padding (squeue -O pads each field to 20): the spaces
#: after it depend on the length of the id it replaced, which differs run by run.
_PADDED = re.compile(r"(<(?:job\d+|other-job)>) {2,}")
_LISTED_ID = re.compile(r"(?i)\bJobId=(\d+)\b|^(\d+)(?=[|.;])")
_ID_VALUE = re.compile(r"\d+(?:\.\d+)?")  # a job id, not Slurm's "cluster": "stacks"
_EPOCH_FIRST, _EPOCH_END = 1_500_000_000, 2_500_000_000  # 2017 to 2049, as seconds


class Normaliser:
    """One recording's placeholders: the same value gets the same name throughout."""

    def __init__(self, job_ids: Sequence[str], roots: Mapping[str, str]) -> None:
        self.job_ids = list(job_ids)
        self.roots = sorted(roots.items(), key=lambda kv: -len(kv[0]))
        self._hex: dict[str, str] = {}
        self._id_patterns = [(self._pattern(j), f"<job{i}>")
                             for i, j in enumerate(self.job_ids, 1)]
        self._line_patterns = [(self._line_pattern(j), f"<job{i}>")
                               for i, j in enumerate(self.job_ids, 1)]
        # HTCondor: a job is cluster.proc, and one submit here is one cluster, so a cluster
        # number where a cluster stands is named after its job.
        self._clusters: dict[str, str] = {}
        for i, j in enumerate(self.job_ids, 1):
            if "." in j:
                self._clusters.setdefault(j.split(".")[0], f"<job{i}>")
        self._id_patterns += [
            (re.compile(rf"(?i)(?<=clusterid)(\s*==?\s*){re.escape(c)}\b"), rf"\g<1>{name}")
            for c, name in self._clusters.items()]
        # condor_submit's "1 job(s) submitted to cluster 17." (and, from 25.x, "run:
        # condor_watch_q -clusters 17") name the cluster in text.
        self._id_patterns += [
            (re.compile(rf"(?:(?<=\bcluster )|(?<=-clusters )){re.escape(c)}\b"), name)
            for c, name in self._clusters.items()]

    @staticmethod
    def _pattern(job_id: str) -> re.Pattern[str]:
        j = re.escape(job_id)
        return re.compile(
            rf"(?im)(?<=jobid=){j}\b|(?<=\bjob ){j}\b"
            rf"|(?<=\bjob id ){j}\b|(?<=[-_]){j}(?=\.(?:out|err|log)\b)"
            rf"|(?<![\w.]){j}(?=\.(?:batch|extern)\b)"
            + (rf"|(?<![\w.]){j}(?![\w.])" if "." in job_id else ""))

    @staticmethod
    def _line_pattern(job_id: str) -> re.Pattern[str]:
        """A line of command output that starts with the id (``sbatch --parsable``, ``sacct
        -P``, ``sacct --delimiter=,``); only in output (text with a newline): "24" alone may
        be a version's major."""
        return re.compile(rf"(?m)^{re.escape(job_id)}(?=[|;,\s]|$)")

    def __call__(self, value: Any, key: str = "") -> Any:
        if isinstance(value, Mapping):
            return {self.text(str(k)): self(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            kept = [self(v) for v in value if not self._foreign(v)]
            if kept and all(map(_job_order, kept)):
                return sorted(kept, key=_job_order)
            if kept and all(isinstance(v, Mapping) and isinstance(v.get("type"), str)
                            for v in kept):
                return sorted(kept, key=lambda v: str(v["type"]))  # conditions
            return kept
        if isinstance(value, bool) or value is None or isinstance(value, float):
            return value
        if key.lower() in COUNTER_KEYS:
            return "<counter>"
        if isinstance(value, int):
            return self._number(value, key)
        if not key and value in self.job_ids and _ID_VALUE.fullmatch(value):
            # a word of a command line (`scancel 17`); named objects keep their names
            return f"<job{self.job_ids.index(value) + 1}>"
        if not key and "," in value and self._id_list(value):
            # a list of the scenario's jobs in one word (`squeue -j 17,18`, `sacct -j 17,`)
            return ",".join(f"<job{self.job_ids.index(v) + 1}>" if v else ""
                            for v in value.split(","))
        parsed = _json(str(value))
        if parsed is not None:
            return {"json": self(parsed)}
        return self.text(str(value))

    def _id_list(self, value: str) -> bool:
        parts = value.split(",")
        return any(parts) and all(not p or (p in self.job_ids and _ID_VALUE.fullmatch(p))
                                  for p in parts)

    def _number(self, value: int, key: str) -> Any:
        if key.lower() in ID_KEYS:
            name = str(value)
            if name in self.job_ids:
                return f"<job{self.job_ids.index(name) + 1}>"
            return self._clusters.get(name, "<other-job>")
        if _EPOCH_FIRST <= value < _EPOCH_END:
            return "<epoch>"
        return value

    def _foreign(self, item: Any) -> bool:
        """A listed job that is not the scenario's (a shared stack's queue holds others)."""
        if isinstance(item, Mapping):
            for key, value in item.items():
                if str(key).lower() in ID_KEYS and _ID_VALUE.fullmatch(str(value)):
                    own = {j.split(".")[0] for j in self.job_ids}
                    return str(value).split(".")[0] not in own
        return False

    def text(self, text: str) -> str:
        for root, name in self.roots:
            text = text.replace(root, name)
        text = _RUN_DIR.sub("<run_dir>", text)
        text = _UUID.sub(self._uid_name, text)
        if "\n" in text:
            text = "\n".join(line for line in text.split("\n") if not self._foreign_line(line))
        text = _TIME.sub("<time>", text)
        text = _SINFUL.sub("<sinful>", text)
        text = _IP.sub("<ip>", text)
        for pattern, name in self._id_patterns:
            text = pattern.sub(name, text)
        if "\n" in text:
            for pattern, name in self._line_patterns:
                text = pattern.sub(name, text)
        text = _ANY_HEX.sub(self._hex_name, text)
        text = _EPOCH.sub("<epoch>", text)
        text = _PADDED.sub(r"\1  ", text)
        return _HMS.sub("<hms>", text)

    def _foreign_line(self, line: str) -> bool:
        match = _LISTED_ID.search(line)
        if match is None:
            return False
        listed = match.group(1) or match.group(2)
        return listed not in {j.split(".")[0] for j in self.job_ids}

    def _uid_name(self, match: re.Match[str]) -> str:
        return self._hex.setdefault(match.group(0), f"<uid{len(self._hex) + 1}>")

    def _hex_name(self, match: re.Match[str]) -> str:
        return self._hex.setdefault(match.group(0), f"<hex{len(self._hex) + 1}>")


def _json(text: str) -> Any:
    """``text`` parsed, when it is a JSON object or array (``squeue --json``), else None."""
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def _job_order(item: Any) -> str:
    """A normalised job's place in a listing (``<job2>`` before ``<job10>``), "" if the item
    is no job."""
    if isinstance(item, Mapping):
        for key, value in item.items():
            if str(key).lower() in ID_KEYS and str(value).startswith("<job"):
                return f"{len(str(value)):03d}{value}"
    return ""
