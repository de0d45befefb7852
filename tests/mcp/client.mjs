// Drive `hutch mcp` with the official MCP TypeScript SDK client over stdio
// and print TAP. Usage:
//   node client.mjs EXPECTED_BACKEND_REGEX HUTCH_BIN [hutch mcp options...]
// The server's stderr must match EXPECTED_BACKEND_REGEX (which backend it
// chose). Every tool is called, with its error cases.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

const [backendRe, bin, ...mcpArgs] = process.argv.slice(2);
let n = 0;
let failed = 0;
const ok = (cond, name, ...diag) => {
  n += 1;
  if (cond) {
    console.log(`ok ${n} - ${name}`);
  } else {
    failed += 1;
    console.log(`not ok ${n} - ${name}`);
    for (const d of diag) console.log(`# ${String(typeof d === 'string' ? d : JSON.stringify(d)).slice(0, 2000).replace(/\n/g, '\n# ')}`);
  }
};
const text = (r) => (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const env = { PATH: process.env.PATH, HOME: process.env.HOME || '/root' };
for (const k of ['HUTCH_SOCKET', 'HUTCH_STATE_DIR', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'HUTCH_CGROUP', 'HUTCH_CGROUP_PARENT']) {
  if (process.env[k] !== undefined) env[k] = process.env[k];
}
const transport = new StdioClientTransport({ command: bin, args: ['mcp', ...mcpArgs], env, stderr: 'pipe' });
let serverLog = '';
transport.stderr.on('data', (d) => { serverLog += d.toString(); });
const client = new Client({ name: 'hutch-tests', version: '1.0.0' });

// A call that must fail as a protocol error (McpError) with this code.
async function protocolError(name, args, code, re, title) {
  try {
    const r = await client.callTool({ name, arguments: args });
    ok(false, title, 'expected a JSON-RPC error, got a result', r);
  } catch (e) {
    ok(e instanceof McpError && e.code === code && re.test(e.message), title, `code ${e.code}: ${e.message}`);
  }
}

async function main() {
  await client.connect(transport);
  const info = client.getServerVersion();
  ok(info && info.name === 'hutch', 'initialize: serverInfo names hutch', info);
  ok(client.getServerCapabilities()?.tools !== undefined, 'initialize: the tools capability');
  await client.ping();
  ok(true, 'ping');

  // tools/list: all 8, each with schemas
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ['run_code', 'run_command', 'session_create', 'session_exec', 'session_files_read',
    'session_files_write', 'session_kill', 'session_list'];
  ok(JSON.stringify(names) === JSON.stringify(want), 'tools/list has the 8 tools', names);
  ok(tools.every((t) => t.inputSchema?.type === 'object' && t.inputSchema.additionalProperties === false),
    'every inputSchema is a closed object');
  ok(tools.every((t) => t.outputSchema?.type === 'object' && t.description), 'every tool has an outputSchema and a description');
  const runCode = tools.find((t) => t.name === 'run_code');
  ok(JSON.stringify(runCode?.inputSchema.required) === '["language","code"]' &&
     runCode.inputSchema.properties.limits.properties.wall_ms.type === 'integer',
  'run_code requires language and code; limits are described', runCode?.inputSchema);

  // by now the server's first stderr line has arrived
  ok(new RegExp(backendRe).test(serverLog), `stderr says which backend: /${backendRe}/`, serverLog);

  // run_code and run_command
  let r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print(6*7)' } });
  ok(!r.isError && r.structuredContent?.status === 'ok' && r.structuredContent.exit_code === 0 && /42/.test(text(r)),
    'run_code: python prints, status ok', r);
  ok(/\[status: ok, exit code 0/.test(text(r)), 'run_code: the text ends with the status line', text(r));
  if (process.env.MCP_EXPECT_PATH) {
    ok(r.structuredContent?.path === process.env.MCP_EXPECT_PATH, `run_code took the ${process.env.MCP_EXPECT_PATH} path`, r.structuredContent?.path);
  }
  r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'import sys; print(sys.stdin.read().upper())', stdin: 'shout\n' } });
  ok(r.structuredContent?.stdout === 'SHOUT\n\n', 'run_code: stdin reaches the program', r.structuredContent);
  r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'import time; time.sleep(30)', limits: { wall_ms: 1000 } } });
  ok(r.isError === true && r.structuredContent?.status === 'timeout' && /limit hit: wall_time/.test(text(r)),
    'run_code: limits apply (a timeout is an error result)', r);
  r = await client.callTool({ name: 'run_command', arguments: { command: 'echo hi; echo oops >&2; exit 3' } });
  ok(r.isError === true && r.structuredContent?.exit_code === 3 && /hi/.test(text(r)) && /\[stderr\]\noops/.test(text(r)),
    'run_command: sh -c, stdout, stderr and exit code', r);
  r = await client.callTool({ name: 'run_command', arguments: { argv: ['id', '-u'] } });
  ok(!r.isError && r.structuredContent?.stdout.trim() === '1000', 'run_command: argv, runs as uid 1000', r);

  // parallel calls (as agents make them) run in parallel
  const t0 = Date.now();
  const many = await Promise.all([1, 2, 3].map((i) => client.callTool({
    name: 'run_command', arguments: { command: `sleep 2; echo call ${i}` },
  })));
  const took = Date.now() - t0;
  ok(many.every((m, i) => !m.isError && m.structuredContent?.stdout === `call ${i + 1}\n`),
    'three calls at once each get their own result', many.map(text));
  ok(took < 5000, `and run in parallel (${took} ms for 3 x 2 s)`);

  // a session: create, exec twice, files, list, kill
  r = await client.callTool({ name: 'session_create', arguments: { language: 'python', limits: { memory_bytes: 536870912 } } });
  const id = r.structuredContent?.session_id;
  ok(!r.isError && /^sess_[0-9a-f]+$/.test(id || '') && text(r).includes(id), 'session_create returns a session_id', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'x = 41' } });
  ok(!r.isError && r.structuredContent?.status === 'ok', 'session_exec: an assignment', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'x + 1' } });
  ok(!r.isError && r.structuredContent?.value?.['text/plain'] === '42' && /\[value\]\n42/.test(text(r)),
    'session_exec: state persists, the value comes back', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'def f():\n    raise ValueError("bad input")\nf()' } });
  ok(r.isError === true && /Traceback/.test(text(r)) && /ValueError: bad input/.test(text(r)) &&
     r.structuredContent?.error?.type === 'ValueError', 'session_exec: code that raises is an error result with the traceback', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'x' } });
  ok(r.structuredContent?.value?.['text/plain'] === '41', 'session_exec: state survives the exception', r);
  r = await client.callTool({
    name: 'session_exec',
    arguments: { session_id: id, code: 'import matplotlib\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()' },
  });
  const img = (r.content || []).find((c) => c.type === 'image');
  ok(!r.isError && img && img.mimeType === 'image/png' && Buffer.from(img.data, 'base64').subarray(1, 4).toString() === 'PNG',
    'session_exec: a matplotlib figure comes back as image content', (r.content || []).map((c) => c.type));
  r = await client.callTool({ name: 'session_files_write', arguments: { session_id: id, path: 'data/notes.txt', content: 'héllo\nworld\n' } });
  ok(!r.isError && r.structuredContent?.bytes === 13, 'session_files_write: text', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'open("data/notes.txt").read().split()' } });
  ok(r.structuredContent?.value?.['text/plain'] === "['héllo', 'world']", 'the session sees the file', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: 'open("made.txt", "w").write("by python")' } });
  r = await client.callTool({ name: 'session_files_read', arguments: { session_id: id, path: 'made.txt' } });
  ok(!r.isError && text(r) === 'by python' && r.structuredContent?.encoding === 'utf-8', 'session_files_read: a file the code wrote', r);
  const bytes = Buffer.from([0, 1, 2, 255, 254]).toString('base64');
  r = await client.callTool({ name: 'session_files_write', arguments: { session_id: id, path: '/workspace/b.bin', content_base64: bytes } });
  ok(!r.isError && r.structuredContent?.bytes === 5, 'session_files_write: base64', r);
  r = await client.callTool({ name: 'session_files_read', arguments: { session_id: id, path: 'b.bin' } });
  ok(r.structuredContent?.encoding === 'base64' && r.structuredContent.content_base64 === bytes, 'session_files_read: binary comes back as base64', r);
  r = await client.callTool({ name: 'session_files_read', arguments: { session_id: id, path: '../../etc/shadow' } });
  ok(r.isError === true, 'session_files_read: a path outside the workspace fails', r);
  r = await client.callTool({ name: 'session_list', arguments: {} });
  ok(!r.isError && r.structuredContent?.sessions?.some((s) => s.id === id) && text(r).includes(id), 'session_list names the session', r);
  r = await client.callTool({ name: 'session_kill', arguments: { session_id: id } });
  ok(!r.isError && r.structuredContent?.ok === true, 'session_kill', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: id, code: '1' } });
  ok(r.isError === true && /no session/.test(text(r)), 'a killed session is gone: an error result', r);
  r = await client.callTool({ name: 'session_exec', arguments: { session_id: 'sess_0000000000000000', code: '1' } });
  ok(r.isError === true && /ENOENT/.test(text(r)), 'an unknown session is an error result, not a protocol error', r);

  // protocol errors
  await protocolError('no_such_tool', {}, -32602, /unknown tool 'no_such_tool'/, 'an unknown tool is -32602');
  await protocolError('run_code', { language: 'python' }, -32602, /field 'code' is required/, 'a missing argument is -32602 naming it');
  await protocolError('run_code', { language: 'python', code: '1', limits: { wall_ms: 'soon' } }, -32602,
    /limits\.wall_ms/, 'a mistyped nested argument is -32602 naming it');
  await protocolError('run_code', { language: 'python', code: '1', colour: 'red' }, -32602, /unknown field 'colour'/, 'an unknown argument is -32602');
  await protocolError('run_code', { language: 'cobol', code: '1' }, -32602, /language/, 'a language not in the enum is -32602');
  await protocolError('run_code', { language: 'python', code: '1', limits: { pids: 0 } }, -32602, /limits\.pids/, 'a limit out of range is -32602');
  await protocolError('run_command', {}, -32602, /'command' and 'argv'/, 'run_command needs command or argv');
  await protocolError('session_files_write', { session_id: 'x', path: 'p', content_base64: '%%%' }, -32602, /content_base64/, 'bad base64 is -32602');
  try {
    await client.request({ method: 'resources/list', params: {} }, (await import('@modelcontextprotocol/sdk/types.js')).ListResourcesResultSchema);
    ok(false, 'an unknown method is -32601');
  } catch (e) {
    ok(e.code === -32601, 'an unknown method is -32601', e.message);
  }
  r = await client.callTool({ name: 'run_code', arguments: { language: 'python', code: 'print("still here")' } });
  ok(/still here/.test(text(r)), 'the server keeps serving after errors', r);
  await client.close();
}

try {
  await main();
} catch (e) {
  ok(false, 'the client ran to the end', String(e && e.stack ? e.stack : e), serverLog);
}
console.log(`1..${n}`);
process.exit(failed ? 1 : 0);
