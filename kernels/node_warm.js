// The fast path's warm node: a pool cell starts
//   node -r /tmp/.hutch-node-warm.js /workspace/main.js
// before any request comes (src/zygote/node.c), so node's own start-up
// (~50 ms here) is paid in the background. This file is that -r preload.
// It runs during node's start-up, before node loads the main module: it
// tells the cell it is ready (one byte on stdout, which the cell reads
// back), blocks reading the request on fd 0 (a pipe from the cell, to EOF),
// makes the process what `node /workspace/main.js ARGS` with the request's
// environment and working directory would be, and returns. Node then loads
// /workspace/main.js itself, so stack traces, require.main and the exit
// path are node's own.
//
// The cell only hands a request here when nothing node reads at start-up
// differs (no NODE_* or UV_* variables, the same HOME, LANG, LC_* and TZ,
// no node options, no stdin: node_eligible in src/zygote/node.c).
'use strict';
(() => {
  const fs = require('fs');

  // Gone before the program runs: no trace of us in /tmp or require.cache.
  fs.unlinkSync(__filename);
  delete require.cache[__filename];

  // What every program's first lines pay for, paid now: the stdout and
  // stderr streams (made on first use, on fds 1 and 2, which already are
  // the program's), and console's formatting, run once into a sink. Only
  // process.moduleLoadList (node's own modules) shows it.
  process.stdout;
  process.stderr;
  const { Writable } = require('stream');
  const sink = new Writable({ write(chunk, enc, cb) { cb(); } });
  new console.Console(sink, sink).log('%s %d', 'a', 1, [1, 'b'], { a: { b: null } },
                                      new Error('warm-up'));

  fs.writeSync(1, 'n');
  const chunks = [];
  const buf = Buffer.alloc(65536);
  for (;;) {
    let n;
    try {
      n = fs.readSync(0, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === 'EAGAIN' || e.code === 'EINTR') continue;
      throw e;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(buf.subarray(0, n)));
  }
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));

  // stdin: /dev/null, as the cold path gives a request without stdin. It
  // takes fd 0 again (the lowest free), and process.stdin, made on first
  // use, has not been made yet.
  fs.closeSync(0);
  fs.openSync('/dev/null', 'r');

  for (const k of Object.keys(process.env)) delete process.env[k];
  for (const kv of req.env) {
    const i = kv.indexOf('=');
    if (i > 0) process.env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  process.chdir(req.cwd);
  // argv[1] is already /workspace/main.js; child_process.fork must not
  // pass our -r on to its children.
  process.argv.splice(2, process.argv.length - 2, ...req.args);
  process.execArgv.length = 0;
})();
