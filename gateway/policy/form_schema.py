"""The spec's form-mode schema subset, and checking the host's answer against it.

Accepted `requestedSchema` (MCP 2025-06-18 / 2025-11-25, checked against the
SDK's `RequestedSchema` / `PrimitiveSchemaDefinition` models):

- top level: `type: "object"` and `properties` (required); `required` (unique
  names of listed properties); `$schema` (a string); `title` and `description`
  (the SDK renders them from the pydantic model); `additionalProperties: false`
  (pydantic's `extra="forbid"`; it only restates what `check_answer` enforces).
- each property is exactly one of
  - string: `minLength`, `maxLength`, `pattern`, `format` in
    email / uri / date / date-time;
  - number / integer: `minimum`, `maximum`, and `exclusiveMinimum` /
    `exclusiveMaximum` (not in the spec, but pydantic emits them for `gt`/`lt`
    and they only narrow the answer);
  - boolean;
  - single-select: `type: "string"` with `enum` (+ legacy `enumNames`, same
    length) or `oneOf` of `{const, title}`;
  - multi-select: `type: "array"`, `items` = `{type: "string", enum}` or
    `{type?: "string", anyOf: [{const, title}]}`, `minItems`, `maxItems`;
  and may carry `title`, `description` and a `default` of its own type (inside
  the enum, within the bounds).

Strict on purpose: any other keyword is invalid, including harmless-looking
annotations such as `examples` or `$comment`. Everything the host shows must go
through the sensitive-field and link stages, which know only the spec's
keywords; an unknown keyword would be an unscanned channel to the user, and a
structural one (`$ref`, `anyOf`, nested `properties`, `items` of objects) would
be silently ignored by hosts while meaning something else to the server.

Bounds (`SchemaLimits`): property count, property-name length, length of every
title / description / enum value / enumNames entry / option title / pattern /
`$schema`, the message length, enum size, and the serialized size of the whole
`requestedSchema` (`max_schema_bytes`).

Answers (`check_answer`): properties not in the schema are dropped (named in
`dropped`); a wrong type, a value outside the enum, out of range, of bad length
or not matching `format` is an error, and so is a missing required property.
`null` for an optional property means "not answered" and is left out. `bool`
is never a number; an integer property accepts `3` and `3.0` (JSON Schema: a
number with zero fractional part is an integer) and the value is passed on as
sent. `pattern` is not enforced: it is ECMA-262 syntax, not Python's, and a
server-chosen pattern run on user input is a denial-of-service risk; the host
and the server both validate it anyway. Problems and errors name paths, type
names, counts and keywords, never a value.
"""

from __future__ import annotations

import datetime
import math
import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import orjson


@dataclass(frozen=True, slots=True)
class SchemaLimits:
    max_properties: int = 32
    max_enum_values: int = 100
    max_text_length: int = 2000
    max_message_length: int = 4000
    max_name_length: int = 64
    max_schema_bytes: int = 64 * 1024


@dataclass(frozen=True, slots=True)
class AnswerCheck:
    content: dict[str, Any] | None
    """What the server may receive: schema properties with valid values; None when there are errors."""
    dropped: tuple[str, ...]
    """Names of properties not in the schema that were removed."""
    errors: tuple[str, ...]
    """`"<name>: <problem>"`, never the value; non-empty means the caller rejects the whole answer."""


_MAX_PROBLEMS = 20
_REPORTED_NAME_LENGTH = 64
_TOP_LEVEL_KEYS = frozenset(
    {"type", "properties", "required", "$schema", "title", "description", "additionalProperties"}
)
_ANNOTATION_KEYS = frozenset({"type", "title", "description", "default"})
# `writeOnly` and `format: password` are outside the spec subset but tolerated here: they mark a
# secret, and the sensitive-fields stage (next in order) then blocks with the reason that matters.
_STRING_KEYS = _ANNOTATION_KEYS | {"minLength", "maxLength", "pattern", "format", "writeOnly"}
_NUMBER_KEYS = _ANNOTATION_KEYS | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
_UNTITLED_ENUM_KEYS = _ANNOTATION_KEYS | {"enum", "enumNames"}
_TITLED_ENUM_KEYS = _ANNOTATION_KEYS | {"oneOf"}
_MULTI_SELECT_KEYS = _ANNOTATION_KEYS | {"items", "minItems", "maxItems"}
_STRING_FORMATS = frozenset({"email", "uri", "date", "date-time"})
_SECRET_FORMATS = frozenset({"password"})
_ACCEPTED_FORMATS = _STRING_FORMATS | _SECRET_FORMATS
_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_LOWER_BOUNDS = frozenset({"minimum", "exclusiveMinimum"})
_PRIMITIVE_TYPES = ("string", "number", "integer", "boolean", "array")
# Named so the problem says why, rather than "unknown keyword".
_STRUCTURAL_KEYWORDS = frozenset(
    {
        "$ref",
        "$defs",
        "definitions",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "properties",
        "additionalProperties",
        "patternProperties",
        "items",
        "prefixItems",
        "contains",
        "dependentSchemas",
        "const",
    }
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:\S+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


class _Problems:
    """Collects problems up to a cap, so a huge hostile schema costs bounded output."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, problem: str) -> None:
        if len(self.items) < _MAX_PROBLEMS:
            self.items.append(f"{path}: {problem}")

    @property
    def full(self) -> bool:
        return len(self.items) >= _MAX_PROBLEMS


def _type_name(value: object) -> str:
    """JSON type name of a value, for problems that must not quote the value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _keyword(key: object) -> str:
    """A server-chosen keyword, quoted and shortened for a problem message."""
    text = key if isinstance(key, str) else _type_name(key)
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def _is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    # Plain dicts first: the ABC check behind isinstance(value, Mapping) is several times slower.
    return isinstance(value, dict) or isinstance(value, Mapping)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_integer(value: object) -> bool:
    return _is_number(value) and (isinstance(value, int) or float(value).is_integer())


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_printable_name(name: str, max_length: int) -> bool:
    if not 0 < len(name) <= max_length or name.isspace():
        return False
    if name.isascii() and name.isprintable():
        return True  # the common case, without a per-character Unicode lookup
    # Zero-width (non-)joiners between two letters are spelling in Persian, Sinhala and Indic scripts
    # ("ප්‍රවර්ධන", "ల్యాండ్‌మార్క్"); anywhere else, and every other control or format character, they are not.
    return all(unicodedata.category(ch)[0] not in "CZ" or ch == " " or (
        ch in _JOINERS and 0 < i < len(name) - 1 and _in_word(name[i - 1]) and _in_word(name[i + 1]))
        for i, ch in enumerate(name))


_JOINERS: Final = frozenset("\u200c\u200d")


def _in_word(ch: str) -> bool:
    return not ch.isascii() and unicodedata.category(ch)[0] in "LM"


def schema_problems(params: Mapping[str, Any], limits: SchemaLimits = SchemaLimits()) -> list[str]:
    """Problems of form-mode `elicitation/create` params (message and requestedSchema); [] means valid."""
    problems = _Problems()
    try:
        _check_params(params, limits, problems)
    except Exception:  # fail closed: a checker surprise is a problem, never a crash
        problems.add("requestedSchema", "could not be checked")
    return problems.items


def _check_params(params: Mapping[str, Any], limits: SchemaLimits, problems: _Problems) -> None:
    if not _is_mapping(params):
        problems.add("params", f"expected object, got {_type_name(params)}")
        return
    mode = params.get("mode", "form")
    if mode != "form":
        problems.add("mode", "expected 'form'")
    message = params.get("message")
    if not isinstance(message, str):
        problems.add("message", f"expected string, got {_type_name(message)}")
    elif not message.strip():
        problems.add("message", "empty")
    elif len(message) > limits.max_message_length:
        problems.add("message", f"longer than {limits.max_message_length} characters")
    if "requestedSchema" not in params:
        problems.add("requestedSchema", "missing")
        return
    _check_requested_schema(params["requestedSchema"], limits, problems)


def _check_requested_schema(schema: object, limits: SchemaLimits, problems: _Problems) -> None:
    path = "requestedSchema"
    if not _is_mapping(schema):
        problems.add(path, f"expected object, got {_type_name(schema)}")
        return
    try:
        size = len(orjson.dumps(schema))
    except TypeError:
        problems.add(path, "not JSON-serializable")
        return
    if size > limits.max_schema_bytes:
        problems.add(path, f"larger than {limits.max_schema_bytes} bytes when serialized")
        return
    if not schema.keys() <= _TOP_LEVEL_KEYS:
        for key in schema:
            if key not in _TOP_LEVEL_KEYS:
                problems.add(path, f"keyword {_keyword(key)} is not allowed at the top level")
    if schema.get("type") != "object":
        problems.add(f"{path}.type", "must be 'object'")
    if "additionalProperties" in schema and schema["additionalProperties"] is not False:
        problems.add(f"{path}.additionalProperties", "only false is allowed")
    if "$schema" in schema:
        _check_text(schema["$schema"], f"{path}.$schema", limits, problems)
    for key in ("title", "description"):
        if key in schema:
            _check_text(schema[key], f"{path}.{key}", limits, problems)

    properties = schema.get("properties")
    if not _is_mapping(properties):
        problems.add(f"{path}.properties", f"expected object, got {_type_name(properties)}")
        return
    if len(properties) > limits.max_properties:
        problems.add(f"{path}.properties", f"{len(properties)} properties, more than {limits.max_properties}")
        return
    items = problems.items
    max_name = limits.max_name_length
    max_text = limits.max_text_length
    max_enum = limits.max_enum_values
    for index, (name, prop) in enumerate(properties.items()):
        if len(items) >= _MAX_PROBLEMS:
            return
        if (type(name) is str and 0 < len(name) <= max_name and name.isascii() and name.isprintable()
                and not name.isspace() and _plain_property_ok(prop, max_text, max_enum)):
            continue  # an ordinary valid property: the full check below would find nothing
        if isinstance(name, str) and _is_printable_name(name, limits.max_name_length):
            _check_property(prop, f"{path}.properties.{name}", limits, problems)
        else:
            problems.add(
                f"{path}.properties[#{index}]", f"property name must be 1-{limits.max_name_length} printable characters"
            )
    if "required" in schema:
        _check_required(schema["required"], properties, f"{path}.required", problems)


def _check_required(required: object, properties: Mapping[Any, Any], path: str, problems: _Problems) -> None:
    if not isinstance(required, list):
        problems.add(path, f"expected array, got {_type_name(required)}")
        return
    seen: set[str] = set()
    for index, name in enumerate(required):
        if not isinstance(name, str):
            problems.add(f"{path}[{index}]", f"expected string, got {_type_name(name)}")
        elif name in seen:
            problems.add(f"{path}[{index}]", "duplicate name")
        elif name not in properties:
            problems.add(f"{path}[{index}]", "names no property")
        else:
            seen.add(name)


def _text_ok(value: object, limits: SchemaLimits) -> bool:
    """What `_check_text` accepts; hot loops test this first and build a path only for a problem."""
    return isinstance(value, str) and len(value) <= limits.max_text_length


def _check_text(value: object, path: str, limits: SchemaLimits, problems: _Problems) -> None:
    if not isinstance(value, str):
        problems.add(path, f"expected string, got {_type_name(value)}")
    elif len(value) > limits.max_text_length:
        problems.add(path, f"longer than {limits.max_text_length} characters")


_PLAIN_STRING_KEYS = frozenset({"type", "title", "description", "format"})
_PLAIN_NUMBER_KEYS = frozenset({"type", "title", "description", "minimum", "maximum"})
_PLAIN_BOOLEAN_KEYS = _ANNOTATION_KEYS
_PLAIN_ENUM_KEYS = frozenset({"type", "title", "description", "enum"})


def _plain_property_ok(prop: object, max_text: int, max_enum: int) -> bool:
    """True only for a common, valid property shape on which `_check_property` adds no problem.

    A fast path, never a verdict: False means "run the full check", not "invalid".
    """
    if type(prop) is not dict:
        return False
    if "title" in prop:
        title = prop["title"]
        if type(title) is not str or len(title) > max_text:
            return False
    if "description" in prop:
        description = prop["description"]
        if type(description) is not str or len(description) > max_text:
            return False
    kind = prop.get("type")
    keys = prop.keys()
    if kind == "string" and type(kind) is str:
        if keys <= _PLAIN_STRING_KEYS:
            if "format" not in prop:
                return True
            fmt = prop["format"]
            return type(fmt) is str and fmt in _ACCEPTED_FORMATS
        if keys <= _PLAIN_ENUM_KEYS:
            values = prop["enum"]
            return (type(values) is list and 0 < len(values) <= max_enum
                    and all(type(v) is str and len(v) <= max_text for v in values)
                    and len(set(values)) == len(values))
        return False
    if (kind == "integer" or kind == "number") and type(kind) is str:
        if not keys <= _PLAIN_NUMBER_KEYS:
            return False
        has_low = "minimum" in prop
        has_high = "maximum" in prop
        if has_low and type(prop["minimum"]) is not int:
            return False
        if has_high and type(prop["maximum"]) is not int:
            return False
        return not (has_low and has_high) or prop["minimum"] <= prop["maximum"]
    if kind == "boolean" and type(kind) is str:
        return keys <= _PLAIN_BOOLEAN_KEYS and ("default" not in prop or type(prop["default"]) is bool)
    return False


def _check_property(prop: object, path: str, limits: SchemaLimits, problems: _Problems) -> None:
    if not _is_mapping(prop):
        problems.add(path, f"expected object, got {_type_name(prop)}")
        return
    kind = prop.get("type")
    if kind == "object" or (kind is None and "properties" in prop):
        problems.add(path, "nested objects are not allowed")
        return
    if "$ref" in prop:
        problems.add(path, "$ref is not allowed")
        return
    if not isinstance(kind, str) or kind not in _PRIMITIVE_TYPES:
        shown = _keyword(kind) if isinstance(kind, str) else _type_name(kind)
        problems.add(f"{path}.type", f"must be one of {', '.join(_PRIMITIVE_TYPES)} (got {shown})")
        return
    for key in ("title", "description"):
        if key in prop and not _text_ok(prop[key], limits):
            _check_text(prop[key], f"{path}.{key}", limits, problems)
    if kind == "string" and "enum" in prop and "oneOf" in prop:
        problems.add(path, "use either enum or oneOf, not both")
    elif kind == "string" and "enum" in prop:
        _check_keys(prop, _UNTITLED_ENUM_KEYS, path, problems)
        _check_untitled_enum(prop, path, limits, problems)
    elif kind == "string" and "oneOf" in prop:
        _check_keys(prop, _TITLED_ENUM_KEYS, path, problems)
        _check_options(prop["oneOf"], f"{path}.oneOf", limits, problems)
    elif kind == "string":
        _check_keys(prop, _STRING_KEYS, path, problems)
        _check_string(prop, path, limits, problems)
    elif kind in ("number", "integer"):
        _check_keys(prop, _NUMBER_KEYS, path, problems)
        _check_number(prop, path, problems)
    elif kind == "boolean":
        _check_keys(prop, _ANNOTATION_KEYS, path, problems)
    else:
        _check_keys(prop, _MULTI_SELECT_KEYS, path, problems)
        _check_multi_select(prop, path, limits, problems)
    if "default" in prop and not problems.full:
        error = _value_error(prop, prop["default"])
        if error is not None:
            problems.add(f"{path}.default", error)


def _check_keys(prop: Mapping[Any, Any], allowed: frozenset[str], path: str, problems: _Problems) -> None:
    if prop.keys() <= allowed:  # the common case, in one C-level set comparison
        return
    for key in prop:
        if key in allowed:
            continue
        if key in _STRUCTURAL_KEYWORDS:
            problems.add(path, f"keyword {_keyword(key)} is not allowed here")
        else:
            problems.add(path, f"unknown keyword {_keyword(key)}")


def _check_bounds(prop: Mapping[Any, Any], low: str, high: str, path: str, problems: _Problems) -> None:
    for key in (low, high):
        if key in prop and not _is_count(prop[key]):
            problems.add(f"{path}.{key}", "expected a non-negative integer")
    lo, hi = prop.get(low), prop.get(high)
    if _is_count(lo) and _is_count(hi) and lo > hi:
        problems.add(path, f"{low} is greater than {high}")


def _check_string(prop: Mapping[Any, Any], path: str, limits: SchemaLimits, problems: _Problems) -> None:
    _check_bounds(prop, "minLength", "maxLength", path, problems)
    if "pattern" in prop:
        _check_text(prop["pattern"], f"{path}.pattern", limits, problems)
    if "format" in prop and prop["format"] not in _ACCEPTED_FORMATS:
        problems.add(f"{path}.format", f"must be one of {', '.join(sorted(_STRING_FORMATS))}")
    if "writeOnly" in prop and not isinstance(prop["writeOnly"], bool):
        problems.add(f"{path}.writeOnly", "expected a boolean")


def _check_number(prop: Mapping[Any, Any], path: str, problems: _Problems) -> None:
    lows: list[int | float] = []
    highs: list[int | float] = []
    for key in _NUMBER_BOUNDS:
        if key in prop:
            value = prop[key]
            if _is_number(value):
                (lows if key in _LOWER_BOUNDS else highs).append(value)
            else:
                problems.add(f"{path}.{key}", f"expected a finite number, got {_type_name(value)}")
    if lows and highs and max(lows) > min(highs):
        problems.add(path, "minimum is greater than maximum")


def _check_enum_values(values: object, path: str, limits: SchemaLimits, problems: _Problems) -> bool:
    if not isinstance(values, list) or not values:
        problems.add(path, "expected a non-empty array of strings")
        return False
    if len(values) > limits.max_enum_values:
        problems.add(path, f"{len(values)} values, more than {limits.max_enum_values}")
        return False
    for index, value in enumerate(values):
        if not _text_ok(value, limits):
            _check_text(value, f"{path}[{index}]", limits, problems)
    if len({v for v in values if isinstance(v, str)}) != len(values):
        problems.add(path, "values must be unique")
    return True


def _check_untitled_enum(prop: Mapping[Any, Any], path: str, limits: SchemaLimits, problems: _Problems) -> None:
    if not _check_enum_values(prop["enum"], f"{path}.enum", limits, problems):
        return
    if "enumNames" in prop:
        names = prop["enumNames"]
        if not isinstance(names, list) or len(names) != len(prop["enum"]):
            problems.add(f"{path}.enumNames", "expected an array of strings as long as enum")
            return
        for index, name in enumerate(names):
            _check_text(name, f"{path}.enumNames[{index}]", limits, problems)


def _check_options(options: object, path: str, limits: SchemaLimits, problems: _Problems) -> None:
    """`oneOf` / `anyOf` of `{const, title}`: the titled enum form."""
    if not isinstance(options, list) or not options:
        problems.add(path, "expected a non-empty array of {const, title}")
        return
    if len(options) > limits.max_enum_values:
        problems.add(path, f"{len(options)} options, more than {limits.max_enum_values}")
        return
    consts: set[str] = set()
    for index, option in enumerate(options):
        option_path = f"{path}[{index}]"
        if not isinstance(option, Mapping) or set(option) != {"const", "title"}:
            problems.add(option_path, "expected exactly {const, title}")
            continue
        _check_text(option["const"], f"{option_path}.const", limits, problems)
        _check_text(option["title"], f"{option_path}.title", limits, problems)
        if isinstance(option["const"], str):
            if option["const"] in consts:
                problems.add(option_path, "duplicate const")
            consts.add(option["const"])


def _check_multi_select(prop: Mapping[Any, Any], path: str, limits: SchemaLimits, problems: _Problems) -> None:
    _check_bounds(prop, "minItems", "maxItems", path, problems)
    items = prop.get("items")
    items_path = f"{path}.items"
    if not isinstance(items, Mapping):
        problems.add(items_path, "expected {enum} or {anyOf} of strings (arrays of other things are not allowed)")
        return
    # The SDK's untitled form requires `type: "string"`; its titled (`anyOf`) form omits it.
    if items.get("type", None if "enum" in items else "string") != "string":
        problems.add(f"{items_path}.type", "must be 'string'")
        return
    if "enum" in items and "anyOf" in items:
        problems.add(items_path, "use either enum or anyOf, not both")
        return
    if "enum" in items:
        _check_keys(items, frozenset({"type", "enum"}), items_path, problems)
        ok = _check_enum_values(items["enum"], f"{items_path}.enum", limits, problems)
    elif "anyOf" in items:
        _check_keys(items, frozenset({"type", "anyOf"}), items_path, problems)
        _check_options(items["anyOf"], f"{items_path}.anyOf", limits, problems)
        ok = isinstance(items["anyOf"], list)
    else:
        problems.add(items_path, "expected enum or anyOf")
        return
    min_items = prop.get("minItems")
    if ok and _is_count(min_items) and min_items > len(_allowed_values(prop) or ()):
        problems.add(path, "minItems is larger than the number of options")


# --- values: shared by `default` checking and answer checking ---------------------------------------


def _allowed_values(prop: Mapping[Any, Any]) -> frozenset[str] | None:
    """The options of a single- or multi-select property, or None when it has none."""
    source: Any = prop.get("items") if prop.get("type") == "array" else prop
    if not isinstance(source, Mapping):
        return None
    if isinstance(source.get("enum"), list):
        return frozenset(v for v in source["enum"] if isinstance(v, str))
    options = source.get("oneOf", source.get("anyOf"))
    if isinstance(options, list):
        return frozenset(o["const"] for o in options if isinstance(o, Mapping) and isinstance(o.get("const"), str))
    return None


def _format_error(fmt: object, value: str) -> str | None:
    if fmt == "email" and not _EMAIL.fullmatch(value):
        return "not a valid email"
    if fmt == "uri" and not _URI.fullmatch(value):
        return "not a valid uri"
    try:
        if fmt == "date" and not (_DATE.fullmatch(value) and datetime.date.fromisoformat(value)):
            return "not a valid date"
        if fmt == "date-time" and not (_DATE_TIME.fullmatch(value) and datetime.datetime.fromisoformat(value)):
            return "not a valid date-time"
    except ValueError:
        return f"not a valid {fmt}"
    return None


def _string_error(prop: Mapping[Any, Any], value: object) -> str | None:
    if not isinstance(value, str):
        return f"expected string, got {_type_name(value)}"
    options = _allowed_values(prop)
    if options is not None:
        return None if value in options else "not one of the allowed values"
    min_length, max_length = prop.get("minLength"), prop.get("maxLength")
    if _is_count(min_length) and len(value) < min_length:
        return f"shorter than {min_length} characters"
    if _is_count(max_length) and len(value) > max_length:
        return f"longer than {max_length} characters"
    return _format_error(prop.get("format"), value) if "format" in prop else None


def _number_error(prop: Mapping[Any, Any], value: object) -> str | None:
    kind = prop["type"]
    if not (_is_integer(value) if kind == "integer" else _is_number(value)):
        return f"expected {kind}, got {_type_name(value)}"
    number: float = value  # type: ignore[assignment]
    minimum, maximum = prop.get("minimum"), prop.get("maximum")
    low, high = prop.get("exclusiveMinimum"), prop.get("exclusiveMaximum")
    if (_is_number(minimum) and number < minimum) or (_is_number(low) and number <= low):
        return "below the minimum"
    if (_is_number(maximum) and number > maximum) or (_is_number(high) and number >= high):
        return "above the maximum"
    return None


def _multi_select_error(prop: Mapping[Any, Any], value: object) -> str | None:
    if not isinstance(value, list):
        return f"expected array, got {_type_name(value)}"
    options = _allowed_values(prop) or frozenset()
    if not all(isinstance(item, str) and item in options for item in value):
        return "contains a value that is not one of the allowed values"
    if len(set(value)) != len(value):
        return "contains duplicate values"
    min_items, max_items = prop.get("minItems"), prop.get("maxItems")
    if _is_count(min_items) and len(value) < min_items:
        return f"fewer than {min_items} items"
    if _is_count(max_items) and len(value) > max_items:
        return f"more than {max_items} items"
    return None


def _value_error(prop: Mapping[Any, Any], value: object) -> str | None:
    """Why `value` does not fit property schema `prop`, without quoting the value; None when it fits."""
    kind = prop.get("type")
    if kind == "string":
        return _string_error(prop, value)
    if kind in ("number", "integer"):
        return _number_error(prop, value)
    if kind == "boolean":
        return None if isinstance(value, bool) else f"expected boolean, got {_type_name(value)}"
    if kind == "array":
        return _multi_select_error(prop, value)
    return "property schema is not supported"


def _safe_name(name: object) -> str:
    """A host-chosen key, reported only when short and printable."""
    if isinstance(name, str) and _is_printable_name(name, _REPORTED_NAME_LENGTH):
        return name
    return "<unprintable name>"


def _answer_items(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[Any, Any]]]:
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, prop in properties.items():
            if isinstance(name, str):
                yield name, prop if isinstance(prop, Mapping) else {}


def check_answer(schema: Mapping[str, Any], content: object) -> AnswerCheck:
    """Check the host's `content` for an accepted form against `schema` (the requestedSchema). Never raises."""
    try:
        return _check_answer(schema, content)
    except Exception:  # fail closed
        return AnswerCheck(content=None, dropped=(), errors=("content: could not be checked",))


def _check_answer(schema: Mapping[str, Any], content: object) -> AnswerCheck:
    if not isinstance(content, Mapping):
        return AnswerCheck(None, (), (f"content: expected object, got {_type_name(content)}",))
    properties = dict(_answer_items(schema))
    raw_required = schema.get("required")
    required = set(raw_required) & set(properties) if isinstance(raw_required, list) else set()
    dropped = tuple(_safe_name(key) for key in content if not isinstance(key, str) or key not in properties)
    accepted: dict[str, Any] = {}
    errors: list[str] = []
    for name, prop in properties.items():
        value = content.get(name)
        if value is None:  # absent, or null meaning "not answered"
            if name in required:
                errors.append(f"{name}: required")
            continue
        error = _value_error(prop, value)
        if error is None:
            accepted[name] = value
        else:
            errors.append(f"{name}: {error}")
    return AnswerCheck(None if errors else accepted, dropped, tuple(errors))
