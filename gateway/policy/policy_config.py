"""The policy file (YAML) as frozen pydantic models; see shared contract and docs/policy.md."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.policy.url_target import allowed_host_entry_problem

Mode = Literal["form", "url"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _check_rate_spec(value: str | None) -> str | None:
    if value is None:
        return None
    from limits import parse_many  # local: keeps the import cost off module load

    try:
        parsed = parse_many(value)
    except ValueError as exc:
        raise ValueError(f"not a rate limit in limits notation (e.g. '5/second;100/hour'): {exc}") from None
    if not parsed:
        raise ValueError("empty rate limit")
    return value


class UrlModePolicy(_Frozen):
    """Where URL-mode elicitations may send the user."""

    allowed_hosts: tuple[str, ...] = ()
    """Hosts URL-mode targets may point at; `*.example.org` matches subdomains. Empty: any https host."""
    allow_ip_literals: bool = False
    """Allow targets written as IP addresses (blocked by default)."""
    allow_punycode: bool = False
    """Allow internationalised (xn--) host names (blocked by default: look-alike hosts)."""
    allow_local_hosts: bool = False
    """Single-label, localhost, .local, .internal and .home.arpa hosts (blocked by default)."""
    max_url_length: int = Field(default=2048, ge=16, le=65536)
    """Longest URL-mode target accepted."""

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts_are_plain(cls, hosts: tuple[str, ...]) -> tuple[str, ...]:
        for host in hosts:
            problem = allowed_host_entry_problem(host)
            if problem is not None:
                raise ValueError(f"{host!r} is not a host name or '*.' wildcard: {problem}")
        return tuple(h.lower().rstrip(".") for h in hosts)


class SchemaBounds(_Frozen):
    """Bounds on a form's requestedSchema (rule `schema.invalid`, docs/form-schema.md)."""

    max_properties: int = Field(default=32, ge=1)
    """Fields in one form."""
    max_enum_values: int = Field(default=100, ge=1)
    """Choices in one enum field."""
    max_text_length: int = Field(default=2000, ge=1)
    """Characters in one title, description or default."""
    max_message_length: int = Field(default=4000, ge=1)
    """Characters in the message."""
    max_name_length: int = Field(default=64, ge=1)
    """Characters in one property name."""
    max_schema_bytes: int = Field(default=65536, ge=256)
    """Size of the whole requestedSchema as JSON."""


class ElicitationPolicy(_Frozen):
    """What a server may ask the user, and how (docs/policy.md)."""

    modes: tuple[Mode, ...] = ("form", "url")
    """Modes this server may use; empty means no elicitation at all."""
    enforce: bool = True
    """False is monitor mode: decisions are computed and logged, nothing is blocked or changed."""
    rate_limit: str | None = None
    """Per server, limits notation, several windows allowed: '5/second;100/hour'."""
    rate_limit_per_user: str | None = None
    """Optional extra limit per (user, server)."""
    sensitive_fields: Literal["block", "allow"] = "block"
    """block: a form asking for a password, API key, token, card number, OTP... is refused
    (docs/sensitive-fields.md)."""
    sensitive_terms: tuple[str, ...] = ()
    """Extra words or phrases that name a secret in this organisation (e.g. 'vault pin')."""
    allowed_fields: tuple[str, ...] = ()
    """Property names never treated as sensitive (e.g. 'token_budget')."""
    form_urls: Literal["strip", "allow"] = "strip"
    """strip: clickable links are removed from every human-visible text of a form (docs/link-stripping.md)."""
    tag_origin: bool = True
    """Prefix the message with "[server-name] " (the _meta origin tag is always added)."""
    url_mode: UrlModePolicy = UrlModePolicy()
    """Checks on URL-mode targets (rule `url_mode.target`, docs/url-targets.md)."""
    schema_bounds: SchemaBounds = SchemaBounds()

    @field_validator("modes")
    @classmethod
    def _unique_modes(cls, modes: tuple[Mode, ...]) -> tuple[Mode, ...]:
        if len(set(modes)) != len(modes):
            raise ValueError("modes must not repeat")
        return modes

    @field_validator("rate_limit", "rate_limit_per_user")
    @classmethod
    def _rate_spec(cls, value: str | None) -> str | None:
        return _check_rate_spec(value)


class PolicyFile(_Frozen):
    """A policy file."""

    elicitation: ElicitationPolicy = ElicitationPolicy()
