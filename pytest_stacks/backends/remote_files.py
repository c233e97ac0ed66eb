"""What every driver checks of a job's remote files (``JobSpec.remote_inputs`` and
``remote_outputs``) before it writes them into a batch script or a submit description: the
URL form all of them stage (path-style ``s3://HOST[:PORT]/BUCKET/KEY``, the form HTCondor's own
S3 transfer reads), plain names in the working directory that clash with nothing, and
credentials by reference (a path, never the secret)."""

from __future__ import annotations

import re

from pytest_stacks.contract import JobSpec

#: A dotted host (HTCondor takes a dotless one for an AWS bucket name), an S3 bucket name,
#: a key of characters no shell or submit file has to quote.
URL = re.compile(r"^s3://(?P<host>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?::\d+)?)/"
                 r"(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(?P<key>[A-Za-z0-9._~/-]+)$")
_NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]*$")  # no leading '-': curl's stdin
_CREDENTIALS = re.compile(r"^(/[A-Za-z0-9._-]+)+/?$")


def _url_problem(url: str) -> str:
    match = URL.match(url)
    if match is None:
        return "is not s3://HOST[:PORT]/BUCKET/KEY with a dotted HOST"
    if any(part in ("", ".", "..") or part.startswith("~")
           for part in match["key"].split("/")):
        return "has an empty, '.', '..' or '~' part in its key"
    return ""


def check(spec: JobSpec) -> None:
    """ValueError naming what cannot be staged."""
    for name, url in {**spec.remote_inputs, **spec.remote_outputs}.items():
        if not _NAME.match(name) or name in (".", ".."):
            raise ValueError(f"remote file {name!r}: a plain name in the working directory "
                             "(letters, digits, '.', '_', '-'; not first '-')")
        if problem := _url_problem(url):
            raise ValueError(f"remote file {name!r}: {url!r} {problem}")
    clashes = (set(spec.remote_inputs) & set(spec.inputs)) | (
        set(spec.remote_outputs) & set(spec.outputs))
    if clashes:
        raise ValueError(f"{sorted(clashes)}: both a remote and a local file of the job")
    if (spec.remote_inputs or spec.remote_outputs) and (
            not _CREDENTIALS.match(spec.credentials)
            or {".", ".."} & set(spec.credentials.split("/"))):
        raise ValueError("remote files need credentials: the absolute path of the directory "
                         "on the resource that holds access_key and secret_key (letters, "
                         f"digits, '.', '_', '-' and '/'; no '.' or '..' part), got "
                         f"{spec.credentials!r}")


def key_name(url: str) -> str:
    """The last part of the URL's key: the name HTCondor gives a downloaded file."""
    return url.rsplit("/", 1)[-1]
