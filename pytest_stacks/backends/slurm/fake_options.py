"""The option grammar of Slurm's commands, as the fake reads a command line.

Slurm's tools parse their options with glibc's ``getopt_long``, so that grammar is what a
client meets: short options (``-J x``, ``-Jx``, bundled flags ``-hv``), long options
(``--job-name=x``, ``--job-name x``, a unique prefix ``--parsa``), ``--`` ending the options,
and glibc's own messages for an unknown or incomplete option (followed by the tool's ``Try
"sbatch --help"`` line). ``sbatch`` stops at the first word that is not an option (its
``+`` mode: the script and the script's own arguments follow); the query tools permute, so
options and operands may mix. The tables name only the options the fake answers or accepts;
one the real tool has and the fake does not is refused as unknown, never silently ignored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Option:
    """One option: its long name (the key it is stored under), its short letter, and whether
    it takes an argument ("required" or "none"; Slurm's "optional" ones are spelled out)."""

    long: str
    short: str = ""
    argument: bool = False
    optional: bool = False  # --parsable, -E: an argument only as --opt=value


@dataclass
class Parsed:
    """What a command line said: options by long name (every value, in order) and operands."""

    options: dict[str, list[str]] = field(default_factory=dict)
    operands: list[str] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.options

    def last(self, name: str, default: str = "") -> str:
        values = self.options.get(name)
        return values[-1] if values else default

    def all(self, name: str) -> list[str]:
        return list(self.options.get(name, []))


class OptionError(Exception):
    """A command line the tool refuses; ``str()`` is what it prints on stderr."""


def _table(options: Sequence[Option]) -> tuple[dict[str, Option], dict[str, Option]]:
    return ({o.long: o for o in options}, {o.short: o for o in options if o.short})


def parse(tool: str, argv: Sequence[str], options: Sequence[Option], *,
          stop_at_operand: bool = False) -> Parsed:
    """Read ``argv`` (without the tool's own name) as ``getopt_long`` would."""
    longs, shorts = _table(options)
    parsed = Parsed()
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            parsed.operands.extend(words[index:])
            break
        if word.startswith("--"):
            index = _long(tool, word, words, index, longs, parsed)
        elif word.startswith("-") and word != "-":
            index = _short(tool, word, words, index, shorts, parsed)
        else:
            parsed.operands.append(word)
            if stop_at_operand:
                parsed.operands.extend(words[index:])
                break
    return parsed


def _try(tool: str) -> str:
    return f'Try "{tool} --help" for more information\n'


def _long(tool: str, word: str, words: list[str], index: int, longs: Mapping[str, Option],
          parsed: Parsed) -> int:
    name, has_value, value = word[2:].partition("=")
    option = longs.get(name)
    if option is None:
        matches = sorted(n for n in longs if n.startswith(name))
        if len(matches) > 1:
            raise OptionError(f"{tool}: option '--{name}' is ambiguous; possibilities:"
                              + "".join(f" '--{m}'" for m in matches) + "\n" + _try(tool))
        if not matches:
            raise OptionError(f"{tool}: unrecognized option '{word}'\n" + _try(tool))
        option = longs[matches[0]]
    if not option.argument:
        if has_value and not option.optional:
            raise OptionError(f"{tool}: option '--{option.long}' doesn't allow an argument\n"
                              + _try(tool))
        parsed.options.setdefault(option.long, []).append(value)
        return index
    if not has_value:
        if index >= len(words):
            raise OptionError(f"{tool}: option '--{option.long}' requires an argument\n"
                              + _try(tool))
        value = words[index]
        index += 1
    parsed.options.setdefault(option.long, []).append(value)
    return index


def _short(tool: str, word: str, words: list[str], index: int, shorts: Mapping[str, Option],
           parsed: Parsed) -> int:
    letters = word[1:]
    position = 0
    while position < len(letters):
        letter = letters[position]
        position += 1
        option = shorts.get(letter)
        if option is None:
            raise OptionError(f"{tool}: invalid option -- '{letter}'\n" + _try(tool))
        if not option.argument:
            parsed.options.setdefault(option.long, []).append("")
            continue
        value = letters[position:]
        if not value:
            if index >= len(words):
                raise OptionError(f"{tool}: option requires an argument -- '{letter}'\n"
                                  + _try(tool))
            value = words[index]
            index += 1
        parsed.options.setdefault(option.long, []).append(value)
        return index
    return index


def flags(*names: str) -> list[Option]:
    """Long options without an argument."""
    return [Option(n) for n in names]


def valued(*names: str) -> list[Option]:
    """Long options with a required argument."""
    return [Option(n, argument=True) for n in names]
