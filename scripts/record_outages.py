#!/usr/bin/env python3
"""Record what a real stack's daemons and tools say when their service is not there, and when
a request is refused on the healthy stack: the test data the drivers' declared words
(``pytest_stacks/backends/*/outages.py``) are checked against (tests/unit/test_outages.py).

    .venv/bin/python scripts/record_outages.py slurm-24.11 stop-slurmctld
    .venv/bin/python scripts/record_outages.py htcondor-25 network

One pytest session per fault, as a user runs one (the plugin brings the stack up and tears it
down: nothing is left): on the healthy stack, requests it refuses (expected: not "gone");
then the fault (``network``: the container cut off its network; ``stop-NAME``: that daemon
frozen with SIGSTOP; otherwise the process of that name SIGKILLed inside the live
container); then the same calls again (expected: "gone"; "silent" for one that ended at its
deadline with nothing said: the stack's health, not its words, decides those).
Each answer is written to tests/data/outages/STACK--FAULT.json with its provenance: the stack,
the daemon's version as observed, the fault, each call, when, and the commit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "outages"

COMMON = r'''
import json, os, subprocess, time
from pytest_stacks.contract import JobSpec

SAID = []
#: The daemon signalled by its name (/proc: the images have no pkill).
SIGNAL = ('found=; for p in /proc/[0-9]*; do if [ "$(cat "$p/comm" 2>/dev/null)" = "%(name)s" ]; '
          'then kill -%(sig)s "${p#/proc/}" && found=1; fi; done; [ -n "$found" ]')

def said(call, meaning, fn):
    try:
        answer = fn()
    except Exception as exc:
        answer = f"{type(exc).__name__}: {exc}"
    if hasattr(answer, "returncode"):
        if answer.returncode == 124:  # ended at its deadline (timeout(1)): no words to read
            meaning = "silent"
        answer = (answer.stderr or answer.stdout).strip() + f" (exit {answer.returncode})"
    SAID.append({"call": call, "expected": meaning, "said": str(answer)[-4000:]})

def fault(stack_info, which):
    container = stack_info["container"]
    if which == "network":
        mode = subprocess.run(["docker", "inspect", "-f", "{{.HostConfig.NetworkMode}}",
                               container], capture_output=True, text=True, check=True)
        argv = ["docker", "network", "disconnect", mode.stdout.strip(), container]
    elif which.startswith("stop-"):  # the daemon frozen (SIGSTOP): alive, never answering
        name = which[len("stop-"):]
        argv = ["docker", "exec", container, "sh", "-c", SIGNAL % {"sig": "STOP", "name": name}]
    else:
        argv = ["docker", "exec", container, "sh", "-c", SIGNAL % {"sig": "KILL", "name": which}]
    subprocess.run(argv, check=True, capture_output=True)

def save(stack, stack_info, which):
    record = {"stack": stack.name, "backend": stack.backend,
              "observed_version": stack_info["observed_version"],
              "client_version": stack_info.get("client_version", ""),
              "fault": which, "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "commit": os.environ["OUTAGE_COMMIT"], "made_by": "scripts/record_outages.py",
              "calls": SAID}
    with open(os.environ["OUTAGE_FILE"], "w") as out:
        json.dump(record, out, indent=2)
        out.write("\n")
'''

SLURM = COMMON + r'''
def test_record(backend, stack, stack_info):
    run = backend.raw.transport.run
    for meaning in ("refused", "gone"):
        if meaning == "gone":
            fault(stack_info, os.environ["OUTAGE_FAULT"])
            time.sleep(2)
        said("sbatch --partition=nope", "refused" if meaning == "refused" else "gone",
             lambda: run(["sbatch", "--partition=nope", "--wrap", "true"], user="submitter",
                         timeout=120))
        if meaning == "gone":
            said("sbatch --wrap true", "gone",
                 lambda: run(["sbatch", "--wrap", "true"], user="submitter", timeout=120))
            said("squeue", "gone", lambda: run(["squeue"], user="submitter", timeout=120))
            said("driver submit", "gone",
                 lambda: backend.submit([JobSpec(script="true\n")])[0].error)
        else:
            said("sbatch --no-such-option", "refused",
                 lambda: run(["sbatch", "--no-such-option", "--wrap", "true"],
                             user="submitter", timeout=60))
    save(stack, stack_info, os.environ["OUTAGE_FAULT"])
'''

HTCONDOR = COMMON + r'''
def test_record(backend, stack, stack_info):
    schedd = backend.raw.schedd
    said("bindings query, bad constraint", "refused",
         lambda: schedd.query("this is ( not a constraint"))
    fault(stack_info, os.environ["OUTAGE_FAULT"])
    time.sleep(1)
    said("bindings query", "gone", lambda: schedd.query("true", ["ClusterId"]))
    said("driver submit", "gone",
         lambda: backend.submit([JobSpec(script="true\n")])[0].error)
    said("condor_q in the container", "gone", lambda: subprocess.run(
        ["docker", "exec", stack_info["container"], "timeout", "30", "condor_q"],
        capture_output=True, text=True, timeout=120))
    save(stack, stack_info, os.environ["OUTAGE_FAULT"])
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stack")
    parser.add_argument("fault", help="network; stop-DAEMON (SIGSTOP, e.g. stop-slurmctld); "
                                      "or the daemon to SIGKILL (condor_schedd)")
    args = parser.parse_args()
    body = SLURM if args.stack.startswith("slurm") else HTCONDOR
    target = OUT / f"{args.stack}--{args.fault}.json"
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as work:
        project = Path(work)
        (project / "pytest.ini").write_text("[pytest]\n")
        (project / "test_record.py").write_text(body)
        env = {**os.environ, "OUTAGE_FILE": str(target), "OUTAGE_FAULT": args.fault,
               "OUTAGE_COMMIT": commit}
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-p", "no:randomly", "-x", f"--stack={args.stack}",
                               f"--stack-manifest={REPO / 'manifest.yaml'}",
                               "--stack-unproven=warn", "--stack-results=", str(project)],
                              cwd=project, env=env, check=False)
    if done.returncode != 0 or not target.exists():
        print(f"recording failed (pytest exit {done.returncode})", file=sys.stderr)
        return 1
    print(json.dumps(json.loads(target.read_text()), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
