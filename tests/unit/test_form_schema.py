"""Form-mode schema subset and answer checking."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.server.elicitation import render_elicitation_schema
from mcp_types._v2025_11_25 import PrimitiveSchemaDefinition
from pydantic import BaseModel, Field, TypeAdapter

from gateway.policy.form_schema import AnswerCheck, SchemaLimits, check_answer, schema_problems


def form(schema: dict[str, Any], message: str = "Tell us about your trip.") -> dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": schema}


def props(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


# --- valid shapes ----------------------------------------------------------------------------------

VALID_PROPERTIES: dict[str, dict[str, Any]] = {
    "string": {"type": "string"},
    "string_full": {
        "type": "string",
        "title": "Name",
        "description": "Your name",
        "default": "Ann",
        "minLength": 1,
        "maxLength": 50,
        "pattern": "^[A-Za-z ]+$",
    },
    "email": {"type": "string", "format": "email"},
    "uri": {"type": "string", "format": "uri", "minLength": 1},
    "date": {"type": "string", "format": "date"},
    "date_time": {"type": "string", "format": "date-time"},
    "number": {"type": "number", "minimum": 0.5, "maximum": 9.5, "default": 1.5},
    "integer": {"type": "integer", "minimum": 1, "maximum": 12, "title": "Guests", "default": 2},
    "exclusive": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 100},
    "boolean": {"type": "boolean", "default": False, "title": "Vegetarian"},
    "enum": {"type": "string", "enum": ["s", "m", "l"], "default": "m"},
    "legacy_enum": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
    "titled_enum": {
        "type": "string",
        "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Mid"}],
        "default": "s",
    },
    "multi": {
        "type": "array",
        "items": {"type": "string", "enum": ["a", "b", "c"]},
        "minItems": 1,
        "maxItems": 2,
        "default": ["a"],
    },
    "multi_titled": {
        "type": "array",
        "items": {"anyOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
        "default": [],
    },
}


@pytest.mark.parametrize("name", sorted(VALID_PROPERTIES))
def test_every_valid_property_shape_is_accepted(name: str) -> None:
    prop = VALID_PROPERTIES[name]
    assert schema_problems(form(props(field=prop))) == []
    # The SDK's own model agrees that each shape is a PrimitiveSchemaDefinition.
    TypeAdapter(PrimitiveSchemaDefinition).validate_python(
        {k: v for k, v in prop.items() if k not in ("pattern", "exclusiveMinimum", "exclusiveMaximum")}
    )


def test_all_shapes_together_with_required_and_top_level_annotations() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Booking",
        "description": "Pick a table.",
        "additionalProperties": False,
        **props(**VALID_PROPERTIES),
        "required": ["string", "multi"],
    }
    assert schema_problems(form(schema)) == []


def test_mode_may_be_absent_and_required_may_be_empty() -> None:
    params = {"message": "Your size?", "requestedSchema": {**props(size=VALID_PROPERTIES["enum"]), "required": []}}
    assert schema_problems(params) == []


def test_empty_properties_are_valid() -> None:
    assert schema_problems(form(props())) == []


class Booking(BaseModel):
    """Pick a table."""

    name: str = Field(description="Your name", min_length=1, max_length=50)
    guests: int = Field(ge=1, le=12)
    budget: float | None = None
    vegetarian: bool = False
    size: str = Field(default="m", json_schema_extra={"enum": ["s", "m", "l"]})


class Positive(BaseModel):
    count: int = Field(gt=0, lt=10)


@pytest.mark.parametrize("model", [Booking, Positive])
def test_schemas_rendered_by_the_sdk_are_accepted(model: type[BaseModel]) -> None:
    schema = render_elicitation_schema(model)
    assert schema_problems(form(schema)) == []


SDK_DOC_EXAMPLES: list[dict[str, Any]] = [
    # The spec/SDK documentation examples for form mode.
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Your full name"},
            "email": {"type": "string", "format": "email", "description": "Your email address"},
            "age": {"type": "number", "minimum": 18, "description": "Your age"},
        },
        "required": ["name", "email"],
    },
    {
        "type": "object",
        "properties": {
            "color": {
                "type": "string",
                "title": "Color Selection",
                "oneOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#00FF00", "title": "Green"}],
                "default": "#FF0000",
            }
        },
    },
    {
        "type": "object",
        "properties": {
            "colors": {
                "type": "array",
                "title": "Color Selection",
                "minItems": 1,
                "maxItems": 2,
                "items": {"anyOf": [{"const": "#FF0000", "title": "Red"}, {"const": "#00FF00", "title": "Green"}]},
                "default": ["#00FF00"],
            }
        },
    },
]


@pytest.mark.parametrize("schema", SDK_DOC_EXAMPLES)
def test_spec_examples_are_accepted(schema: dict[str, Any]) -> None:
    assert schema_problems(form(schema)) == []


# --- invalid shapes --------------------------------------------------------------------------------

INVALID_SCHEMAS: dict[str, tuple[Any, str]] = {
    # name: (requestedSchema, a fragment the first problem must contain)
    "not_object": ([], "requestedSchema: expected object"),
    "type_array": ({"type": "array", "properties": {}}, "requestedSchema.type: must be 'object'"),
    "type_missing": ({"properties": {}}, "requestedSchema.type"),
    "properties_missing": ({"type": "object"}, "requestedSchema.properties: expected object"),
    "properties_list": ({"type": "object", "properties": []}, "requestedSchema.properties: expected object"),
    "top_level_ref": ({**props(), "$ref": "#/x"}, "keyword '$ref' is not allowed at the top level"),
    "top_level_defs": ({**props(), "$defs": {}}, "'$defs'"),
    "top_level_additional_true": ({**props(), "additionalProperties": True}, "only false"),
    "top_level_title_number": ({**props(), "title": 3}, "requestedSchema.title: expected string"),
    "nested_object": (
        props(address={"type": "object", "properties": {"city": {"type": "string"}}}),
        "requestedSchema.properties.address: nested objects are not allowed",
    ),
    "untyped_nested": (props(address={"properties": {"city": {"type": "string"}}}), "nested objects"),
    "ref_property": (props(a={"$ref": "#/$defs/A"}), "$ref is not allowed"),
    "array_of_objects": (
        props(a={"type": "array", "items": {"type": "object", "properties": {}}}),
        "requestedSchema.properties.a.items.type: must be 'string'",
    ),
    "array_of_strings_free": (props(a={"type": "array", "items": {"type": "string"}}), "expected enum or anyOf"),
    "array_no_items": (props(a={"type": "array"}), "requestedSchema.properties.a.items"),
    "array_enum_untyped_items": (props(a={"type": "array", "items": {"enum": ["x"]}}), "items.type: must be"),
    "type_null": (props(a={"type": "null"}), "must be one of"),
    "type_list": (props(a={"type": ["string", "null"]}), "must be one of"),
    "type_missing_prop": (props(a={"title": "A"}), "must be one of"),
    "anyof_union": (props(a={"anyOf": [{"type": "string"}, {"type": "null"}]}), "must be one of"),
    "unknown_keyword": (props(a={"type": "string", "examples": ["x"]}), "unknown keyword 'examples'"),
    "const_keyword": (props(a={"type": "string", "const": "x"}), "keyword 'const' is not allowed here"),
    "bad_format": (props(a={"type": "string", "format": "hostname"}), "format: must be one of"),
    "min_gt_max_len": (props(a={"type": "string", "minLength": 5, "maxLength": 2}), "minLength is greater"),
    "negative_len": (props(a={"type": "string", "minLength": -1}), "non-negative integer"),
    "bool_len": (props(a={"type": "string", "maxLength": True}), "non-negative integer"),
    "min_gt_max_num": (props(a={"type": "integer", "minimum": 5, "maximum": 1}), "minimum is greater"),
    "string_minimum": (props(a={"type": "number", "minimum": "1"}), "expected a finite number"),
    "number_with_length": (props(a={"type": "number", "maxLength": 3}), "unknown keyword 'maxLength'"),
    "boolean_enum": (props(a={"type": "boolean", "enum": [True]}), "unknown keyword 'enum'"),
    "empty_enum": (props(a={"type": "string", "enum": []}), "non-empty array"),
    "number_enum": (props(a={"type": "number", "enum": [1, 2]}), "unknown keyword 'enum'"),
    "enum_non_string": (props(a={"type": "string", "enum": ["a", 1]}), "enum[1]: expected string"),
    "enum_duplicates": (props(a={"type": "string", "enum": ["a", "a"]}), "unique"),
    "enum_names_length": (props(a={"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}), "as long as enum"),
    "enum_and_oneof": (
        props(a={"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]}),
        "either enum or oneOf",
    ),
    "oneof_no_title": (props(a={"type": "string", "oneOf": [{"const": "a"}]}), "exactly {const, title}"),
    "oneof_extra_key": (
        props(a={"type": "string", "oneOf": [{"const": "a", "title": "A", "x": 1}]}),
        "exactly {const, title}",
    ),
    "oneof_dup": (
        props(a={"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "a", "title": "B"}]}),
        "duplicate const",
    ),
    "enum_format_mix": (props(a={"type": "string", "enum": ["a"], "format": "email"}), "unknown keyword 'format'"),
    "default_wrong_type": (props(a={"type": "integer", "default": "3"}), "default: expected integer"),
    "default_not_in_enum": (props(a={"type": "string", "enum": ["a"], "default": "b"}), "default: not one of"),
    "default_out_of_range": (props(a={"type": "number", "maximum": 1, "default": 2}), "default: above the maximum"),
    "multi_min_items_too_big": (
        props(a={"type": "array", "items": {"type": "string", "enum": ["x"]}, "minItems": 2}),
        "minItems is larger",
    ),
    "multi_enum_and_anyof": (
        props(a={"type": "array", "items": {"type": "string", "enum": ["x"], "anyOf": [{"const": "x", "title": "X"}]}}),
        "either enum or anyOf",
    ),
    "required_not_list": ({**props(a={"type": "string"}), "required": "a"}, "required: expected array"),
    "required_unknown": ({**props(a={"type": "string"}), "required": ["b"]}, "required[0]: names no property"),
    "required_dup": ({**props(a={"type": "string"}), "required": ["a", "a"]}, "duplicate"),
    "empty_name": (props(**{"": {"type": "string"}}), "properties[#0]: property name"),
    "control_name": (props(**{"a\nb": {"type": "string"}}), "properties[#0]: property name"),
    "property_not_object": (props(a="string"), "requestedSchema.properties.a: expected object"),
}


@pytest.mark.parametrize("name", sorted(INVALID_SCHEMAS))
def test_every_invalid_shape_is_rejected(name: str) -> None:
    schema, fragment = INVALID_SCHEMAS[name]
    problems = schema_problems(form(schema))
    assert problems, name
    assert any(fragment in p for p in problems), problems


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"mode": "form", "requestedSchema": props()}, "message: expected string"),
        (form(props(), message="   "), "message: empty"),
        ({"mode": "form", "message": 3, "requestedSchema": props()}, "message: expected string"),
        ({"mode": "url", "message": "x", "requestedSchema": props()}, "mode: expected 'form'"),
        ({"mode": "form", "message": "x"}, "requestedSchema: missing"),
        (
            {"mode": "form", "message": "x", "requestedSchema": {"type": "object", "properties": {1: {}}}},
            "requestedSchema: not JSON-serializable",
        ),
    ],
)
def test_params_problems(params: dict[str, Any], fragment: str) -> None:
    assert any(fragment in p for p in schema_problems(params))


def test_problems_never_quote_values() -> None:
    secret_like = "Zq9-unique-marker"
    schema = props(
        a={"type": "string", "enum": ["x"], "default": secret_like}, b={"type": "integer", "default": secret_like}
    )
    problems = schema_problems(form(schema, message=secret_like * 1000))
    assert problems
    assert not any(secret_like in p for p in problems)


def test_problem_count_is_capped() -> None:
    schema = props(**{f"p{i}": {"type": "nope"} for i in range(30)})
    assert len(schema_problems(form(schema))) == 20


# --- bounds ----------------------------------------------------------------------------------------

LIMITS = SchemaLimits(
    max_properties=3,
    max_enum_values=3,
    max_text_length=10,
    max_message_length=20,
    max_name_length=5,
    max_schema_bytes=2000,
)


@pytest.mark.parametrize(
    ("params", "ok"),
    [
        (form(props(a={"type": "string"}, b={"type": "string"}, c={"type": "string"}), "short"), True),
        (
            form(
                props(a={"type": "string"}, b={"type": "string"}, c={"type": "string"}, d={"type": "string"}), "short"
            ),
            False,
        ),
        (form(props(a={"type": "string", "enum": ["1", "2", "3"]}), "short"), True),
        (form(props(a={"type": "string", "enum": ["1", "2", "3", "4"]}), "short"), False),
        (form(props(a={"type": "array", "items": {"type": "string", "enum": ["1", "2", "3", "4"]}}), "short"), False),
        (
            form(props(a={"type": "string", "oneOf": [{"const": str(i), "title": "t"} for i in range(4)]}), "short"),
            False,
        ),
        (form(props(a={"type": "string", "title": "x" * 10}), "short"), True),
        (form(props(a={"type": "string", "title": "x" * 11}), "short"), False),
        (form(props(a={"type": "string", "description": "x" * 11}), "short"), False),
        (form(props(a={"type": "string", "enum": ["x" * 11]}), "short"), False),
        (form(props(a={"type": "string", "enum": ["x"], "enumNames": ["x" * 11]}), "short"), False),
        (form(props(a={"type": "string", "pattern": "x" * 11}), "short"), False),
        (form({**props(), "title": "x" * 11}, "short"), False),
        (form(props(), "x" * 20), True),
        (form(props(), "x" * 21), False),
        (form(props(abcde={"type": "string"}), "short"), True),
        (form(props(abcdef={"type": "string"}), "short"), False),
        (form({**props(), "$schema": "y" * 3000}, "short"), False),
    ],
)
def test_bounds(params: dict[str, Any], ok: bool) -> None:
    assert (schema_problems(params, LIMITS) == []) is ok


def test_default_limits() -> None:
    assert schema_problems(form(props(**{f"p{i}": {"type": "string"} for i in range(32)}))) == []
    assert schema_problems(form(props(**{f"p{i}": {"type": "string"} for i in range(33)})))
    assert schema_problems(form(props(a={"type": "string", "enum": [str(i) for i in range(100)]}))) == []
    assert schema_problems(form(props(a={"type": "string", "enum": [str(i) for i in range(101)]})))
    assert schema_problems(form(props(), "m" * 4000)) == []
    assert schema_problems(form(props(), "m" * 4001))


def test_not_json_serializable_schema_is_a_problem() -> None:
    assert schema_problems(form({"type": "object", "properties": {"a": {"type": "string", "title": object()}}}))


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=12,
    )
)
def test_schema_problems_never_raises(schema: Any) -> None:
    assert isinstance(schema_problems(form(props(a=schema))), list)
    assert isinstance(schema_problems({"requestedSchema": schema, "message": "m"}), list)


# --- answers ---------------------------------------------------------------------------------------

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "age": {"type": "integer", "minimum": 18, "maximum": 120},
        "score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        "ok": {"type": "boolean"},
        "size": {"type": "string", "enum": ["s", "m"]},
        "color": {"type": "string", "oneOf": [{"const": "red", "title": "Red"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2},
        "tags2": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
        "mail": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
    },
    "required": ["name"],
}

FULL_ANSWER: dict[str, Any] = {
    "name": "Ann",
    "age": 30,
    "score": 0.5,
    "ok": True,
    "size": "m",
    "color": "red",
    "tags": ["a", "c"],
    "tags2": ["x"],
    "mail": "ann@example.net",
    "site": "https://example.net/x",
    "day": "2025-02-28",
    "at": "2025-02-28T10:00:00Z",
}


def test_valid_answer_passes_unchanged() -> None:
    result = check_answer(ANSWER_SCHEMA, copy.deepcopy(FULL_ANSWER))
    assert result == AnswerCheck(content=FULL_ANSWER, dropped=(), errors=())


def test_extra_properties_are_dropped_by_name() -> None:
    result = check_answer(ANSWER_SCHEMA, {"name": "Ann", "extra": "x", "more": 1})
    assert result.content == {"name": "Ann"}
    assert result.dropped == ("extra", "more")
    assert result.errors == ()


def test_unprintable_dropped_names_are_not_echoed() -> None:
    result = check_answer(ANSWER_SCHEMA, {"name": "Ann", "x" * 200: 1, "a\nb": 2})
    assert result.dropped == ("<unprintable name>", "<unprintable name>")


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("name", 5, "name: expected string, got number"),
        ("name", "A", "name: shorter than 2 characters"),
        ("name", "Annabel", "name: longer than 5 characters"),
        ("age", "30", "age: expected integer, got string"),
        ("age", True, "age: expected integer, got boolean"),
        ("age", 30.5, "age: expected integer, got number"),
        ("age", 17, "age: below the minimum"),
        ("age", 121, "age: above the maximum"),
        ("age", float("nan"), "age: expected integer, got number"),
        ("score", 0, "score: below the minimum"),
        ("score", False, "score: expected number, got boolean"),
        ("score", float("inf"), "score: expected number, got number"),
        ("ok", "true", "ok: expected boolean, got string"),
        ("ok", 1, "ok: expected boolean, got number"),
        ("size", "xl", "size: not one of the allowed values"),
        ("size", ["s"], "size: expected string, got array"),
        ("color", "blue", "color: not one of the allowed values"),
        ("tags", "a", "tags: expected array, got string"),
        ("tags", ["a", "z"], "tags: contains a value that is not one of the allowed values"),
        ("tags", ["a", 1], "tags: contains a value that is not one of the allowed values"),
        ("tags", ["a", "a"], "tags: contains duplicate values"),
        ("tags", [], "tags: fewer than 1 items"),
        ("tags", ["a", "b", "c"], "tags: more than 2 items"),
        ("tags2", ["y"], "tags2: contains a value that is not one of the allowed values"),
        ("mail", "not-an-address", "mail: not a valid email"),
        ("site", "no scheme here", "site: not a valid uri"),
        ("day", "2025-02-30", "day: not a valid date"),
        ("day", "28.02.2025", "day: not a valid date"),
        ("at", "2025-02-28", "at: not a valid date-time"),
        ("at", "2025-02-28T25:00:00Z", "at: not a valid date-time"),
    ],
)
def test_wrong_values_are_errors_without_the_value(field: str, value: Any, error: str) -> None:
    result = check_answer(ANSWER_SCHEMA, {**FULL_ANSWER, field: value})
    assert result.content is None
    assert result.errors == (error,)
    if isinstance(value, str) and len(value) > 4:
        assert not any(value in e for e in result.errors)


def test_integer_accepts_whole_floats() -> None:
    result = check_answer(ANSWER_SCHEMA, {"name": "Ann", "age": 30.0})
    assert result.errors == ()
    assert result.content == {"name": "Ann", "age": 30.0}


def test_missing_required_is_an_error_and_null_optional_is_unanswered() -> None:
    assert check_answer(ANSWER_SCHEMA, {"age": 30}).errors == ("name: required",)
    assert check_answer(ANSWER_SCHEMA, {"name": None}).errors == ("name: required",)
    result = check_answer(ANSWER_SCHEMA, {"name": "Ann", "age": None})
    assert result == AnswerCheck(content={"name": "Ann"}, dropped=(), errors=())


@pytest.mark.parametrize("content", [None, [], "x", 3, [("name", "Ann")]])
def test_content_must_be_an_object(content: object) -> None:
    result = check_answer(ANSWER_SCHEMA, content)
    assert result.content is None
    assert len(result.errors) == 1
    assert result.errors[0].startswith("content: expected object")


def test_all_errors_are_reported() -> None:
    result = check_answer(ANSWER_SCHEMA, {"age": "x", "ok": 3})
    assert result.errors == ("name: required", "age: expected integer, got string", "ok: expected boolean, got number")


def test_answer_against_unsupported_property_schema_is_an_error() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object"}}}
    assert check_answer(schema, {"a": {}}).errors == ("a: property schema is not supported",)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*ANSWER_SCHEMA["properties"], "other"]),
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats()
        | st.text(max_size=8)
        | st.lists(st.sampled_from(["a", "b", "c", "x", "z"]), max_size=4),
    )
)
def test_check_answer_content_only_holds_schema_properties(content: dict[str, Any]) -> None:
    result = check_answer(ANSWER_SCHEMA, content)
    if result.errors:
        assert result.content is None
    else:
        assert result.content is not None
        assert set(result.content) <= set(ANSWER_SCHEMA["properties"])
        assert "name" in result.content
        assert all(content[k] == v or v != v for k, v in result.content.items())


def test_secret_markers_are_left_to_the_sensitive_stage() -> None:
    """`format: password` / `writeOnly` pass this stage so sensitive_fields names the real reason."""
    assert schema_problems(form(props(a={"type": "string", "format": "password"}))) == []
    assert schema_problems(form(props(a={"type": "string", "writeOnly": True}))) == []
    assert schema_problems(form(props(a={"type": "string", "writeOnly": "yes"})))
    assert schema_problems(form(props(a={"type": "integer", "writeOnly": True})))


@pytest.mark.parametrize("name", ["ප්\u200dරවර්ධන", "ల్యాండ్\u200cమార్క్", "می\u200cخواهم"])
def test_a_joiner_inside_a_word_of_a_script_that_spells_with_it_is_a_valid_name(name: str) -> None:
    assert schema_problems(form(props(**{name: {"type": "string", "title": "t"}}))) == []


@pytest.mark.parametrize("name", ["\u200cname", "pass\u200dword", "ప\u200b", "a\u200c"])
def test_a_joiner_anywhere_else_or_another_format_character_is_no_valid_name(name: str) -> None:
    assert schema_problems(form(props(**{name: {"type": "string", "title": "t"}})))
