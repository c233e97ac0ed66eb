"""Fakes proven against their daemons: record what a driver and the real daemons said to each
other, normalise it, and compare what the fake answers to the same scenario, field by field.

The flow: :mod:`.tap` records the calls a driver makes through its channel (a transport, a
schedd); :mod:`.scenario` drives one backend-agnostic run; :mod:`.normalise` turns a run's
exchanges into stable text (job ids, work folders, times, hosts as placeholders); :mod:`.fields`
reads each answer as named fields; :mod:`.compare` lists the differences a declaration does not
excuse; :mod:`.store` reads and writes recordings and the declarations. Nothing here knows about
pytest or about any backend's driver.
"""
