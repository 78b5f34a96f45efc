"""RFC 8785 JSON Canonicalization Scheme: the bytes the server signs (docs/change-control.md#the-hashes)."""
from __future__ import annotations

import decimal
import math
from typing import List

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


class JCSError(ValueError):
    """A value JCS cannot encode: a non-finite number, a lone surrogate, a type JSON does not have."""


def _string(text: str) -> str:
    out: List[str] = ['"']
    for ch in text:
        code = ord(ch)
        if 0xD800 <= code <= 0xDFFF:
            raise JCSError("a lone surrogate cannot be encoded")
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _number(value: float) -> str:
    """ECMAScript Number.prototype.toString, which RFC 8785 prescribes."""
    if not math.isfinite(value):
        raise JCSError("a non-finite number cannot be encoded")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr is the shortest decimal that round-trips, as ECMAScript's algorithm picks.
    parts = decimal.Decimal(repr(abs(value))).as_tuple()
    digits = "".join(str(d) for d in parts.digits)
    exponent = int(parts.exponent)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped.lstrip("0") or "0"
    k = len(digits)
    n = k + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"
    return sign + text


def _utf16(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def canonicalize(value: object) -> str:
    """The RFC 8785 text of a JSON value (encode it as UTF-8 for the bytes)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        # A JSON number is a double: integers beyond 2**53 read as the nearest double, as in JavaScript.
        return str(value) if abs(value) < 2**53 else _number(float(value))
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonicalize(v) for v in value) + "]"
    if isinstance(value, dict):
        for key in value:
            if not isinstance(key, str):
                raise JCSError("object keys must be strings")
        # Keys sorted by their UTF-16 code units (RFC 8785 3.2.3), which UTF-16BE bytes order the same way.
        keys = sorted(value, key=_utf16)
        return "{" + ",".join(_string(k) + ":" + canonicalize(value[k]) for k in keys) + "}"
    raise JCSError(f"{type(value).__name__} is not a JSON value")
