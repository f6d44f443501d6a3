"""The pool and resume keys of a server entry, and the connector the factory builds from them."""

from __future__ import annotations

import sys

import pytest
from pydantic import ValidationError

from gateway.config import PoolConfig, RestartConfig, ResumeConfig, ServerConfig, StderrConfig
from gateway.upstream.factory import upstream_from_config
from gateway.upstream.legacy_sse import LegacySseUpstream
from gateway.upstream.restart import RestartPolicy
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


def test_transport_sse_builds_the_legacy_connector_with_its_settings() -> None:
    server = ServerConfig.model_validate({
        "url": "http://127.0.0.1:1/sse", "transport": "sse", "connect_timeout_seconds": 3,
        "pool": {"max_connections": 7}, "restart": {"backoff_base_seconds": 0.1, "backoff_max_seconds": 2,
                                                     "max_attempts": 9},
    })
    up = upstream_from_config("old", server)
    assert isinstance(up, LegacySseUpstream)
    assert (up.url, up.connect_timeout, up.requests.limit) == ("http://127.0.0.1:1/sse", 3, 7)
    assert up.restart == RestartPolicy(0.1, 2, 9)


def test_transport_defaults_to_streamable_http() -> None:
    assert isinstance(upstream_from_config("new", ServerConfig(url="http://127.0.0.1:1/mcp")), StreamableHttpUpstream)
    explicit = ServerConfig.model_validate({"url": "http://127.0.0.1:1/mcp", "transport": "streamable-http"})
    assert isinstance(upstream_from_config("new", explicit), StreamableHttpUpstream)


def test_restart_and_stderr_defaults_are_documented_values() -> None:
    server = ServerConfig(command="x")
    assert server.restart == RestartConfig(backoff_base_seconds=0.5, backoff_max_seconds=30, max_attempts=5)
    assert server.stderr == StderrConfig(log=True, max_line_bytes=2048, max_lines_per_second=20)


def test_factory_passes_restart_and_stderr_settings_to_stdio() -> None:
    server = ServerConfig.model_validate({
        "command": sys.executable, "connect_timeout_seconds": 4,
        "restart": {"backoff_base_seconds": 1, "backoff_max_seconds": 8, "max_attempts": 2},
        "stderr": {"log": False, "max_line_bytes": 100, "max_lines_per_second": 3},
    })
    up = upstream_from_config("kid", server)
    assert isinstance(up, StdioUpstream)
    assert up.restart == RestartPolicy(1, 8, 2) and up.connect_timeout == 4
    assert (up.stderr.enabled, up.stderr.max_line, up.stderr.rate) == (False, 100, 3)


@pytest.mark.parametrize(("raw", "problem"), [
    ({"url": "http://127.0.0.1:1/sse", "transport": "websocket"}, "literal_error"),
    ({"url": "http://127.0.0.1:1/sse", "transport": "SSE"}, "literal_error"),
    ({"command": "x", "transport": "sse"}, "transport applies to url servers only"),
    ({"command": "x", "transport": "streamable-http"}, "transport applies to url servers only"),
    ({"command": "x", "restart": {"backoff_base_seconds": 5, "backoff_max_seconds": 1}}, "must not exceed"),
    ({"command": "x", "restart": {"max_attempts": 0}}, "greater_than_equal"),
    ({"command": "x", "restart": {"backoff_base_seconds": 0}}, "greater_than"),
    ({"command": "x", "stderr": {"lines": 3}}, "extra_forbidden"),
])
def test_bad_transport_restart_and_stderr_settings_are_rejected(raw: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError) as err:
        ServerConfig.model_validate(raw)
    assert problem in str(err.value) or problem in err.value.errors()[0]["type"]


def test_the_transport_example_in_docs_upstream_md_is_a_valid_config() -> None:
    from pathlib import Path

    import yaml

    text = (Path(__file__).parents[3] / "docs" / "upstream.md").read_text()
    block = text.split("## Choosing a transport", 1)[1].split("```yaml", 1)[1].split("```", 1)[0]
    servers = {name: ServerConfig.model_validate(raw) for name, raw in yaml.safe_load(block)["servers"].items()}
    assert isinstance(upstream_from_config("legacy", servers["legacy"]), LegacySseUpstream)
    assert isinstance(upstream_from_config("crm", servers["crm"]), StreamableHttpUpstream)
    assert servers["files"].restart == RestartConfig() and servers["files"].stderr == StderrConfig()
