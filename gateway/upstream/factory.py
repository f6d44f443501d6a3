"""Build the connector one `servers.<name>` entry of the config asks for."""

from __future__ import annotations

from gateway.config import ServerConfig
from gateway.upstream.connector import Upstream
from gateway.upstream.resume import ResumePolicy
from gateway.upstream.stdio import StdioUpstream
from gateway.upstream.streamable_http import StreamableHttpUpstream


def upstream_from_config(name: str, server: ServerConfig) -> Upstream:
    if server.url is not None:
        return StreamableHttpUpstream(
            name, server.url, server.headers,
            connect_timeout=server.connect_timeout_seconds,
            request_timeout=server.request_timeout_seconds,
            max_connections=server.pool.max_connections,
            max_streams=server.pool.max_streams,
            acquire_timeout=server.pool.acquire_timeout_seconds,
            resume=ResumePolicy(
                max_attempts=server.resume.max_attempts,
                max_resumes=server.resume.max_resumes,
                default_retry_seconds=server.resume.default_retry_seconds,
                max_retry_seconds=server.resume.max_retry_seconds,
            ),
        )
    assert server.command is not None
    return StdioUpstream(name, server.command, server.args, server.env, server.cwd)
