#!/usr/bin/env python3
"""Verify a running stacks/htcondor pool from the host with the htcondor2 bindings.

Usage:
    python verify_stack.py PORT TOKEN_DIR [--workdir DIR] [--schedd-name htcondor]

PORT is the published CONDOR_PORT (127.0.0.1:PORT), TOKEN_DIR a private (0700) directory
holding a token (0600) minted inside the container with
    condor_token_create -identity submitter@pytest-stacks.test
Needs the PyPI `htcondor` package (module htcondor2) in the running interpreter.
Prints what it observes; exits non-zero if an expectation fails.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

OLD_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (CompletionDate =?= UNDEFINED || CompletionDate == 0 || "
    "((time() - CompletionDate) < 864000))"
)
STATUS = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
          6: "TransferringOutput", 7: "Suspended"}
T0 = time.monotonic()
FAILURES = []


def log(*args):
    print(f"[{time.monotonic() - T0:7.2f}s]", *args, flush=True)


def check(cond, what):
    log(("OK   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("port", type=int)
    p.add_argument("token_dir")
    p.add_argument("--workdir", help="where job directories go (default: a temp dir)")
    p.add_argument("--schedd-name", default="htcondor")
    return p.parse_args()


def configure_client(port, token_dir):
    # Must happen before `import htcondor2`: the bindings read config at import.
    os.environ["_CONDOR_COLLECTOR_HOST"] = f"127.0.0.1:{port}"
    os.environ["_CONDOR_SEC_TOKEN_DIRECTORY"] = os.path.abspath(token_dir)
    os.environ["_CONDOR_SEC_CLIENT_AUTHENTICATION_METHODS"] = "IDTOKENS"
    # No FS/KERBEROS etc. attempts against a remote daemon; keep the client quiet.
    os.environ.setdefault("_CONDOR_TOOL_DEBUG", "D_ALWAYS")


def main():
    args = parse_args()
    configure_client(args.port, args.token_dir)
    import htcondor2
    from htcondor2 import DaemonType, JobAction, Submit

    base = args.workdir or tempfile.mkdtemp(prefix="htc-verify-")
    os.makedirs(base, exist_ok=True)
    log("workdir", base)

    # ---- 7 (client side) -------------------------------------------------------
    log("htcondor2.version():", htcondor2.version())

    # ---- 1: locate + query -----------------------------------------------------
    coll = htcondor2.Collector()
    try:
        coll.locate(DaemonType.Schedd)
        log("Collector().locate(DaemonType.Schedd) without a name: returned an ad")
    except Exception as e:  # noqa: BLE001
        log("Collector().locate(DaemonType.Schedd) without a name raises:",
            type(e).__name__, e)
    all_ads = coll.locateAll(DaemonType.Schedd)
    log("locateAll(Schedd) names:", [a.get("Name") for a in all_ads])
    ad = coll.locate(DaemonType.Schedd, args.schedd_name)
    log("schedd MyAddress:", ad["MyAddress"])
    log("schedd CondorVersion:", ad["CondorVersion"])
    check("23.9.6" in ad["CondorVersion"], "schedd reports 23.9.6")
    schedd = htcondor2.Schedd(ad)
    try:
        pong = htcondor2.ping(ad, "WRITE")
        log("ping(WRITE): AuthenticatedIdentity =", pong.get("AuthenticatedIdentity"),
            "AuthMethods =", pong.get("AuthMethods"), "MyRemoteUserName =",
            pong.get("MyRemoteUserName"))
    except Exception as e:  # noqa: BLE001
        log("ping(WRITE) raised", type(e).__name__, e)
    log("query(True) ->", len(schedd.query("true", ["ClusterId", "ProcId"])), "jobs")

    def job_ads(cluster, proj=("ProcId", "JobStatus", "ExitCode", "LeaveJobInQueue",
                                "StageOutFinish", "CompletionDate", "HoldReason",
                                "JobCurrentStartExecutingDate")):
        return schedd.query(f"ClusterId == {cluster}", list(proj))

    def wait_for(cluster, pred, timeout=120, step=0.5, what="condition"):
        t = time.monotonic()
        while time.monotonic() - t < timeout:
            ads = job_ads(cluster)
            if pred(ads):
                return ads, time.monotonic() - t
            time.sleep(step)
        raise TimeoutError(f"cluster {cluster}: {what} not reached in {timeout}s: {ads}")

    def all_status(n, status):
        return lambda ads: len(ads) == n and all(a.get("JobStatus") == status for a in ads)

    def make_jobdir(name, script):
        d = os.path.join(base, name)
        os.makedirs(d)
        exe = os.path.join(d, "job.sh")
        with open(exe, "w") as f:
            f.write(script)
        os.chmod(exe, 0o755)
        with open(os.path.join(d, "input.txt"), "w") as f:
            f.write("hello pytest-stacks\n")
        return d, exe

    def submit(desc, count=1):
        t = time.monotonic()
        res = schedd.submit(Submit(desc), spool=True, count=count)
        cl = res.cluster()
        ads = job_ads(cl, ("ProcId", "JobStatus", "HoldReasonCode", "HoldReason"))
        log(f"cluster {cl} submitted (spool=True):",
            [(a["ProcId"], STATUS.get(a["JobStatus"]), a.get("HoldReasonCode"),
              a.get("HoldReason")) for a in ads])
        schedd.spool(res)
        log(f"cluster {cl} spooled in {time.monotonic() - t:.2f}s")
        return cl

    script = ("#!/bin/sh\n"
              "echo \"proc $1 on $(hostname) as $(id -un)\"\n"
              "tr a-z A-Z < input.txt > output.$1.txt\n")
    common = {
        "transfer_input_files": "input.txt",
        "should_transfer_files": "YES",
        "when_to_transfer_output": "ON_EXIT",
        "output": "job.$(ProcId).out",
        "error": "job.$(ProcId).err",
        "request_cpus": "1",
        "request_memory": "64MB",
    }

    # ---- note: executable path vs initialdir -----------------------------------
    d_rel, _ = make_jobdir("relative", script)
    other = os.path.join(base, "elsewhere")
    os.makedirs(other)
    cwd = os.getcwd()
    os.chdir(other)
    try:
        res = schedd.submit(Submit({**common, "executable": "job.sh", "initialdir": d_rel,
                                    "arguments": "0"}), spool=True)
        log("relative executable 'job.sh' with initialdir set, cwd elsewhere: submit ok,"
            " cluster", res.cluster())
        try:
            schedd.spool(res)
            log("  ... spool ok (unexpected)")
        except Exception as e:  # noqa: BLE001
            log("  ... spool raised", type(e).__name__, str(e).strip()[:300])
        schedd.act(JobAction.Remove, f"ClusterId == {res.cluster()}")
    except Exception as e:  # noqa: BLE001
        log("relative executable 'job.sh' with initialdir set, cwd elsewhere: submit raised",
            type(e).__name__, str(e).strip()[:300])
    finally:
        os.chdir(cwd)

    # ---- 2: spooled submit, N=2, retrieve into initialdir ----------------------
    d2, exe2 = make_jobdir("spooled", script)
    t_submit = time.monotonic()
    c2 = submit({**common, "executable": exe2, "initialdir": d2,
                 "arguments": "$(ProcId)"}, count=2)
    ads, _ = wait_for(c2, all_status(2, 4), what="Completed")
    turnaround = time.monotonic() - t_submit
    log(f"cluster {c2}: both procs Completed, turnaround {turnaround:.1f}s (submit->status 4)")
    lji = ads[0].get("LeaveJobInQueue")
    log("LeaveJobInQueue written by this client:", repr(str(lji)))
    log("queue ad before retrieve:", {k: ads[0].get(k) for k in
                                       ("JobStatus", "ExitCode", "StageOutFinish",
                                        "CompletionDate")})
    log("files in initialdir before retrieve:", sorted(os.listdir(d2)))
    t = time.monotonic()
    schedd.retrieve(f"ClusterId == {c2}")
    log(f"retrieve #1 took {time.monotonic() - t:.2f}s; files:", sorted(os.listdir(d2)))
    for p in (0, 1):
        with open(os.path.join(d2, f"output.{p}.txt"), "rb") as f:
            got = f.read()
        check(got == b"HELLO PYTEST-STACKS\n", f"output.{p}.txt bytes = {got!r}")
        with open(os.path.join(d2, f"job.{p}.out"), "rb") as f:
            log(f"job.{p}.out = {f.read()!r}")

    # ---- 4a: one-shot (default LeaveJobInQueue of this client) -----------------
    t = time.monotonic()
    after = job_ads(c2, ("ProcId", "JobStatus", "StageOutFinish", "EnteredCurrentStatus"))
    log("queue right after retrieve #1:", [dict(a) for a in after])
    gone_after = None
    while time.monotonic() - t < 90:
        if not job_ads(c2):
            gone_after = time.monotonic() - t
            break
        time.sleep(0.25)
    log("cluster left the queue after retrieve #1:",
        f"{gone_after:.2f}s" if gone_after is not None else "NOT within 90s")
    check(gone_after is not None, "one-shot: job left the queue after first retrieve")
    for p in (0, 1):
        for n in (f"output.{p}.txt", f"job.{p}.out", f"job.{p}.err"):
            os.remove(os.path.join(d2, n))
    log("removed outputs; files now:", sorted(os.listdir(d2)))
    try:
        schedd.retrieve(f"ClusterId == {c2}")
        log("retrieve #2 (constraint) raised nothing; files:", sorted(os.listdir(d2)))
    except Exception as e:  # noqa: BLE001
        log("retrieve #2 (constraint) raised", type(e).__name__, str(e).strip()[:300],
            "; files:", sorted(os.listdir(d2)))
    try:
        schedd.retrieve([f"{c2}.0"])
        log("retrieve #2 (job id list) raised nothing; files:", sorted(os.listdir(d2)))
    except Exception as e:  # noqa: BLE001
        log("retrieve #2 (job id list) raised", type(e).__name__, str(e).strip()[:300],
            "; files:", sorted(os.listdir(d2)))
    hist = schedd.history(f"ClusterId == {c2}",
                          ["ClusterId", "ProcId", "JobStatus", "ExitCode", "StageOutFinish",
                           "LeaveJobInQueue"])
    log("history for the retrieved cluster:", [dict(h) for h in hist])

    # ---- 4b: old 10-day leave_in_queue -> repeatable retrieval -----------------
    d4, exe4 = make_jobdir("leave_in_queue", script)
    c4 = submit({**common, "executable": exe4, "initialdir": d4, "arguments": "0",
                 "leave_in_queue": OLD_LEAVE_IN_QUEUE})
    ads, _ = wait_for(c4, all_status(1, 4), what="Completed")
    log("LeaveJobInQueue with leave_in_queue set:", repr(str(ads[0].get("LeaveJobInQueue"))))
    schedd.retrieve(f"ClusterId == {c4}")
    first = {n: open(os.path.join(d4, n), "rb").read()
             for n in ("output.0.txt", "job.0.out")}
    log("retrieve #1 files:", sorted(os.listdir(d4)))
    for n in first:
        os.remove(os.path.join(d4, n))
    time.sleep(12)  # > 2 * PERIODIC_EXPR_INTERVAL
    still = job_ads(c4, ("JobStatus", "StageOutFinish"))
    log("12s after retrieve #1, queue:", [dict(a) for a in still])
    check(len(still) == 1, "leave_in_queue: job still in queue after retrieve #1")
    schedd.retrieve(f"ClusterId == {c4}")
    second = {n: open(os.path.join(d4, n), "rb").read()
              for n in first if os.path.exists(os.path.join(d4, n))}
    check(second == first, f"leave_in_queue: retrieve #2 returned the same files {second}")
    try:
        r = schedd.act(JobAction.Remove, f"ClusterId == {c4}")
        log("act(Remove) on the kept completed job:", dict(r))
    except Exception as e:  # noqa: BLE001
        log("act(Remove) on the kept completed job raised", type(e).__name__, e)
    time.sleep(7)
    log("kept job after Remove: queue", [dict(a) for a in job_ads(c4, ("JobStatus",))],
        "history", [dict(h) for h in schedd.history(f"ClusterId == {c4}",
                                                     ["JobStatus", "ExitCode"])])

    # ---- 3: exit 3 ------------------------------------------------------------
    d_exit3, exe_exit3 = make_jobdir("exit3", "#!/bin/sh\necho failing\nexit 3\n")
    c_exit3 = submit({**common, "executable": exe_exit3, "initialdir": d_exit3})
    proj_exit3 = ("JobStatus", "ExitCode", "ExitBySignal", "ExitStatus", "ExitSignal",
             "ExitReason", "CompletionDate", "LeaveJobInQueue")
    ads, _ = wait_for(c_exit3, all_status(1, 4), what="Completed")
    q_exit3 = job_ads(c_exit3, proj_exit3)[0]
    log("exit 3, queue ad while Completed:", dict(q_exit3))
    check(q_exit3.get("ExitCode") == 3 and q_exit3.get("JobStatus") == 4,
          "exit 3: queue ad JobStatus 4, ExitCode 3")
    schedd.retrieve(f"ClusterId == {c_exit3}")
    t = time.monotonic()
    while job_ads(c_exit3) and time.monotonic() - t < 60:
        time.sleep(0.25)
    h_exit3 = schedd.history(f"ClusterId == {c_exit3}", list(proj_exit3))
    log(f"exit 3, gone from queue {time.monotonic() - t:.2f}s after retrieve; history:",
        [dict(h) for h in h_exit3])
    check(len(h_exit3) == 1 and h_exit3[0].get("ExitCode") == 3, "exit 3: history ExitCode 3")

    # ---- 5: remove a running sleep 300 -----------------------------------------
    d5, exe5 = make_jobdir("remove", "#!/bin/sh\nsleep 300\n")
    c5 = submit({**common, "executable": exe5, "initialdir": d5})
    _, waited = wait_for(c5, all_status(1, 2), what="Running")
    log(f"sleep job JobStatus 2 after {waited:.1f}s")
    # JobStatus 2 is set when the shadow starts, before input transfer; wait until the
    # executable really runs (removing during transfer makes the 23.9 starter log an
    # assertion at exit, harmless but noisy).
    _, waited = wait_for(c5, lambda ads: ads and ads[0].get("JobCurrentStartExecutingDate")
                         is not None, what="executing")
    log(f"... JobCurrentStartExecutingDate set {waited:.1f}s later")
    # 25.14.1 bindings: a plain-string reason is dropped (RemoveReason stays unset);
    # only a (reason, code) tuple or no reason at all records RemoveReason.
    r = schedd.act(JobAction.Remove, f"ClusterId == {c5}",
                   reason=("pytest-stacks verify", 0))
    log("act(Remove) result:", dict(r))
    proj5 = ("JobStatus", "RemoveReason", "ExitCode", "ExitBySignal", "ExitSignal",
             "CompletionDate", "EnteredCurrentStatus", "JobCurrentStartDate")
    log("queue right after act(Remove):", [dict(a) for a in job_ads(c5, proj5)])
    t = time.monotonic()
    while job_ads(c5) and time.monotonic() - t < 60:
        time.sleep(0.25)
    log(f"removed job left the queue after {time.monotonic() - t:.2f}s")
    h5 = schedd.history(f"ClusterId == {c5}", list(proj5))
    log("history of removed job:", [dict(h) for h in h5])
    check(len(h5) == 1 and h5[0].get("JobStatus") == 3, "removed job: history JobStatus 3")
    check(len(h5) == 1 and str(h5[0].get("RemoveReason", "")).startswith("pytest-stacks verify"),
          "removed job: RemoveReason recorded")

    # ---- 6: history and unknown ids -------------------------------------------
    gone = schedd.history(f"ClusterId == {c2} || ClusterId == {c_exit3}",
                          ["ClusterId", "ProcId", "JobStatus", "ExitCode"])
    log("history(c2 || c_exit3):", sorted((h["ClusterId"], h["ProcId"], h["JobStatus"],
                                      h.get("ExitCode")) for h in gone))
    never = 987654
    log(f"never-issued cluster {never}: query ->", schedd.query(f"ClusterId == {never}"),
        " history ->", schedd.history(f"ClusterId == {never}", ["ClusterId"]))
    for spec in ([f"{never}.0"], f"ClusterId == {never}"):
        try:
            schedd.retrieve(spec)
            log(f"retrieve({spec!r}) for never-issued id raised nothing")
        except Exception as e:  # noqa: BLE001
            log(f"retrieve({spec!r}) for never-issued id raised", type(e).__name__,
                str(e).strip()[:200])
        try:
            r = schedd.act(JobAction.Remove, spec)
            log(f"act(Remove, {spec!r}) for never-issued id ->", dict(r))
        except Exception as e:  # noqa: BLE001
            log(f"act(Remove, {spec!r}) for never-issued id raised", type(e).__name__,
                str(e).strip()[:200])

    if not args.workdir:
        shutil.rmtree(base, ignore_errors=True)
    log("FAILURES:", FAILURES or "none")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
