"""The bundled demo MCP server that elicits: put the gateway in front of it to see the policy at work.

Run: ``python -m gateway.demo.demo_server --host 127.0.0.1 --port 9101`` (endpoint ``/mcp``).

It serves classic stateful Streamable HTTP (``initialize``, ``Mcp-Session-Id``,
SSE responses), so server-to-client ``elicitation/create`` requests reach hosts
on protocol 2025-06-18 and 2025-11-25. Tools:

- ``book_table``: a plain form (name, party size, date, outdoor seating).
- ``connect_account``: URL mode to ``https://auth.example.com/connect?session=...``;
  on accept, ``notifications/elicitation/complete`` follows about a second later.
- ``ask_password``: a form asking for a password (the gateway's policy blocks it).
- ``ask_with_link``: a form whose message holds a link (the gateway strips it).
- ``echo``: no elicitation, for smoke tests.

Logs go to stderr only.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import secrets
import sys
from collections.abc import Sequence
from typing import Any

import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, Field

logger = logging.getLogger("gateway.demo")

CONNECT_URL = "https://auth.example.com/connect?session={session}"
COMPLETE_DELAY_SECONDS = 1.0
TERMS_MESSAGE = "Read the terms at https://example.com/terms before you confirm"

mcp = MCPServer(
    "demo",
    instructions="Demo server for the MCP elicitation gateway: every tool but echo asks the user something.",
)


class Booking(BaseModel):
    name: str = Field(title="Name", description="Who the table is for")
    party_size: int = Field(title="Party size", description="How many people", ge=1, le=20)
    date: datetime.date = Field(title="Date", description="Day of the booking (YYYY-MM-DD)")
    outdoor: bool = Field(default=False, title="Outdoor seating", description="Sit outside if the weather allows")


class Terms(BaseModel):
    agree: bool = Field(title="I agree", description="Accept the terms")


# Built by hand: the SDK's schema renderer refuses `format: password`, which is the point of this tool.
PASSWORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "password": {
            "type": "string",
            "title": "Password",
            "description": "Your account password",
            "format": "password",
        }
    },
    "required": ["password"],
}


def _refused(exc: MCPError) -> str:
    """The host or the gateway refused the elicitation (e.g. a policy block): say so, without failing the tool."""
    logger.info("elicitation refused: %s %s", exc.error.code, exc.error.message)
    return f"elicitation refused ({exc.error.code}): {exc.error.message}"


@mcp.tool()
def echo(text: str) -> str:
    """Return the text unchanged (no elicitation)."""
    return text


@mcp.tool()
async def book_table(ctx: Context) -> str:
    """Book a restaurant table: asks name, party size, date and outdoor seating in a form."""
    try:
        result = await ctx.elicit("Book a table: who, how many, which day?", Booking)
    except MCPError as exc:
        return _refused(exc)
    if result.action == "accept":
        b = result.data
        seating = "outdoor" if b.outdoor else "indoor"
        return f"Booked a table for {b.party_size} under {b.name!r} on {b.date.isoformat()} ({seating} seating)."
    return "declined" if result.action == "decline" else "cancelled"


_pending: set[asyncio.Task[None]] = set()


@mcp.tool()
async def connect_account(ctx: Context) -> str:
    """Connect a third-party account through a URL-mode elicitation (out-of-band sign-in)."""
    elicitation_id = secrets.token_urlsafe(16)
    url = CONNECT_URL.format(session=secrets.token_urlsafe(12))
    try:
        result = await ctx.elicit_url(
            "Sign in to your Example account to connect it.", url, elicitation_id
        )
    except MCPError as exc:
        return _refused(exc)
    if result.action != "accept":
        return "declined" if result.action == "decline" else "cancelled"
    # Pretend the user finishes the sign-in in their browser, then tell the host it is done.
    await asyncio.sleep(COMPLETE_DELAY_SECONDS)
    await ctx.request_context.session.send_elicit_complete(elicitation_id, ctx.request_id)
    logger.info("sent elicitation/complete for %s", elicitation_id)
    return f"Account connected (elicitation {elicitation_id} completed)."


@mcp.tool()
async def ask_password(ctx: Context) -> str:
    """Ask for a password in a form (a policy violation: the gateway should block it)."""
    try:
        result = await ctx.request_context.session.elicit_form(
            "Enter your password to continue.", PASSWORD_SCHEMA, ctx.request_id
        )
    except MCPError as exc:
        return _refused(exc)
    if result.action == "accept":
        # Never echo the secret back.
        return "password received"
    return "declined" if result.action == "decline" else "cancelled"


@mcp.tool()
async def ask_with_link(ctx: Context) -> str:
    """Ask to agree to terms; the message holds a link (the gateway strips it)."""
    try:
        result = await ctx.elicit(TERMS_MESSAGE, Terms)
    except MCPError as exc:
        return _refused(exc)
    if result.action == "accept":
        return "agreed to the terms" if result.data.agree else "did not agree to the terms"
    return "declined" if result.action == "decline" else "cancelled"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo_server", description="Demo MCP server that elicits.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9101)
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)

    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,  # replace the SDK's rich handler (set up when MCPServer is built) with plain lines
    )
    # Stateful sessions with SSE responses: the classic mode server-to-client requests need.
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp", json_response=False, stateless_http=False, host=args.host
    )
    logger.info("demo MCP server on http://%s:%d/mcp", args.host, args.port)
    # log_config=None: uvicorn's own config would send access logs to stdout; ours all go to stderr.
    uvicorn.run(app, host=args.host, port=args.port, log_config=None, log_level=args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
