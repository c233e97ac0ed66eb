"""HTCondor: the reference driver (``driver``) over a small schedd interface (``api``), the
``htcondor2`` implementation of that interface (``bindings``), the in-process double
(``fake``) and the compose adapter (``adapter``).

``api`` is the only module both sides import, so the double never learns from the driver what
to answer.
"""
