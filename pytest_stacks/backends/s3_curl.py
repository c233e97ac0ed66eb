"""The shell a node runs to move a job's remote files: one bash function that makes a single
SigV4-signed, path-style S3 request with the node's own curl, used by every driver that stages
through what the job runs on its node (Slurm's batch script, Kubernetes' staging containers).

The key pair reaches curl through a file descriptor, never a command line; a download lands
under a temporary name first, so a payload never sees a partial file; an upload sends only a
regular file (never a link, which could name the keys); on failure curl's message and the
store's own answer (its S3 error document) go to stderr.
"""

from __future__ import annotations

import shlex

#: One request: s3 get|put URL FILE. The payload hash header: curl before 8 (bookworm's 7.88)
#: leaves it out of a SigV4 request, and S3 servers require it. A store that accepts the
#: connection and never answers fails the request in minutes, not at the job's walltime.
_HELPER = """__pytest_stacks_s3() {
    local creds=CREDS url="https://${2#s3://}" answer how
    answer=$(mktemp) || return 1
    if [ "$1" = put ] && { [ -L "$3" ] || [ ! -f "$3" ]; }; then
        echo "$3: not a regular file: nothing sent" >&2; rm -f "$answer"; return 1
    fi
    if [ "$1" = get ]; then how=(-o "$3.part"); else how=(-T "$3" -o "$answer"); fi
    if curl -sS --fail-with-body --retry 2 --connect-timeout 20 --max-time 600 \\
        --aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \\
        "${how[@]}" -K <(printf 'user = "%s:%s"\\n' "$(cat "$creds/access_key")" \\
        "$(cat "$creds/secret_key")") "$url"; then
        rm -f "$answer"
        if [ "$1" = get ]; then mv -f -- "$3.part" "$3"; fi
        return 0
    fi
    cat "$answer" "$3.part" >&2 2>/dev/null; echo >&2
    rm -f "$answer" "$3.part"
    return 1
}"""


def helper(credentials: str) -> str:
    """The function, reading the key pair from ``credentials`` (a directory on the node)."""
    return _HELPER.replace("CREDS", shlex.quote(credentials.rstrip("/")))


def download(name: str, url: str, on_failure: str) -> str:
    """Fetch ``url`` into ``name`` in the current directory, or run ``on_failure``."""
    return (f"__pytest_stacks_s3 get {url} {name} || "
            f"{{ echo 'pytest-stacks: staging {name} in from {url} failed' >&2; {on_failure}; }}")


def upload(name: str, url: str, on_failure: str) -> str:
    """Send ``name`` from the current directory to ``url``, or run ``on_failure``."""
    return (f"__pytest_stacks_s3 put {url} {name} || "
            f"{{ echo 'pytest-stacks: staging {name} out to {url} failed' >&2; {on_failure}; }}")
