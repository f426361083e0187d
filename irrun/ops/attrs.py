"""Attribute kinds, parsed with OpenVINO's rules: lists split on commas with optional spaces, booleans
true/false/1/0 and enums case-insensitive, plain strings exact."""
from __future__ import annotations

import re

from ..ir.types import ElementType, element_type

REQUIRED = object()


class Attr:
    """One declared attribute. `aliases` are other spellings OpenVINO accepts in <data>."""

    kind = "value"

    def __init__(self, default=REQUIRED, aliases=()):
        self.default = default
        self.aliases = tuple(aliases)
        self.name = None

    def __set_name__(self, owner, name):
        self.name = name

    @property
    def xml_names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def parse(self, text: str):
        raise NotImplementedError


class SpecValueError(ValueError):
    """A value the specification forbids but OpenVINO's reader takes, as `value` (rule attr.value.spec): the
    checker goes on with OpenVINO's reading, the runtime refuses the file."""

    def __init__(self, message: str, value):
        super().__init__(message)
        self.value = value


_INT_PREFIX = re.compile(r"\s*([+-]?\d+)")


def _int(text: str, minimum=None) -> int:
    """An integer; text after leading digits is read as OpenVINO's stream reads it (SpecValueError), except a
    sign where OpenVINO reads an unsigned number (minimum >= 0: "-1" is refused there)."""
    try:
        value = int(text.strip())
    except ValueError:
        prefix = _INT_PREFIX.match(text)
        if not prefix or (minimum is not None and minimum >= 0 and prefix.group(1).startswith("-")):
            raise ValueError(f"{text!r} is not an integer") from None
        value = int(prefix.group(1))
        _check_minimum(value, minimum)
        raise SpecValueError(f"{text!r} is not an integer (OpenVINO reads {value} and ignores the rest)",
                             value) from None
    _check_minimum(value, minimum)
    return value


def _check_minimum(value: int, minimum) -> None:
    if minimum is not None and value < minimum:
        raise ValueError(f"{value} is below the minimum {minimum}")


def _below_minimum(values, minimum) -> list[str]:
    """`read_below`: the spec's minimum, which OpenVINO's reader does not check (it reads a negative value
    as a huge unsigned one, whose arithmetic wraps back to the signed value's)."""
    return [f"{value} is below the minimum {minimum} (OpenVINO reads it)" for value in values if value < minimum]


class Int(Attr):
    kind = "int"

    def __init__(self, default=REQUIRED, min=None, aliases=(), read_below=False, exact=False):
        super().__init__(default, aliases)
        self.min, self.read_below = min, read_below
        self.exact = exact  # OpenVINO reads this one whole (a Const's offset and size): no text after the digits

    def parse(self, text):
        if self.exact and not re.fullmatch(r"\s*[+-]?\d+\s*", text):
            raise ValueError(f"{text!r} is not an unsigned integer")
        if not self.read_below:
            return _int(text, self.min)
        try:
            value = _int(text)
        except SpecValueError as exc:
            value, lenient = exc.value, [str(exc)]
        else:
            lenient = []
        lenient += _below_minimum([value], self.min)
        if lenient:
            raise SpecValueError("; ".join(lenient), value)
        return value


class Ints(Attr):
    kind = "int[]"

    def __init__(self, default=REQUIRED, min=None, aliases=(), read_below=False):
        super().__init__(default, aliases)
        self.min, self.read_below = min, read_below

    def parse(self, text):
        if not text:
            return ()
        if not text.strip():  # OpenVINO reads "" as an empty list and refuses blanks
            raise ValueError(f"{text!r} is not a list of integers")
        values, lenient = [], []
        for part in text.split(","):
            if not part.strip():
                _empty_item(text)
            try:
                values.append(_int(part, None if self.read_below else self.min))
            except SpecValueError as exc:
                values.append(exc.value)
                lenient.append(str(exc))
        if self.read_below:
            lenient += _below_minimum(values, self.min)
        if lenient:
            raise SpecValueError("; ".join(lenient), tuple(values))
        return tuple(values)


def _empty_item(text):
    raise ValueError(f"{text!r} has an empty list item")


class Float(Attr):
    kind = "float"

    def parse(self, text):
        try:
            return float(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a number") from None


class Bool(Attr):
    kind = "boolean"

    def parse(self, text):
        value = text.lower()  # OpenVINO: "true" in any case or "1" is true, any other text false
        if value in ("true", "1"):
            return True
        if value in ("false", "0"):
            return False
        raise SpecValueError(f"{text!r} is not a boolean (true, false, 1 or 0; OpenVINO reads false)", False)


class Enum(Attr):
    """A case-insensitive choice; parsed to the lower-case spelling."""

    kind = "enum"

    def __init__(self, *values, default=REQUIRED, aliases=()):
        super().__init__(default, aliases)
        self.values = tuple(values)

    def parse(self, text):
        value = text.strip().lower()
        if value not in self.values:
            raise ValueError(f"{text!r} is not one of {', '.join(self.values)}")
        return value


class Str(Attr):
    """A case-sensitive choice among `values`, or any string when none are given."""

    kind = "string"

    def __init__(self, *values, default=REQUIRED, aliases=()):
        super().__init__(default, aliases)
        self.values = tuple(values)

    def parse(self, text):
        if self.values and text not in self.values:
            raise ValueError(f"{text!r} is not one of {', '.join(self.values)} (case-sensitive)")
        return text


class Type(Attr):
    """An element type name; `allowed` limits it (the spec's range, which OpenVINO may not enforce)."""

    kind = "element type"

    def __init__(self, *allowed, default=REQUIRED, aliases=(), openvino_checks=True):
        super().__init__(default, aliases)
        self.allowed = tuple(allowed)
        self.openvino_checks = openvino_checks  # False: OpenVINO reads any element type here

    def parse(self, text) -> ElementType:
        et = element_type(text)
        if et is None:
            raise ValueError(f"{text!r} is not an element type")
        if self.allowed and et.name not in self.allowed:
            message = f"{text!r} is not one of {', '.join(self.allowed)}"
            raise ValueError(message) if self.openvino_checks else SpecValueError(message, et)
        return et


class Floats(Attr):
    """A comma-separated list of floats (OpenVINO's std::vector<float> attributes)."""

    kind = "float[]"

    def parse(self, text):
        if not text.strip():
            return ()
        try:
            return tuple(float(part) for part in text.split(","))
        except ValueError:
            raise ValueError(f"{text!r} is not a list of numbers") from None


class Names(Attr):
    """A comma-separated list of names (e.g. activation functions), spaces trimmed, case kept."""

    kind = "string[]"

    def parse(self, text):
        if not text.strip():
            return ()
        return tuple(part.strip() for part in text.split(","))
