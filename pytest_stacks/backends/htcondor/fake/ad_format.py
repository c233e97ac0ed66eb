"""How HTCondor's tools print job ads: ``-long``, ``-json``, ``-autoformat`` and ``-format``.

``-long`` and ``-json`` show each attribute as stored (an expression as its text, in JSON as
``"\\/Expr(...)\\/"``); ``-af`` and ``-format`` *evaluate* the named expression against the ad,
and ``-af`` prints a string unquoted, a missing attribute as ``undefined``. These are the
fake's own copies of the ClassAd printing rules, not the driver's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks.backends.htcondor.fake.classad import ERROR, UNDEFINED, ClassAdSyntaxError, Expr


def literal(value: Any) -> str:
    """A value as a ClassAd literal (``-long``): strings quoted, booleans lower-case."""
    if value is None or value is UNDEFINED:
        return "undefined"
    if value is ERROR:
        return "error"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Expr):
        return str(value)
    if isinstance(value, list | tuple):
        return "{ " + ", ".join(literal(v) for v in value) + " }"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def shown(ad: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a tool shows (the fake's own bookkeeping, ``_Name``, never)."""
    return {k: v for k, v in ad.items() if not k.startswith("_") and v is not None}


def evaluate(ad: Mapping[str, Any], attribute: str, now: int) -> Any:
    """What ``-af``/``-format`` print for ``attribute``: an expression over the ad."""
    try:
        return Expr(attribute).eval(ad, now)
    except ClassAdSyntaxError:
        return ERROR


def autoformat_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return literal(value)


def autoformat(ads: Sequence[Mapping[str, Any]], attributes: Sequence[str], now: int) -> str:
    return "".join(" ".join(autoformat_value(evaluate(ad, a, now)) for a in attributes) + "\n"
                   for ad in ads)


def long_form(ads: Sequence[Mapping[str, Any]], attributes: Sequence[str] = ()) -> str:
    """``-long``: ``Attr = value`` lines, a blank line after each ad."""
    wanted = {a.lower() for a in attributes}
    out = []
    for ad in ads:
        for key, value in sorted(shown(ad).items(), key=lambda kv: kv[0].lower()):
            if not wanted or key.lower() in wanted:
                out.append(f"{key} = {literal(value)}\n")
        out.append("\n")
    return "".join(out)


def _json_value(value: Any) -> Any:
    if isinstance(value, Expr):
        return f"/Expr({value})/"
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    return value


def json_form(ads: Sequence[Mapping[str, Any]], attributes: Sequence[str] = (), *,
              empty: str = "") -> str:
    """``-json``: a list of ads (keys in the tools' order: case-insensitive); no ad prints
    ``empty`` (condor_q: nothing; condor_history: ``[ ]``, as the remote client saw)."""
    if not ads:
        return empty
    wanted = {a.lower() for a in attributes}
    chunks = []
    for ad in ads:
        items = sorted(((k, v) for k, v in shown(ad).items()
                        if not wanted or k.lower() in wanted), key=lambda kv: kv[0].lower())
        body = ",\n".join(f"  {json.dumps(k)}: {json.dumps(_json_value(v))}"
                          for k, v in items).replace("/Expr(", "\\/Expr(").replace(")/\"", ")\\/\"")
        chunks.append("{\n" + body + "\n}")
    return "[\n" + ",\n".join(chunks) + "\n]\n"


_CONVERSION = re.compile(r"%(-?\d*(?:\.\d+)?)([sdfvVi%])")


def printf_form(ads: Sequence[Mapping[str, Any]], pairs: Sequence[tuple[str, str]],
                now: int) -> str:
    """``-format FMT ATTR`` pairs, in order, for each ad (no newline unless FMT has one)."""
    out = []
    for ad in ads:
        for fmt, attribute in pairs:
            value = evaluate(ad, attribute, now)

            def convert(match: re.Match[str], value: Any = value) -> str:
                return _convert(match, value)
            out.append(_CONVERSION.sub(convert, _unescape(fmt)))
    return "".join(out)


def _unescape(fmt: str) -> str:
    return fmt.replace("\\n", "\n").replace("\\t", "\t")


def _convert(match: re.Match[str], value: Any) -> str:
    flags, kind = match.group(1), match.group(2)
    if kind == "%":
        return "%"
    if value is UNDEFINED or value is None:
        text = "undefined"
    elif kind in "di":
        text = str(int(value)) if isinstance(value, int | float) and not isinstance(
            value, bool) else ("1" if value is True else "0" if value is False else "")
    elif kind == "f":
        text = f"{float(value):f}" if isinstance(value, int | float) else ""
    elif kind == "V":
        text = literal(value)
    else:
        text = autoformat_value(value)
    width = flags.split(".")[0]
    if width:
        number = int(width)
        text = text.ljust(-number) if number < 0 else text.rjust(number)
    return text
