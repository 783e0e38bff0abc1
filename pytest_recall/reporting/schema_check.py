"""The report's JSON Schema compiled once into plain Python checks: a record checked in microseconds.

``jsonschema`` walks the schema afresh for every document and builds an error
tree it mostly throws away: about a millisecond a record, which made checking
a 100,000-case report take minutes before merge or resume could start. The
published schema uses a handful of keywords, so it is compiled here, once,
into nested closures that only answer "valid or not". A document they refuse
is then handed to ``jsonschema`` for its message, so both always agree on
what they say; a keyword this compiler does not know makes :func:`compile_schema`
raise, and the caller keeps to ``jsonschema`` alone.

``fastjsonschema`` would do the same job, but it knows drafts 4 to 7 only, and
the schema is draft 2020-12.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]
# Words that describe rather than constrain.
# The widest integer a float surely holds, in bits: past it, float() and every mean or sum that needs one raise.
MAX_FLOAT_BITS = 1023
ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default", "examples", "$defs"})
_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "number": lambda value: isinstance(value, (int, float)) and not isinstance(value, bool),
    "integer": lambda value: (
        (isinstance(value, int) and not isinstance(value, bool))
        or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
    ),
}


class UnknownKeyword(ValueError):
    """The schema uses a keyword this compiler does not check."""


def compile_schema(schema: Mapping[str, Any], root: Mapping[str, Any] | None = None) -> Check:
    """A function that says whether a document is valid against ``schema`` (a part of ``root``)."""
    return _Compiler(root if root is not None else schema).node(schema)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def node(self, schema: Any) -> Check:
        if schema is True or schema == {}:
            return lambda value: True
        if schema is False:
            return lambda value: False
        unknown = set(schema) - ANNOTATIONS - set(_KEYWORDS)
        if unknown:
            raise UnknownKeyword(", ".join(sorted(unknown)))
        checks = [_KEYWORDS[word](self, schema[word], schema) for word in _KEYWORDS if word in schema]
        if len(checks) == 1:
            return checks[0]
        if len(checks) == 2:
            first, second = checks
            return lambda value: first(value) and second(value)

        def every(value: Any) -> bool:
            for check in checks:  # noqa: SIM110 - a plain loop: all() over a generator costs a frame a value
                if not check(value):
                    return False
            return True

        return every

    def ref(self, target: str, _: Mapping[str, Any]) -> Check:
        if not target.startswith("#/"):
            raise UnknownKeyword(f"$ref {target}")
        if target not in self.refs:
            self.refs[target] = lambda value: True  # a recursive reference sees the finished check below
            part: Any = self.root
            for name in target[2:].split("/"):
                part = part[name.replace("~1", "/").replace("~0", "~")]
            compiled = self.node(part)
            self.refs[target] = compiled
            return compiled
        # A reference met again: its check itself when finished, else (a recursion) looked up when called.
        return lambda value: self.refs[target](value)


_CLASSES: dict[str, type] = {"object": dict, "array": list, "string": str, "null": type(None)}


def _type(_: _Compiler, names: Any, __: Mapping[str, Any]) -> Check:
    """One ``isinstance`` for the common case; ``true`` is no number, and ``1.0`` is an integer."""
    wanted = {names} if isinstance(names, str) else set(names)
    unknown = wanted - set(_TYPES)
    if unknown:
        raise UnknownKeyword(f"type {', '.join(sorted(unknown))}")
    classes = tuple(_CLASSES[name] for name in wanted if name in _CLASSES)
    boolean, number, integer = "boolean" in wanted, "number" in wanted, "integer" in wanted

    def check(value: Any) -> bool:
        if isinstance(value, bool):
            return boolean
        if isinstance(value, classes):
            return True
        if number:
            return isinstance(value, (int, float))
        return integer and _TYPES["integer"](value)

    return check


def _enum(_: _Compiler, options: list[Any], __: Mapping[str, Any]) -> Check:
    if all(isinstance(option, str) for option in options):
        strings = frozenset(options)
        return lambda value: isinstance(value, str) and value in strings
    return lambda value: any(_same(value, option) for option in options)


def _const(_: _Compiler, option: Any, __: Mapping[str, Any]) -> Check:
    return lambda value: _same(value, option)


def _minimum(_: _Compiler, bound: float, __: Mapping[str, Any]) -> Check:
    return lambda value: not isinstance(value, (int, float)) or isinstance(value, bool) or value >= bound


def _maximum(_: _Compiler, bound: float, __: Mapping[str, Any]) -> Check:
    return lambda value: not isinstance(value, (int, float)) or isinstance(value, bool) or value <= bound


def _pattern(_: _Compiler, pattern: str, __: Mapping[str, Any]) -> Check:
    search = re.compile(pattern).search
    return lambda value: not isinstance(value, str) or search(value) is not None


def _required(_: _Compiler, names: list[str], __: Mapping[str, Any]) -> Check:
    return lambda value: not isinstance(value, dict) or all(name in value for name in names)


def _properties(compiler: _Compiler, properties: Mapping[str, Any], __: Mapping[str, Any]) -> Check:
    checks = {name: compiler.node(part) for name, part in properties.items()}

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name, item in value.items():
            inner = checks.get(name)
            if inner is not None and not inner(item):
                return False
        return True

    return check


def _additional(compiler: _Compiler, extra: Any, schema: Mapping[str, Any]) -> Check:
    known = frozenset(schema.get("properties", {}))
    inner = compiler.node(extra)
    return lambda value: (
        not isinstance(value, dict) or all(inner(item) for name, item in value.items() if name not in known)
    )


def _items(compiler: _Compiler, part: Any, __: Mapping[str, Any]) -> Check:
    inner = compiler.node(part)

    def check(value: Any) -> bool:
        if isinstance(value, list):
            for item in value:  # a plain loop: all() over a generator costs a frame a value
                if not inner(item):
                    return False
        return True

    return check


def _one_of(compiler: _Compiler, parts: list[Any], __: Mapping[str, Any]) -> Check:
    checks = [compiler.node(part) for part in parts]

    def check(value: Any) -> bool:
        matched = 0
        for part in checks:
            if part(value):
                matched += 1
                if matched > 1:
                    return False
        return matched == 1

    return check


def _any_of(compiler: _Compiler, parts: list[Any], __: Mapping[str, Any]) -> Check:
    checks = [compiler.node(part) for part in parts]
    return lambda value: any(check(value) for check in checks)


def _ref(compiler: _Compiler, target: str, schema: Mapping[str, Any]) -> Check:
    return compiler.ref(target, schema)


_KEYWORDS: dict[str, Callable[[_Compiler, Any, Mapping[str, Any]], Check]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _minimum,
    "maximum": _maximum,
    "pattern": _pattern,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "oneOf": _one_of,
    "anyOf": _any_of,
    "$ref": _ref,
}


def all_finite(value: Any) -> bool:
    """No NaN or infinity anywhere in ``value``, nor an integer past any float (a 400-digit one, which every sum
    or mean over it would raise on): one quick walk, without the paths an error message needs."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, int):
            if past_any_float(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def past_any_float(number: int) -> bool:
    """An integer no float holds: ``float()`` of it raises, and so does a mean or a division by it."""
    return number.bit_length() > MAX_FLOAT_BITS


def _same(value: Any, option: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, and ``1.0`` is ``1``."""
    if isinstance(value, bool) or isinstance(option, bool):
        return isinstance(value, bool) and isinstance(option, bool) and value == option
    if isinstance(value, list) and isinstance(option, list):
        return len(value) == len(option) and all(_same(a, b) for a, b in zip(value, option, strict=True))
    if isinstance(value, dict) and isinstance(option, dict):
        return value.keys() == option.keys() and all(_same(value[key], option[key]) for key in value)
    if isinstance(value, (list, dict)) or isinstance(option, (list, dict)):
        return False
    return (
        bool(type(value) is type(option) or (_TYPES["number"](value) and _TYPES["number"](option))) and value == option
    )
