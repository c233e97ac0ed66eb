"""A small three-valued ClassAd evaluator, enough for job policies and constraints.

The fake schedd evaluates ``LeaveJobInQueue`` and query constraints the way the ClassAd
library does (``UNDEFINED``, ``?:``, ``=?=``/``is``, ``time()``), because the one-shot rule of
25.8.2+ clients hinges on exactly those corners: ``StageOutFinish ?: 0`` on a job never
retrieved. It also prints an expression back as the library does, since that is what a job
ad shows for an expression the client submitted.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any


class _Undefined:
    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


class _Error:
    def __repr__(self) -> str:
        return "ERROR"


UNDEFINED = _Undefined()
ERROR = _Error()

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+)
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<op>=\?=|=!=|==|!=|<=|>=|&&|\|\||\?:|[<>!+\-*/%?:(),])
    )""", re.VERBOSE)


class ClassAdSyntaxError(ValueError):
    pass


class Expr:
    """A parsed ClassAd expression (the subset job policies and constraints use)."""

    def __init__(self, text: str) -> None:
        self.source = text.strip()
        self._tokens = self._lex(self.source)
        self.text = self._unparse(self._tokens)
        self._pos = 0
        self._tree = self._ternary()
        if self._pos != len(self._tokens):
            raise ClassAdSyntaxError(f"unexpected {self._tokens[self._pos][1]!r} in {text!r}")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    # -------------------------------------------------------------- parsing

    @staticmethod
    def _lex(text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ClassAdSyntaxError(f"cannot parse {text[pos:]!r} in {text!r}")
            kind = match.lastgroup or ""
            value = match.group(kind)
            if kind == "name" and value.lower() in ("is", "isnt"):
                kind, value = "op", "=?=" if value.lower() == "is" else "=!="
            tokens.append((kind, value))
            pos = match.end()
        return tokens

    @staticmethod
    def _unparse(tokens: Sequence[tuple[str, str]]) -> str:
        """The text as the ClassAd library prints it back (spacing, ``is``, lowercase
        keywords), which is what a job ad shows for an expression the client submitted."""
        out: list[str] = []
        prev: tuple[str, str] | None = None
        for kind, text in tokens:
            operand_before = prev is not None and (prev[0] in ("num", "str", "name")
                                                   or prev[1] == ")")
            if kind == "name":
                lower = text.lower()
                piece = lower if lower in ("true", "false", "undefined", "error") else text
            elif kind != "op":
                piece = text
            elif text == "(":
                piece = "(" if prev is None or prev[0] == "name" or not operand_before \
                    else " ("
            elif text == ")":
                piece = ")"
            elif text == ",":
                piece = ","
            elif text in ("!", "-", "+") and not operand_before:
                piece = text
            else:
                piece = " " + {"=?=": "is", "=!=": "isnt"}.get(text, text) + " "
            if out and kind in ("num", "str", "name") and prev is not None and \
                    prev[0] in ("num", "str", "name"):
                piece = " " + piece
            out.append(piece)
            prev = (kind, text)
        return "".join(out)

    def _peek(self) -> str | None:
        return self._tokens[self._pos][1] if self._pos < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        if self._pos >= len(self._tokens):
            raise ClassAdSyntaxError(f"unexpected end of {self.text!r}")
        token = self._tokens[self._pos]
        if expected is not None and token[1] != expected:
            raise ClassAdSyntaxError(f"expected {expected!r}, got {token[1]!r} in {self.text!r}")
        self._pos += 1
        return token

    def _ternary(self) -> tuple[Any, ...]:
        cond = self._binary(0)
        if self._peek() == "?:":
            self._take()
            return ("elvis", cond, self._ternary())
        if self._peek() == "?":
            self._take()
            then = self._ternary()
            self._take(":")
            return ("if", cond, then, self._ternary())
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "=?=", "=!="), ("<", "<=", ">", ">="), ("+", "-"),
        ("*", "/", "%"))

    def _binary(self, level: int) -> tuple[Any, ...]:
        if level == len(self._LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in self._LEVELS[level]:
            op = self._take()[1]
            left = ("op", op, left, self._binary(level + 1))
        return left

    def _unary(self) -> tuple[Any, ...]:
        if self._peek() in ("!", "-", "+"):
            op = self._take()[1]
            return ("unary", op, self._unary())
        return self._atom()

    def _atom(self) -> tuple[Any, ...]:
        kind, text = self._take()
        if kind == "num":
            return ("lit", float(text) if "." in text or "e" in text.lower() else int(text))
        if kind == "str":
            return ("lit", bytes(text[1:-1], "utf-8").decode("unicode_escape"))
        if text == "(":
            inner = self._ternary()
            self._take(")")
            return inner
        if kind == "name":
            lower = text.lower()
            if self._peek() == "(":
                self._take("(")
                args: list[tuple[Any, ...]] = []
                while self._peek() != ")":
                    args.append(self._ternary())
                    if self._peek() == ",":
                        self._take(",")
                self._take(")")
                if lower not in _FUNCTIONS:
                    raise ClassAdSyntaxError(f"function {text}() is not modelled by the fake")
                return ("call", lower, args)
            if lower in ("true", "false"):
                return ("lit", lower == "true")
            if lower == "undefined":
                return ("lit", UNDEFINED)
            if lower == "error":
                return ("lit", ERROR)
            if lower.startswith(("my.", "target.")):
                lower = lower.split(".", 1)[1]
            return ("attr", lower)
        raise ClassAdSyntaxError(f"unexpected {text!r} in {self.text!r}")

    # -------------------------------------------------------------- evaluation

    def eval(self, ad: Mapping[str, Any], now: int | None = None) -> Any:
        scope = {k.lower(): v for k, v in ad.items()}
        return _eval(self._tree, scope, int(time.time()) if now is None else now, 0)

    def is_true(self, ad: Mapping[str, Any], now: int | None = None) -> bool:
        value = self.eval(ad, now)
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value != 0
        return False


def _num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def _eval(node: tuple[Any, ...], scope: Mapping[str, Any], now: int, depth: int) -> Any:
    if depth > 50:
        return ERROR
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "attr":
        value = scope.get(node[1], UNDEFINED)
        if isinstance(value, Expr):
            return _eval(value._tree, scope, now, depth + 1)
        return value
    if kind == "call":
        args = [_eval(a, scope, now, depth + 1) for a in node[2]]
        return _FUNCTIONS[node[1]](now, *args)
    if kind == "elvis":
        first = _eval(node[1], scope, now, depth + 1)
        return _eval(node[2], scope, now, depth + 1) if first is UNDEFINED else first
    if kind == "if":
        cond = _eval(node[1], scope, now, depth + 1)
        if cond is UNDEFINED or cond is ERROR:
            return cond
        return _eval(node[2] if truthy(cond) else node[3], scope, now, depth + 1)
    if kind == "unary":
        return _unary(node[1], _eval(node[2], scope, now, depth + 1))
    op = node[1]
    left = _eval(node[2], scope, now, depth + 1)
    if op in ("&&", "||"):
        return _logic(op, left, lambda: _eval(node[3], scope, now, depth + 1))
    return _binary(op, left, _eval(node[3], scope, now, depth + 1))


def _unary(op: str, value: Any) -> Any:
    if value is UNDEFINED or value is ERROR:
        return value
    if op == "!":
        return ERROR if not isinstance(value, bool | int | float) else not truthy(value)
    if not _num(value):
        return ERROR
    return -value if op == "-" else value


def _binary(op: str, left: Any, right: Any) -> Any:
    if op in ("=?=", "=!="):
        same = type(left) is type(right) and left == right
        return same if op == "=?=" else not same
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    if op in ("==", "!=", "<", "<=", ">", ">="):
        return _compare(op, left, right)
    return _arithmetic(op, left, right)


def _compare(op: str, left: Any, right: Any) -> Any:
    if isinstance(left, str) and isinstance(right, str):
        left, right = left.lower(), right.lower()
    elif isinstance(left, str) or isinstance(right, str):
        return ERROR
    result = {"==": left == right, "!=": left != right, "<": left < right,
              "<=": left <= right, ">": left > right, ">=": left >= right}[op]
    return result


def _arithmetic(op: str, left: Any, right: Any) -> Any:
    if not (_num(left) and _num(right)):
        return ERROR
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return ERROR
    if op == "/":
        if isinstance(left, int) and isinstance(right, int):
            return int(left / right)
        return left / right
    return left % right


def truthy(value: Any) -> bool:
    return bool(value) if isinstance(value, bool | int | float) else False


def _logic(op: str, left: Any, right_thunk: Callable[[], Any]) -> Any:
    if left is ERROR:
        return ERROR
    if left is not UNDEFINED and not isinstance(left, bool | int | float):
        return ERROR
    if op == "&&" and left is not UNDEFINED and not truthy(left):
        return False
    if op == "||" and left is not UNDEFINED and truthy(left):
        return True
    right = right_thunk()
    if right is ERROR or (right is not UNDEFINED and not isinstance(right, bool | int | float)):
        return ERROR
    if left is UNDEFINED:
        if right is UNDEFINED:
            return UNDEFINED
        if op == "&&":
            return False if not truthy(right) else UNDEFINED
        return True if truthy(right) else UNDEFINED
    return right if right is UNDEFINED else truthy(right)


_FUNCTIONS.update({
    "time": lambda now: now,
    "isundefined": lambda now, v: v is UNDEFINED,
    "isdefined": lambda now, v: v is not UNDEFINED,
    "iferror": lambda now, v, alt: alt if v is ERROR else v,
    "ifthenelse": lambda now, c, a, b: c if c is UNDEFINED else (a if truthy(c) else b),
})
