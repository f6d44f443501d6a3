"""FastMCP's proxy, the peer users would pick, for the side-by-side benchmark.

Run with the benchmark's own environment (bench/.venv, made by `make bench`), never the project's:
`bench/.venv/bin/python bench/fastmcp_proxy.py PORT UPSTREAM_URL`. Its defaults, as a user gets
them from `create_proxy`: stateful Streamable HTTP at /mcp, the backend speaking the front's era,
server-initiated requests (elicitation) relayed to the front. Access and info logs off, as for
the other proxies in the table.
"""

from __future__ import annotations

import sys

from fastmcp.server import create_proxy


def main(port: int, upstream: str) -> None:
    proxy = create_proxy(upstream, name="bench-proxy")
    proxy.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False, log_level="warning",
              uvicorn_config={"access_log": False})


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
