"""Running the gateway process."""

from __future__ import annotations

from aiohttp import web

from gateway.config import LoadedConfig
from gateway.http.app import create_app
from gateway.logs import configure_logging, get_logger


def serve(cfg: LoadedConfig, *, host: str | None = None, port: int | None = None) -> None:
    configure_logging(cfg.gateway.logging.format, cfg.gateway.logging.level)
    listen_host = host or cfg.gateway.listen.host
    listen_port = port if port is not None else cfg.gateway.listen.port
    get_logger().info("gateway.starting", host=listen_host, port=listen_port, servers=sorted(cfg.gateway.servers))
    web.run_app(create_app(cfg), host=listen_host, port=listen_port, print=None, access_log=None)
