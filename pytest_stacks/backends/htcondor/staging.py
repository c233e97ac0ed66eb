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

from pytest_stacks.backends import remote_files
from pytest_stacks.contract import JobSpec


def check(spec: JobSpec, local_names: set[str]) -> None:
    """ValueError for what HTCondor cannot stage as asked: a downloaded file lands under the
    last part of its URL, so two inputs with one such name, or one that is also a local
    input, cannot both arrive."""
    remote_files.check(spec)
    landing = [remote_files.key_name(url) for url in spec.remote_inputs.values()]
    clashes = {n for n in landing if landing.count(n) > 1 or n in local_names}
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


def renames(spec: JobSpec) -> list[str]:
    """Shell lines that give each downloaded input the name the job asked for."""
    lines = []
    for name, url in spec.remote_inputs.items():
        landed = remote_files.key_name(url)
        if landed != name:
            lines.append(f"mv -f -- {landed} {name}")
    return lines
