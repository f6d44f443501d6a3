"""`/admin`: the decisions page. Server-rendered HTML, no script, no build step.

Off unless `admin.enabled`; always behind the admin credential (`admin_guard`, gateway/http/auth.py).
Shows servers and their health, live session counts, and the latest elicitation
decisions of every replica (from the state store; this replica's when it is down:
rule, decision, change summary, form field names),
filterable by server and decision, with a chart of decisions per minute.
Never any field value, message, URL, session id or user: the feed does not hold them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from html import escape
from importlib.metadata import PackageNotFoundError, version
from urllib.parse import urlsplit

from aiohttp import web

from gateway.admin_feed import DECISIONS, DecisionEntry, DecisionFeed
from gateway.http.auth import admin_guard
from gateway.observed import UpstreamHealth

_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
_COLORS = {"allow": "#2e7d32", "modify": "#ef6c00", "block": "#c62828"}


@dataclass(frozen=True)
class ServerStatus:
    name: str
    transport: str
    """"http host:port" or "stdio command": never a path, query, user or header."""
    policy: str
    health: UpstreamHealth
    active_sessions: int
    pending_url: int


@dataclass
class AdminSources:
    feed: DecisionFeed
    servers: Callable[[], list[ServerStatus]]
    stored_sessions: Callable[[], Awaitable[int | None]]
    replica: str


def gateway_version() -> str:
    try:
        return version("mcp-elicitation-gateway")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"


def transport_summary(url: str | None, command: str | None) -> str:
    if url is not None:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme} {parts.hostname}{port}"
    return f"stdio {(command or '').rsplit('/', 1)[-1]}"


def add_admin_routes(app: web.Application, sources: AdminSources) -> None:
    async def page(request: web.Request) -> web.StreamResponse:
        await admin_guard(request)  # 401/403 without the admin credential (loopback only when none is set)
        servers = sources.servers()
        names = [s.name for s in servers]
        server = request.query.get("server") or None
        decision = request.query.get("decision") or None
        server = server if server in names else None
        decision = decision if decision in DECISIONS else None
        stored = await sources.stored_sessions()
        shared = await sources.feed.shared()
        html = render_page(sources, servers, stored, server, decision, shared)
        return web.Response(text=html, content_type="text/html", charset="utf-8", headers=_HEADERS)

    app.router.add_get("/admin", page)


def render_page(
    sources: AdminSources, servers: list[ServerStatus], stored: int | None, server: str | None, decision: str | None,
    shared: list[DecisionEntry] | None = None,
) -> str:
    """`shared`: every replica's latest decisions (oldest first); None falls back to this replica's."""
    feed = sources.feed
    entries = feed.latest(server=server, decision=decision, limit=100, entries=shared)
    scope = "every replica" if shared is not None else "this replica only (the state store is unavailable)"
    chart_entries = [e for e in (shared if shared is not None else feed.all()) if server is None or e.server == server]
    buckets = feed.per_minute(chart_entries, minutes=30)
    now = time.time()
    live = sum(s.active_sessions for s in servers)
    stored_text = "unavailable" if stored is None else str(stored)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta http-equiv="refresh" content="10">',
        "<title>elicitation-gateway: decisions</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<header><h1>elicitation-gateway</h1><span class=meta>version {escape(gateway_version())} · replica "
        f"{escape(sources.replica)} · {escape(_when(now))} UTC · refreshes every 10 s</span></header>",
        '<section class=cards>',
        _card("Host sessions (all replicas)", stored_text, "sessions"),
        _card("Served now (this replica)", str(live), "live-sessions"),
        _card("Decisions recorded (this replica)", str(feed.total), "decisions-total"),
        "</section>",
        "<h2>Servers</h2>",
        _servers_table(servers),
        "<h2>Decisions per minute</h2>",
        _chart(buckets),
        "<h2>Latest decisions</h2>",
        _filter_form([s.name for s in servers], server, decision),
        _decisions_table(entries),
        f"<footer>Decisions of {escape(scope)}, newest first. Rule ids, decisions, change summaries and "
        "field names; never a field value.</footer>",
        "</body></html>",
    ]
    return "".join(parts)


def _card(title: str, value: str, key: str) -> str:
    return f'<div class=card data-testid="{key}"><div class=value>{escape(value)}</div>' \
           f"<div class=label>{escape(title)}</div></div>"


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) if at else "never"


def _servers_table(servers: list[ServerStatus]) -> str:
    rows = []
    for s in servers:
        h = s.health
        state = "unknown" if h.up is None else ("up" if h.up else "down")
        last_error = "" if h.last_error is None else f"{_when(h.last_error)} {h.last_error_reason or ''}"
        rows.append(
            f'<tr data-server="{escape(s.name)}"><td>{escape(s.name)}</td><td>{escape(s.transport)}</td>'
            f"<td>{escape(s.policy)}</td><td><span class='health {state}'>{state}</span></td>"
            f"<td>{s.active_sessions}</td><td>{s.pending_url}</td><td>{h.reconnects}</td><td>{h.errors}</td>"
            f"<td class=small>{escape(last_error)}</td></tr>"
        )
    return ("<table id=servers><thead><tr><th>server</th><th>upstream</th><th>policy</th><th>health</th>"
            "<th>served now</th><th>URL elicitations pending</th><th>reconnects</th><th>errors</th>"
            "<th>last error (UTC)</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _filter_form(names: list[str], server: str | None, decision: str | None) -> str:
    def options(values: list[str], chosen: str | None, everything: str) -> str:
        out = [f'<option value="">{everything}</option>']
        for v in values:
            selected = " selected" if v == chosen else ""
            out.append(f'<option value="{escape(v)}"{selected}>{escape(v)}</option>')
        return "".join(out)

    return ('<form method=get action="/admin" id=filter>'
            f'<label>server <select name=server>{options(names, server, "all servers")}</select></label> '
            f'<label>decision <select name=decision>{options(list(DECISIONS), decision, "all decisions")}'
            '</select></label> <button type=submit>Filter</button></form>')


def _decisions_table(entries: list[DecisionEntry]) -> str:
    if not entries:
        return "<p class=empty id=no-decisions>No decisions yet.</p>"
    rows = []
    for e in entries:
        fields = ", ".join(e.field_names) + (" …" if e.field_count > len(e.field_names) else "")
        summary = "; ".join(e.changes) if e.changes else e.reason
        monitor = "" if e.enforced else " <span class=monitor>monitor</span>"
        rows.append(
            f'<tr class=decision data-decision="{escape(e.decision)}" data-server="{escape(e.server)}">'
            f"<td class=small>{escape(_when(e.at))}</td><td>{escape(e.server)}</td><td>{escape(e.mode)}</td>"
            f"<td><span class='badge {escape(e.decision)}'>{escape(e.decision)}</span>{monitor}</td>"
            f"<td><code>{escape(', '.join(e.rules) or '-')}</code></td><td>{escape(summary)}</td>"
            f"<td class=fields>{e.field_count}{': ' + escape(fields) if fields else ''}</td></tr>"
        )
    return ("<table id=decisions><thead><tr><th>time (UTC)</th><th>server</th><th>mode</th><th>decision</th>"
            "<th>rules</th><th>summary</th><th>fields</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _chart(buckets: list[dict[str, int]]) -> str:
    """Stacked bars per minute, inline SVG (no script)."""
    width, height, pad = 600, 120, 18
    peak = max((sum(b.values()) for b in buckets), default=0) or 1
    bar = (width - pad) / max(1, len(buckets))
    shapes = []
    for i, bucket in enumerate(buckets):
        y = float(height - pad)
        for kind in DECISIONS:
            n = bucket[kind]
            if not n:
                continue
            h = (height - 2 * pad) * n / peak
            y -= h
            shapes.append(
                f'<rect x="{pad + i * bar + 1:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
                f'fill="{_COLORS[kind]}"><title>{n} {kind}</title></rect>')
    axis = (f'<line x1="{pad}" y1="{height - pad}" x2="{width}" y2="{height - pad}" stroke="#999"/>'
            f'<text x="{pad}" y="{height - 4}" class=axis>30 min ago</text>'
            f'<text x="{width - 4}" y="{height - 4}" class=axis text-anchor=end>now</text>'
            f'<text x="2" y="{pad}" class=axis>{peak}</text>')
    legend = "".join(f"<span class='badge {k}'>{k}</span> " for k in DECISIONS)
    return (f'<figure id=chart><svg viewBox="0 0 {width} {height}" width="{width}" height="{height}" role=img '
            f'aria-label="decisions per minute, last 30 minutes">{axis}{"".join(shapes)}</svg>'
            f"<figcaption>{legend}</figcaption></figure>")


async def count_or_none(count: Callable[[], Awaitable[int]]) -> int | None:
    with contextlib.suppress(Exception):
        return await count()
    return None


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 24px;color:#222;background:#fafafa}
header{display:flex;align-items:baseline;gap:16px;border-bottom:1px solid #ddd;padding:12px 0}
h1{font-size:20px;margin:0}h2{font-size:16px;margin:24px 0 8px}.meta{color:#666;font-size:12px}
.cards{display:flex;gap:12px;margin-top:16px}.card{background:#fff;border:1px solid #ddd;border-radius:6px;
padding:10px 16px;min-width:160px}.card .value{font-size:24px;font-weight:600}.card .label{color:#666;font-size:12px}
table{border-collapse:collapse;background:#fff;width:100%}th,td{border:1px solid #e0e0e0;padding:4px 8px;
text-align:left;vertical-align:top}th{background:#f0f0f0;font-weight:600}.small{font-size:12px;color:#555}
.badge{display:inline-block;padding:0 6px;border-radius:4px;color:#fff;font-size:12px}
.badge.allow{background:#2e7d32}.badge.modify{background:#ef6c00}.badge.block{background:#c62828}
.health.up{color:#2e7d32;font-weight:600}.health.down{color:#c62828;font-weight:600}.health.unknown{color:#777}
.monitor{font-size:11px;color:#555;border:1px solid #aaa;border-radius:4px;padding:0 4px}
form{margin:0 0 8px}figure{margin:0}svg{background:#fff;border:1px solid #ddd}.axis{font-size:10px;fill:#666}
td.small,td.fields{white-space:nowrap}
footer{margin-top:16px;color:#666;font-size:12px}code{font-size:12px}
"""
