"""HTCondor: the reference driver (``driver``) over a small schedd interface (``api``), the
``htcondor2`` implementation of that interface (``bindings``), the command-line one for login
nodes reached over a transport (``remote_cli``: condor_submit -spool, condor_q, condor_history,
condor_transfer_data, condor_rm, condor_qedit), the in-process double (``fake``) and the compose
adapter (``adapter``).

``api`` is the only module both sides import, so the double never learns from the driver what
to answer.
"""
