-- wrk script for the side-by-side benchmark (bench/run_benchmarks.py):
-- `wrk ... -s bench/wrk_call.lua URL -- TOOL [SESSION_ID ...]` sends `tools/call` TOOL back to
-- back, a new JSON-RPC id each time, round-robin over the session ids (none: no session header).
local tool = "echo"
local sessions = {}
local n = 0

function init(args)
  tool = args[1] or "echo"
  for i = 2, #args do
    sessions[#sessions + 1] = args[i]
  end
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"

function request()
  n = n + 1
  if #sessions > 0 then
    wrk.headers["Mcp-Session-Id"] = sessions[(n % #sessions) + 1]
  end
  local body = '{"jsonrpc":"2.0","id":' .. n .. ',"method":"tools/call","params":{"name":"' .. tool ..
    '","arguments":{"text":"x"}}}'
  return wrk.format(nil, nil, nil, body)
end
