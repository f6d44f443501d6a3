"""Writes (or checks) docs/configuration.md, the configuration reference, from the pydantic models.

Every key of the gateway config file and of the policy file: its type, default and
the docstring written under the field in gateway/config.py and
gateway/policy/policy_config.py. `make lint` fails when the file is stale.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import textwrap
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from gateway.config import GatewayConfig
from gateway.generated_files import write_or_check
from gateway.policy.policy_config import PolicyFile

HEADER = """# Configuration reference

Generated from the models in `gateway/config.py` and `gateway/policy/policy_config.py`
by `python -m gateway.config_reference docs/configuration.md`; `make lint` fails when
it is stale. Unknown keys are errors everywhere. `${ENV_VAR}` (or `${ENV_VAR:-default}`)
is expanded in string values. `elicitation-gateway check --config FILE` validates a
config and every policy it names; `elicitation-gateway policies schema` prints the
policy file's JSON Schema.

What a live reload applies (SIGHUP or a file change) and what needs a restart:
see [operations.md](operations.md#live-reload).
"""


def _docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Field name -> the string literal right below it in the class body."""
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, following in itertools.pairwise(body):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(
                following, ast.Expr) and isinstance(following.value, ast.Constant) and isinstance(
                    following.value.value, str):
                out[node.target.id] = " ".join(inspect.cleandoc(following.value.value).split())
    return out


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " \\| ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(_type_name(a) for a in args)
    if origin is dict:
        return f"map of {_type_name(args[0])} to {_type_name(args[1])}"
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "mapping"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        return "(see below)"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


def _constraints(field: FieldInfo) -> str:
    parts = []
    for meta in field.metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "min items")):
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) is dict:
        value = typing.get_args(annotation)[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value
    return None


def _section(model: type[BaseModel], prefix: str, out: list[str]) -> None:
    docs = _docstrings(model)
    intro = inspect.getdoc(model)
    heading = f"### `{prefix}`" if prefix else "### top level"
    out.append(heading + "\n")
    if intro and model.__doc__ and model.__doc__ != BaseModel.__doc__:
        out.append(" ".join(intro.split()) + "\n")
    out.append("| key | type | default | description |\n|---|---|---|---|")
    nested: list[tuple[str, type[BaseModel]]] = []
    for name, field in model.model_fields.items():
        description = docs.get(name, "").replace("|", "\\|")
        limits = _constraints(field)
        if limits:
            description = f"{description} ({limits})" if description else f"({limits})"
        out.append(f"| `{name}` | {_type_name(field.annotation)} | {_default(field)} | {description} |")
        sub = _nested_model(field.annotation)
        if sub is not None:
            key = f"{prefix}.{name}" if prefix else name
            if typing.get_origin(field.annotation) is dict:
                key += ".<name>"
            nested.append((key, sub))
    out.append("")
    for key, sub in nested:
        _section(sub, key, out)


def reference_text() -> str:
    out = [HEADER, "## Gateway config file (`--config`)\n"]
    _section(GatewayConfig, "", out)
    out.append("## Policy file (`servers.<name>.policy`)\n")
    out.append("Paths are relative to the config file. A server without `policy` gets every default below.\n")
    _section(PolicyFile, "", out)
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    return write_or_check(__doc__ or "", "gateway.config_reference", reference_text, argv)


if __name__ == "__main__":
    raise SystemExit(main())
