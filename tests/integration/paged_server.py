"""A low-level SDK server whose tools and resources come in pages of 3 (the `mcp` SDK's `Server`).

`python paged_server.py PORT COUNT`: COUNT tools `tool_<i>` and resources `memo://<i>`, one of
each with a name too long to be namespaced as it is.
"""

from __future__ import annotations

import sys

import uvicorn
from mcp import types
from mcp.server.lowlevel.server import Server

PAGE = 3
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 8
LONG = "long_" + "x" * 130
NAMES = [f"tool_{i}" for i in range(COUNT - 1)] + [LONG]


def _page(params: types.PaginatedRequestParams | None) -> tuple[int, str | None]:
    start = int(params.cursor) if params is not None and params.cursor else 0
    return start, str(start + PAGE) if start + PAGE < COUNT else None


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start, nxt = _page(params)
    tools = [types.Tool(name=n, input_schema={"type": "object"}) for n in NAMES[start:start + PAGE]]
    return types.ListToolsResult(tools=tools, next_cursor=nxt)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])


async def list_resources(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    start, nxt = _page(params)
    return types.ListResourcesResult(next_cursor=nxt, resources=[
        types.Resource(uri=f"memo://{i}", name=f"memo {i}") for i in range(start, min(start + PAGE, COUNT))])


async def read_resource(ctx: object, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=params.uri, text=f"body of {params.uri}")])


server: Server[object] = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool,
                                on_list_resources=list_resources, on_read_resource=read_resource)

if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
