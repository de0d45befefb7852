// Drive `hutch serve`'s /mcp with the official MCP TypeScript SDK client
// over streamable HTTP and print TAP. Usage:
//   node http-client.mjs URL KEY OTHER_KEY
// Two clients with two keys: tools, a session, and that the other key sees
// none of the first key's sessions.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, key, otherKey] = process.argv.slice(2);
let n = 0;
let failed = 0;
const ok = (cond, name, ...diag) => {
  n += 1;
  console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
  if (!cond) {
    failed += 1;
    for (const d of diag) console.log(`# ${String(typeof d === 'string' ? d : JSON.stringify(d)).slice(0, 2000).replace(/\n/g, '\n# ')}`);
  }
};
const text = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function connect(k) {
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${k}` } },
  });
  const client = new Client({ name: 'hutch-http-tests', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

try {
  const a = await connect(key);
  ok(a.getServerVersion()?.name === 'hutch', 'initialize over HTTP: the server is hutch', a.getServerVersion());
  const tools = (await a.listTools()).tools.map((t) => t.name).sort();
  ok(tools.length === 8 && tools.includes('run_code') && tools.includes('session_exec'), 'tools/list: the eight tools', tools);
  let r = await a.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(6 * 7)' } });
  ok(!r.isError && /42/.test(text(r)) && r.structuredContent?.status === 'ok', 'run_code runs in a fresh sandbox', r);
  r = await a.callTool({ name: 'session_create', arguments: { language: 'python' } });
  const sid = r.structuredContent?.session?.id || r.structuredContent?.id;
  ok(!r.isError && typeof sid === 'string', 'session_create gives a session', r);
  await a.callTool({ name: 'session_exec', arguments: { session_id: sid, code: 'x = 20' } });
  r = await a.callTool({ name: 'session_exec', arguments: { session_id: sid, code: 'x + 22' } });
  ok(/42/.test(text(r)), 'session_exec keeps state between calls', r);

  const b = await connect(otherKey);
  r = await b.callTool({ name: 'session_exec', arguments: { session_id: sid, code: 'x' } });
  ok(r.isError && /no session/.test(text(r)), "another key cannot use the first key's session", r);
  r = await b.callTool({ name: 'session_list', arguments: {} });
  ok(!JSON.stringify(r.structuredContent || {}).includes(sid), "and does not see it in session_list", r);
  r = await b.callTool({ name: 'session_kill', arguments: { session_id: sid } });
  ok(r.isError, 'nor kill it', r);
  r = await a.callTool({ name: 'session_kill', arguments: { session_id: sid } });
  ok(!r.isError, 'its owner can', r);
  await a.close();
  await b.close();
} catch (e) {
  ok(false, 'the SDK client over HTTP', String(e.stack || e));
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
