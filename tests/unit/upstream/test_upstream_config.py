"""The pool and resume keys of a server entry, and the connector the factory builds from them."""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from gateway.config import PoolConfig, ResumeConfig, ServerConfig
from gateway.upstream.factory import upstream_from_config
from gateway.upstream.resume import ResumePolicy
from gateway.upstream.stdio import StdioUpstream
from gateway.upstream.streamable_http import StreamableHttpUpstream


def test_defaults_are_documented_values() -> None:
    server = ServerConfig(url="http://127.0.0.1:1/mcp")
    assert server.pool == PoolConfig(max_connections=100, max_streams=1000, acquire_timeout_seconds=5.0)
    assert server.resume == ResumeConfig(
        max_attempts=3, max_resumes=1000, default_retry_seconds=1.0, max_retry_seconds=30.0
    )


@pytest.mark.parametrize("bad", [
    {"pool": {"max_conections": 5}},
    {"pool": {"max_connections": 0}},
    {"pool": {"acquire_timeout_seconds": 0}},
    {"resume": {"max_attempts": -1}},
    {"resume": {"retry": 1}},
])
def test_bad_keys_and_values_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ServerConfig.model_validate({"url": "http://127.0.0.1:1/mcp", **bad})


def test_config_is_frozen() -> None:
    server = ServerConfig(url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValidationError):
        server.pool.max_connections = 3  # type: ignore[misc]


def test_factory_passes_pool_and_resume_settings() -> None:
    server = ServerConfig.model_validate({
        "url": "http://127.0.0.1:1/mcp",
        "pool": {"max_connections": 7, "max_streams": 9, "acquire_timeout_seconds": 0.5},
        "resume": {"max_attempts": 1, "max_resumes": 4, "default_retry_seconds": 0.1, "max_retry_seconds": 2},
    })
    up = upstream_from_config("files", server)
    assert isinstance(up, StreamableHttpUpstream)
    assert (up.requests.limit, up.streams.limit, up.requests.acquire_timeout) == (7, 9, 0.5)
    assert up.resume == ResumePolicy(1, 4, 0.1, 2.0)


def test_factory_builds_stdio() -> None:
    up = upstream_from_config("kid", ServerConfig(command=sys.executable, args=("-V",)))
    assert isinstance(up, StdioUpstream)


def test_resume_delay_is_capped_and_defaults() -> None:
    policy = ResumePolicy(default_retry_seconds=0.5, max_retry_seconds=3)
    assert policy.delay(None) == 0.5
    assert policy.delay(250) == 0.25
    assert policy.delay(10**15) == 3
