"""Resource-side staging for HTCondor, with HTCondor's own S3 transfer: a remote input is an
``s3://`` URL in ``transfer_input_files`` (the execute node's curl plugin downloads it, signed
by the shadow), a remote output a ``transfer_output_remaps`` entry to an ``s3://`` URL (the
execute node uploads it with a PUT the shadow signed). The key pair is named by path
(``aws_access_key_id_file``, ``aws_secret_access_key_file``): files on the access point that
the shadow reads as the job's owner; the client writes only their paths.

A failed transfer holds the job (HoldReasonCode 13 for inputs, 12 for outputs) with the
plugin's own words.
"""

from __future__ import annotations

import shlex

from pytest_stacks.backends import remote_files
from pytest_stacks.contract import JobSpec

#: The first access points whose shadow refuses the starter's request to sign an ``s3://``
#: output URL: 25.10 made an empty file name an illegal sandbox path (HTCONDOR-3499), and the
#: starter asks for a signature under an empty name. The upload itself still happens; the job
#: is then held ("Attempt to write to illegal sandbox path: ", HoldReasonCode 12, subcode 1).
#: Seen on 25.14.1 (Debian sid); 23.9.6 uploads and completes; the 25.0 LTS line predates it.
UNSIGNABLE_OUTPUTS_SINCE = (25, 10, 0)


def output_refusal(spec: JobSpec, daemon: tuple[int, ...]) -> str:
    """Why this access point cannot take the job's remote outputs ("" where it can): a job
    it would hold after its upload is refused at submit, with the reason, instead."""
    if not spec.remote_outputs or daemon < UNSIGNABLE_OUTPUTS_SINCE:
        return ""
    version = ".".join(map(str, daemon))
    return (f"refused at submit: remote outputs ({', '.join(sorted(spec.remote_outputs))}) "
            f"cannot be staged by an HTCondor {version} access point: since 25.10 its shadow "
            "refuses the starter's request to sign an s3:// output URL ('Attempt to write to "
            "illegal sandbox path'), and holds the job after the upload (HTCONDOR-3499); "
            "stage the output from the job itself, or use a 25.0 LTS or pre-25.10 access point")


def check(spec: JobSpec, local_names: set[str]) -> None:
    """ValueError for what HTCondor cannot stage as asked: a downloaded file lands under the
    last part of its URL, so two inputs with one such name, one that is also a local input,
    or one that is another remote input's name cannot all arrive intact."""
    remote_files.check(spec)
    landing = {name: remote_files.key_name(url) for name, url in spec.remote_inputs.items()}
    landed = list(landing.values())
    clashes = {n for n in landed if landed.count(n) > 1 or n in local_names}
    # A rename onto a file another input landed as would overwrite it before it is moved.
    clashes |= {name for name, at in landing.items()
                if at != name and any(other == name for o, other in landing.items() if o != name)}
    if clashes:
        raise ValueError(f"remote inputs would land under the same name: {sorted(clashes)} "
                         "(HTCondor names a downloaded file after its URL's last part)")


def submit_commands(spec: JobSpec) -> dict[str, str]:
    """The credentials' paths and the output remaps; {} for a job without remote files."""
    if not (spec.remote_inputs or spec.remote_outputs):
        return {}
    credentials = spec.credentials.rstrip("/")
    commands = {"aws_access_key_id_file": f"{credentials}/access_key",
                "aws_secret_access_key_file": f"{credentials}/secret_key"}
    if spec.remote_outputs:
        commands["transfer_output_remaps"] = '"' + "; ".join(
            f"{name} = {url}" for name, url in spec.remote_outputs.items()) + '"'
    return commands


def wrapped(spec: JobSpec, body: str) -> str:
    """The job's body as the executable runs it: each downloaded input renamed to the name the
    job asked for first, the body in a subshell (its ``exit`` ends only the body), and the
    downloaded inputs removed after it, so HTCondor's output transfer (every new file, where
    the job names none) never carries them back to the client."""
    if not spec.remote_inputs:
        return body
    lines = [f"mv -f -- {shlex.quote(remote_files.key_name(url))} {shlex.quote(name)}"
             for name, url in spec.remote_inputs.items()
             if remote_files.key_name(url) != name]
    names = " ".join(shlex.quote(name) for name in spec.remote_inputs)
    return "\n".join([*lines, "(", ":", body.rstrip("\n"), ")", "__status=$?",
                      f"rm -f -- {names}", "exit $__status"])
