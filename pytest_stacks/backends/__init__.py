"""Reference drivers, one package per backend: its driver, its parsers, its in-process double,
and its stack adapter (how it is driven inside a container stack). The registry
(:mod:`pytest_stacks.registry`) names them; nothing here dispatches on a backend's name."""
