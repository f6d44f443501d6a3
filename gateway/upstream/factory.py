"""Build the connector one `servers.<name>` entry of the config asks for."""

from __future__ import annotations

from pathlib import Path
from typing import TypedDict

from gateway.config import ServerConfig
from gateway.upstream.connector import Upstream
from gateway.upstream.credentials import UpstreamCredentials, header_files
from gateway.upstream.legacy_sse import LegacySseUpstream
from gateway.upstream.restart import RestartPolicy
from gateway.upstream.resume import ResumePolicy
from gateway.upstream.stderr_log import StderrLog
from gateway.upstream.stdio import StdioUpstream
from gateway.upstream.streamable_http import StreamableHttpUpstream


class _PoolArgs(TypedDict):
    connect_timeout: float
    max_connections: int
    max_streams: int
    acquire_timeout: float


def upstream_from_config(name: str, server: ServerConfig, config_dir: Path | None = None) -> Upstream:
    """`config_dir`: where relative secret-file paths start (the config file's folder)."""
    restart = RestartPolicy(
        backoff_base_seconds=server.restart.backoff_base_seconds,
        backoff_max_seconds=server.restart.backoff_max_seconds,
        max_attempts=server.restart.max_attempts,
    )
    files = header_files(config_dir or Path.cwd(), server.bearer_token_file, server.headers_from_files)
    if server.url is not None:
        credentials = UpstreamCredentials(name, server.headers, files)
        pool: _PoolArgs = {
            "connect_timeout": server.connect_timeout_seconds, "max_connections": server.pool.max_connections,
            "max_streams": server.pool.max_streams, "acquire_timeout": server.pool.acquire_timeout_seconds,
        }
        if server.transport == "sse":
            return LegacySseUpstream(name, server.url, credentials, restart=restart, **pool)
        return StreamableHttpUpstream(
            name, server.url, credentials, **pool,
            resume=ResumePolicy(
                max_attempts=server.resume.max_attempts,
                max_resumes=server.resume.max_resumes,
                default_retry_seconds=server.resume.default_retry_seconds,
                max_retry_seconds=server.resume.max_retry_seconds,
            ),
        )
    assert server.command is not None
    stderr = StderrLog(
        name, enabled=server.stderr.log, max_line_bytes=server.stderr.max_line_bytes,
        lines_per_second=server.stderr.max_lines_per_second,
    )
    return StdioUpstream(
        name, server.command, server.args, server.env, server.cwd,
        restart=restart, connect_timeout=server.connect_timeout_seconds, stderr=stderr,
    )
