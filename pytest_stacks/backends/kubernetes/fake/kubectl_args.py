"""kubectl's option grammar (cobra and pflag) for the fake's ``kubectl``: long options as
``--opt value`` or ``--opt=value``, shorthands as ``-n ns``, ``-nns``, ``-n=ns`` and bundled
booleans (``-Ao json``), options anywhere among the arguments, ``--`` ending them; and kubectl's
own words when an option is unknown or lacks its value.

Every option the real command has but the fake does not model is declared too, so a client
using one is told that plainly instead of meeting "unknown flag" for a real option.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_stacks.backends.kubernetes.api import RESOURCES


class Failed(Exception):
    """The command ends with ``stderr`` (kubectl's words) and exit ``code``."""

    def __init__(self, stderr: str, code: int = 1) -> None:
        super().__init__(stderr)
        self.stderr = stderr if stderr.endswith("\n") else stderr + "\n"
        self.code = code


@dataclass(frozen=True)
class Flag:
    long: str
    short: str = ""
    value: bool = True  # takes a value (else a boolean: --x, --x=true|false)
    default: str = ""  # the value of a bare --x for an option whose value is optional
    modelled: bool = True


def _flags(*specs: Flag) -> dict[str, Flag]:
    return {spec.long: spec for spec in specs}


GLOBAL = _flags(Flag("namespace", "n"), Flag("kubeconfig"), Flag("context"), Flag("cluster"),
                Flag("user"), Flag("request-timeout"), Flag("v", "v"),
                Flag("help", "h", value=False), Flag("server", "s", modelled=False),
                Flag("token", modelled=False), Flag("as", modelled=False))

COMMANDS: dict[str, dict[str, Flag]] = {
    "get": _flags(Flag("output", "o"), Flag("selector", "l"),
                  Flag("all-namespaces", "A", value=False),
                  Flag("ignore-not-found", value=False), Flag("no-headers", value=False),
                  Flag("allow-missing-template-keys", value=False),
                  Flag("show-managed-fields", value=False), Flag("chunk-size"),
                  Flag("watch", "w", value=False, modelled=False),
                  Flag("watch-only", value=False, modelled=False),
                  Flag("field-selector", modelled=False), Flag("sort-by", modelled=False),
                  Flag("show-labels", value=False, modelled=False),
                  Flag("label-columns", "L", modelled=False), Flag("raw", modelled=False),
                  Flag("subresource", modelled=False), Flag("show-kind", value=False,
                                                            modelled=False)),
    "apply": _flags(Flag("filename", "f"), Flag("output", "o"),
                    Flag("validate", default="strict"), Flag("field-manager"),
                    Flag("server-side", value=False, modelled=False),
                    Flag("dry-run", default="unchanged", modelled=False),
                    Flag("recursive", "R", value=False, modelled=False),
                    Flag("kustomize", "k", modelled=False),
                    Flag("prune", value=False, modelled=False),
                    Flag("selector", "l", modelled=False),
                    Flag("force", value=False, modelled=False),
                    Flag("force-conflicts", value=False, modelled=False),
                    Flag("overwrite", value=False, modelled=False)),
    "delete": _flags(Flag("filename", "f"), Flag("selector", "l"), Flag("all", value=False),
                     Flag("ignore-not-found", value=False), Flag("wait", value=False),
                     Flag("cascade", default="background"), Flag("grace-period"),
                     Flag("now", value=False), Flag("timeout"), Flag("force", value=False),
                     Flag("output", "o"), Flag("dry-run", default="unchanged", modelled=False),
                     Flag("field-selector", modelled=False),
                     Flag("interactive", "i", value=False, modelled=False),
                     Flag("raw", modelled=False), Flag("recursive", "R", value=False,
                                                       modelled=False)),
    "logs": _flags(Flag("container", "c"), Flag("tail"), Flag("limit-bytes"),
                   Flag("follow", "f", value=False), Flag("previous", "p", value=False),
                   Flag("pod-running-timeout"),
                   Flag("timestamps", value=False, modelled=False),
                   Flag("all-containers", value=False, modelled=False),
                   Flag("since", modelled=False), Flag("since-time", modelled=False),
                   Flag("prefix", value=False, modelled=False),
                   Flag("max-log-requests", modelled=False)),
    "version": _flags(Flag("client", value=False), Flag("output", "o")),
    "wait": _flags(Flag("for"), Flag("timeout"), Flag("selector", "l"), Flag("all", value=False),
                   Flag("filename", "f"), Flag("output", "o"),
                   Flag("all-namespaces", "A", value=False, modelled=False),
                   Flag("field-selector", modelled=False),
                   Flag("local", value=False, modelled=False)),
}

#: The real kubectl's other commands: named, so a client hears "not modelled", not "unknown".
UNMODELLED = ("annotate", "api-resources", "api-versions", "attach", "auth", "autoscale",
              "certificate", "cluster-info", "completion", "config", "cordon", "cp", "create",
              "debug", "describe", "diff", "drain", "edit", "events", "exec", "explain",
              "expose", "kustomize", "label", "patch", "plugin", "port-forward", "proxy",
              "replace", "rollout", "run", "scale", "set", "taint", "top", "uncordon")


#: The short names kubectl resolves (the fake's API server serves these kinds).
_ALIASES = {"po": "Pod", "svc": "Service", "cm": "ConfigMap", "ev": "Event", "ns": "Namespace",
            "no": "Node", "sa": "ServiceAccount"}


def kind_of(word: str) -> str:
    """The kind a resource word names (``mpijobs``, ``mpijob.kubeflow.org``, ``po``...)."""
    low = word.lower()
    if low in _ALIASES:
        return _ALIASES[low]
    for kind, res in RESOURCES.items():
        names = {kind.lower(), res.plural, res.plural.rstrip("s")}
        if res.group:
            names |= {f"{n}.{res.group}" for n in set(names)}
            names |= {f"{res.plural}.{res.version}.{res.group}"}
        if low in names:
            return kind
    raise Failed(f'error: the server doesn\'t have a resource type "{word}"')


def plural(kind: str) -> str:
    """``mpijobs.kubeflow.org``: how the API server names a kind in its errors."""
    res = RESOURCES[kind]
    return f"{res.plural}.{res.group}" if res.group else res.plural


def singular(kind: str) -> str:
    """``mpijob.kubeflow.org``: how kubectl names a kind in what it did."""
    group = RESOURCES[kind].group
    return f"{kind.lower()}.{group}" if group else kind.lower()


def seconds(text: str, option: str) -> float:
    """A Go duration (``30s``, ``2m``, ``1h``, or plain seconds) of ``--option``."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    try:
        return float(text[:-1]) * units[text[-1]] if text[-1:] in units else float(text)
    except (ValueError, IndexError):
        raise Failed(f'error: invalid argument "{text}" for "--{option}" flag: time: invalid '
                     f'duration "{text}"') from None


@dataclass
class Parsed:
    command: str
    positionals: list[str] = field(default_factory=list)
    options: dict[str, list[str]] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.last("namespace", "default")

    def last(self, name: str, default: str = "") -> str:
        return self.options.get(name, [default])[-1]

    def flag(self, name: str, default: bool = False) -> bool:
        if name not in self.options:
            return default
        value = self.options[name][-1].lower()
        if value not in ("true", "false", "1", "0", "t", "f"):
            raise Failed(f'error: invalid argument "{value}" for "--{name}" flag: '
                         f'strconv.ParseBool: parsing "{value}": invalid syntax\n'
                         f"See 'kubectl {self.command} --help' for usage.")
        return value in ("true", "1", "t")


def _help(command: str) -> str:
    return f"See 'kubectl {command} --help' for usage." if command else \
        "See 'kubectl --help' for usage."


def _command_of(args: Sequence[str]) -> tuple[int, str]:
    """The index and name of the subcommand: the first word that is not a global option's."""
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--":
            return (index + 1, args[index + 1]) if index + 1 < len(args) else (-1, "")
        if arg.startswith("--"):
            spec = GLOBAL.get(arg[2:].split("=", 1)[0])
            skip = bool(spec and spec.value and "=" not in arg and not spec.default)
        elif arg.startswith("-") and len(arg) > 1:
            spec = next((s for s in GLOBAL.values() if s.short == arg[1]), None)
            skip = bool(spec and spec.value and len(arg) == 2)
        else:
            return index, arg
    return -1, ""


def parse(args: Sequence[str]) -> Parsed:
    """The command and its options. Raises :class:`Failed` in kubectl's words."""
    at, command = _command_of(args)
    if command and command not in COMMANDS:
        if command in UNMODELLED:
            raise Failed(f'error: the fake\'s kubectl does not model "kubectl {command}": it '
                         f"answers apply, get, delete, wait, logs and version (see "
                         f"docs/your-own-client.md)")
        raise Failed(f'error: unknown command "{command}" for "kubectl"')
    known = {**GLOBAL, **COMMANDS.get(command, {})}
    shorts = {spec.short: spec for spec in known.values() if spec.short}
    parsed = Parsed(command)
    rest = [a for i, a in enumerate(args) if i != at]
    index = 0

    def take(spec: Flag, inline: str | None, shown: str) -> None:
        nonlocal index
        if not spec.modelled:
            raise Failed(f"error: the fake's kubectl does not model --{spec.long} of kubectl "
                         f"{command or '(global)'}: its in-process API server has no such "
                         f"feature; see docs/your-own-client.md")
        if inline is None and spec.value and not spec.default:
            if index + 1 >= len(rest):
                raise Failed(f"error: flag needs an argument: {shown}\n{_help(command)}")
            index += 1
            inline = rest[index]
        parsed.options.setdefault(spec.long, []).append(
            inline if inline is not None else (spec.default or "true"))

    while index < len(rest):
        arg = rest[index]
        if arg == "--":
            parsed.positionals += rest[index + 1:]
            break
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            spec = known.get(name)
            if spec is None:
                raise Failed(f"error: unknown flag: --{name}\n{_help(command)}")
            take(spec, value if eq else None, f"--{name}")
        elif arg.startswith("-") and len(arg) > 1:
            chars = arg[1:]
            while chars:
                spec = shorts.get(chars[0])
                if spec is None:
                    raise Failed(f"error: unknown shorthand flag: '{chars[0]}' in {arg}\n"
                                 f"{_help(command)}")
                tail = chars[1:]
                if spec.value:
                    take(spec, tail.removeprefix("=") if tail else None,
                         f"'{chars[0]}' in -{chars[0]}")
                    break
                take(spec, tail[1:] if tail.startswith("=") else None, f"-{chars[0]}")
                chars = "" if tail.startswith("=") else tail
        else:
            parsed.positionals.append(arg)
        index += 1
    return parsed
