"""Slurm: the reference driver (``driver``, over Slurm's own commands), the parsers of what
each version prints (``parse``), the in-process double (``fake``) and the compose adapter
(``adapter``), kept apart so the double never learns from the driver what to answer."""
