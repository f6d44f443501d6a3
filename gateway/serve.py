"""Running the gateway process."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

from aiohttp import web

from gateway import tracing
from gateway.config import LoadedConfig
from gateway.http.app import create_app
from gateway.identity import set_session_salt
from gateway.logs import configure_logging, get_logger
from gateway.policy import lexicon_cache

_BANNER = """\
******************************************************************************
WARNING: host authentication is OFF. Anyone who can reach {where} can use
every server in this config with its upstream credentials. Fine on a laptop
for local use; anywhere else set auth.api_keys or auth.jwt (docs/security.md).
******************************************************************************
"""


# Young objects a collection waits for (CPython's default: 700). Nearly everything a request
# allocates is freed by reference counting; at 700, 32 requests in flight set off a collection
# every few requests, each walking their live objects again (docs/performance.md).
GC_GEN0_THRESHOLD = 10_000


async def freeze_startup_objects(app: web.Application) -> None:
    """Moves what startup built (policy lexicons, public-suffix and homoglyph tables, config: some
    250,000 objects) out of the collector's sight. Without it every full collection walks them all,
    about 60 ms with the event loop stopped: the p99 latency under load."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def new_event_loop(use_uvloop: bool, log: Any) -> tuple[asyncio.AbstractEventLoop, str]:
    """uvloop's loop (measured faster: docs/performance.md) unless turned off or not installed."""
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            log.warning("uvloop.unavailable", detail="uvloop is not installed: serving on asyncio's event loop")
        else:
            return uvloop.new_event_loop(), "uvloop"
    return asyncio.new_event_loop(), "asyncio"


def serve(
    cfg: LoadedConfig, *, host: str | None = None, port: int | None = None, log_format: str | None = None,
    use_uvloop: bool | None = None,
) -> None:
    """`use_uvloop`: the `--no-uvloop` flag (False) overrides `listen.uvloop`; None keeps the config's."""
    configure_logging(log_format or cfg.gateway.logging.format, cfg.gateway.logging.level, cache=True)
    listen_host = host or cfg.gateway.listen.host
    listen_port = port if port is not None else cfg.gateway.listen.port
    traced = tracing.configure(cfg.gateway.tracing)
    set_session_salt(cfg.gateway.logging.session_salt)
    log = get_logger()
    loop, loop_name = new_event_loop(cfg.gateway.listen.uvloop if use_uvloop is None else use_uvloop, log)
    log.info("gateway.starting", host=listen_host, port=listen_port, servers=sorted(cfg.gateway.servers),
             tracing=traced, admin=cfg.gateway.admin.enabled, event_loop=loop_name)
    if not cfg.gateway.auth.enabled:
        log.warning("auth.disabled", host=listen_host, port=listen_port,
                    detail="unauthenticated local mode: every client is trusted with every server")
        print(_BANNER.format(where=f"{listen_host}:{listen_port}"), file=sys.stderr, flush=True)
    if not cfg.gateway.admin.api_keys:
        log.warning("admin.loopback_only",
                    detail="admin.api_keys not set: admin endpoints answer loopback clients only")
    app = create_app(cfg)
    for level, event, fields in lexicon_cache.take_notes():  # the policies' lexicon: built or read from the cache
        getattr(log, level)(event, **fields)
    app.on_startup.append(freeze_startup_objects)  # last: after every other startup step
    try:
        web.run_app(app, loop=loop, host=listen_host, port=listen_port, print=None, access_log=None,
            # Also the deadline for a new connection's request head (slow-loris guard): aiohttp closes a
            # connection that has not delivered a complete request within it.
            keepalive_timeout=cfg.gateway.listen.header_timeout_seconds,
            # After an early answer (408, 413) aiohttp drains the unread body this long before closing.
            lingering_time=2.0,
            # A host that disconnects cancels its handler: its upstream call is detached, then released.
            handler_cancellation=True,
        )
    finally:
        tracing.shutdown()  # flushes spans still buffered for the collector
