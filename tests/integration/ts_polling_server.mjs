// The TypeScript SDK's side of SSE polling (as in its ssePollingExample / the conformance scenario
// `server-sse-polling`): an event store, a short retry, and a tool that closes its request's SSE stream
// before answering. Run: node ts_polling_server.mjs PORT (from tests/npm/node_modules).
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'npm', 'package.json'));
const sdk = (sub) => import(pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${sub}`)).href);
const { McpServer } = await sdk('server/mcp.js');
const { StreamableHTTPServerTransport } = await sdk('server/streamableHttp.js');
const { InMemoryEventStore } = await sdk('examples/shared/inMemoryEventStore.js');
const { isInitializeRequest } = await sdk('types.js');
const { z } = await import(pathToFileURL(require.resolve('zod')).href);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const eventStore = new InMemoryEventStore();
const transports = new Map();

function newServer() {
  const server = new McpServer({ name: 'ts-polling', version: '1.0.0' });
  server.tool('poll_then_answer', 'Close the stream, then answer', { text: z.string() }, async ({ text }, extra) => {
    await sleep(20);
    if (extra.closeSSEStream) extra.closeSSEStream();
    await sleep(100);
    return { content: [{ type: 'text', text }] };
  });
  return server;
}

async function readJson(req) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
}

http.createServer(async (req, res) => {
  try {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      if (sid || !isInitializeRequest(body)) {
        res.writeHead(sid ? 404 : 400, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'no session' } }));
        return;
      }
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore,
        retryInterval: 50,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => transport.sessionId && transports.delete(transport.sessionId);
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (err) {
    console.error(err);
    if (!res.headersSent) res.writeHead(500).end();
  }
}).listen(Number(process.argv[2]), '127.0.0.1');
