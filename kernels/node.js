// hutch session kernel for Node.js (docs/kernels.md).
//
// Runs inside a cell under `/usr/bin/node -e <bootstrap>`, which reads this source from stdin
// and runs it; Node built-ins only. fd 3 is the control socket (frames: u32 little-endian
// length + one UTF-8 JSON object); fd 1 and fd 2 are the calls' stdout and stderr.
//
// User code runs in a vm context, evaluated through the inspector protocol
// (Runtime.evaluate with replMode: true), which is what the DevTools console uses. V8's REPL
// mode gives the semantics a notebook wants without rewriting the code: let/const/class
// declarations persist between calls and may be declared again, top-level await works, and
// the completion value of the code is the result.
//
// Two threads. The main thread runs user code. A worker thread owns reads on fd 3: while
// user code spins (`while(true){}`), the main thread cannot read anything, so the worker is
// what sees {"op":"interrupt"}. It passes every frame on to the main thread and, if an
// interrupt is not taken up at once (the main thread is busy), stops the running JavaScript
// with Runtime.terminateExecution from its own inspector session.
'use strict';
(() => {
  const fs = require('fs');
  const inspector = require('inspector');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const { Console } = require('console');
  const { createRequire } = require('module');
  const { Writable } = require('stream');
  const { Worker } = require('worker_threads');

  const CTL_FD = 3;
  const MAX_FRAME = 64 << 20; // the daemon treats bigger frames as a protocol error
  // Shared with the worker: interrupts it asked for, interrupts the main thread took up,
  // and whether a call is in progress (only then may the worker stop running JavaScript).
  const REQUESTED = 0;
  const TAKEN = 1;
  const IN_CALL = 2;
  const shared = new Int32Array(new SharedArrayBuffer(3 * 4));
  const exit = process.exit.bind(process); // the kernel's own; user code gets another
  const SINK = Symbol.for('hutch.kernel.sink');
  const INTERRUPTED = {
    type: 'Error',
    message: 'Script execution interrupted.',
    traceback: 'Error [ERR_SCRIPT_EXECUTION_INTERRUPTED]: Script execution interrupted.',
  };

  // ---- output ----------------------------------------------------------------------------

  function sleepMs(ms) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  }

  // Synchronous, so that everything a call printed is in the pipe before its done frame;
  // EAGAIN is retried because Node may have made the descriptor non-blocking.
  function writeAll(fd, data) {
    const buf = typeof data === 'string' ? Buffer.from(data) : data;
    let off = 0;
    while (off < buf.length) {
      try {
        off += fs.writeSync(fd, buf, off, buf.length - off);
      } catch (e) {
        if (e.code !== 'EAGAIN') throw e;
        sleepMs(1);
      }
    }
  }

  function syncStream(fd) {
    return new Writable({
      write(chunk, encoding, cb) {
        try {
          writeAll(fd, chunk);
          cb();
        } catch (e) {
          cb(e);
        }
      },
    });
  }

  // process.stdout/stderr are created on first use, and Node may write to pipes
  // asynchronously; remember whether the user made them, to wait for them before done.
  const madeStdio = new Set();
  for (const name of ['stdout', 'stderr']) {
    const desc = Object.getOwnPropertyDescriptor(process, name);
    if (!desc || !desc.get || !desc.configurable) continue;
    Object.defineProperty(process, name, {
      ...desc,
      get() {
        madeStdio.add(name);
        return desc.get.call(this);
      },
    });
  }

  function whenStdioFlushed(then) {
    const pending = [...madeStdio].map((n) => process[n]).filter((s) => s.writableLength > 0);
    if (pending.length === 0) return then();
    let left = pending.length;
    let called = false;
    const go = () => {
      if (!called) {
        called = true;
        clearTimeout(timer);
        then();
      }
    };
    // Someone who keeps writing must not keep the call open forever.
    const timer = setTimeout(go, 2000);
    for (const s of pending) s.once('drain', () => --left === 0 && go());
  }

  // Stop the worker first: an inspector session of its still open at exit would have Node
  // print "Waiting for the debugger to disconnect...".
  let worker = null;
  let leaving = false;
  function leave(code) {
    if (leaving) return;
    leaving = true;
    if (worker) worker.terminate().finally(() => exit(code));
    else exit(code);
  }

  function die(why) {
    try {
      writeAll(2, `hutch node kernel: ${why}\n`);
    } finally {
      leave(2);
    }
  }

  // ---- frames ----------------------------------------------------------------------------

  function encode(frame) {
    return Buffer.from(JSON.stringify(frame), 'utf8');
  }

  function send(frame) {
    let data = encode(frame);
    if (data.length > MAX_FRAME) {
      const why = `<output dropped: ${data.length} bytes is over the frame limit>`;
      const note = { 'text/plain': why };
      frame = { ...frame, value: frame.value && note };
      if (frame.error) {
        const cut = {};
        for (const [k, v] of Object.entries(frame.error)) cut[k] = String(v).slice(0, 1 << 20);
        frame.error = cut;
      }
      data = encode(frame);
    }
    const head = Buffer.alloc(4);
    head.writeUInt32LE(data.length);
    try {
      writeAll(CTL_FD, Buffer.concat([head, data]));
    } catch (e) {
      leave(0); // the daemon is gone
    }
  }

  // ---- the worker: reads fd 3, turns interrupts into a stop of the main thread ----------

  function workerMain() {
    /* eslint-disable no-shadow */
    const inspector = require('inspector');
    const net = require('net');
    const { parentPort, workerData } = require('worker_threads');
    const shared = new Int32Array(workerData.shared);
    const { REQUESTED, TAKEN, IN_CALL, MAX_FRAME, CTL_FD } = workerData;
    const CHECK_MS = 100; // how long an idle main thread may take to answer an interrupt
    const session = new inspector.Session();
    session.connectToMainThread();

    let buf = Buffer.alloc(0);
    const sock = new net.Socket({ fd: CTL_FD, readable: true, writable: false });
    sock.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 4) {
        const n = buf.readUInt32LE(0);
        if (n > MAX_FRAME) return die(`frame of ${n} bytes on fd 3 is over the limit`);
        if (buf.length < 4 + n) break;
        const body = buf.subarray(4, 4 + n).toString('utf8');
        buf = buf.subarray(4 + n);
        let msg;
        try {
          msg = JSON.parse(body);
        } catch (e) {
          return die(`bad JSON on fd 3: ${e.message}`);
        }
        const op = msg !== null && typeof msg === 'object' ? msg.op : undefined;
        if (op === 'interrupt') interrupt();
        else if (op === 'reset' || (op === 'exec' && typeof msg.code === 'string')) {
          parentPort.postMessage(msg);
        } else {
          return die(`unexpected frame on fd 3: ${body.slice(0, 200)}`);
        }
      }
    });
    sock.on('end', eof);
    sock.on('error', eof);

    function bye(msg) {
      sock.destroy();
      parentPort.postMessage(msg);
    }

    function die(why) {
      bye({ op: 'die', why });
    }

    // The daemon is gone: the main thread is to exit, even in the middle of a busy call.
    function eof() {
      bye({ op: 'eof' });
      setInterval(() => {
        session.post('Runtime.terminateExecution', () => {});
        parentPort.postMessage({ op: 'eof' });
      }, CHECK_MS);
    }

    function interrupt() {
      const seq = Atomics.add(shared, REQUESTED, 1) + 1;
      parentPort.postMessage({ op: 'interrupt', seq });
      setTimeout(check, CHECK_MS, seq, 0);
    }

    // The main thread did not take up interrupt SEQ: it is running JavaScript. Stop that
    // (only during a call: a stop asked for while the main thread is idle would hit the next
    // JavaScript it runs, whatever that is) and ask again, in case the stop happened to hit
    // the main thread's handling of our message rather than the user's code.
    function check(seq, tries) {
      if (Atomics.load(shared, TAKEN) >= seq || tries > 50) return;
      if (Atomics.load(shared, IN_CALL)) session.post('Runtime.terminateExecution', () => {});
      parentPort.postMessage({ op: 'interrupt', seq });
      setTimeout(check, CHECK_MS, seq, tries + 1);
    }
  }

  // ---- the user's context ----------------------------------------------------------------

  const session = new inspector.Session();
  session.connect();
  let context = null; // the user's globals; the inspector knows it as contextId
  let contextId = null;
  let sunk; // what the sink function saw last

  function newContext() {
    const sandbox = {};
    session.post('Runtime.enable');
    session.once('Runtime.executionContextCreated', ({ params }) => {
      contextId = params.context.id;
    });
    // import() loads modules as the main context would (from the cwd, node_modules, node:*).
    const loader = vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER;
    vm.createContext(sandbox, { name: 'hutch', importModuleDynamically: loader });
    session.post('Runtime.disable');
    // Node's globals (process, Buffer, setTimeout, URL, fetch, ...) as in the REPL: those a
    // fresh context already has (Object, Promise, ...) stay the context's own.
    const own = new Set(vm.runInContext('Object.getOwnPropertyNames(globalThis)', sandbox));
    const skip = new Set(['console', 'require', 'module', 'exports', '__filename', '__dirname']);
    for (const name of Object.getOwnPropertyNames(globalThis)) {
      if (own.has(name) || skip.has(name)) continue;
      Object.defineProperty(sandbox, name, Object.getOwnPropertyDescriptor(globalThis, name));
    }
    sandbox.global = sandbox;
    // require() resolves from the cwd (/workspace), like the REPL's.
    sandbox.require = createRequire(path.join(process.cwd(), '<repl>'));
    sandbox.console = new Console({
      stdout: syncStream(1),
      stderr: syncStream(2),
      colorMode: false,
    });
    // How the inspector hands us real values (see valueOf).
    Object.defineProperty(sandbox, SINK, {
      value: (v) => {
        sunk = v;
      },
    });
    context = sandbox;
  }

  // ---- calls -----------------------------------------------------------------------------

  let cells = 0; // numbers the "<cell-N>" script names in stack traces; never reset
  let current = null; // the call in progress: {id, group, finished}
  const inbox = []; // frames that wait for the current call to end

  // Like the REPL: `{ a: 1 }` is an object, not a block with a label.
  function prepare(code, cell) {
    let source = code;
    if (/^\s*\{/.test(code) && /\}\s*$/.test(code)) {
      try {
        new vm.Script(`(${code})`); // only compiled, to check the syntax
        source = `(${code})`;
      } catch (e) {
        // a block after all
      }
    }
    return `${source}\n//# sourceURL=<cell-${cell}>`;
  }

  // The inspector describes the result as a RemoteObject; pass it back in as an argument
  // of a function that runs in the context and hands it to us.
  function valueOf(remote, group, cb) {
    if (remote.type === 'undefined') return cb(null, undefined);
    // A CallArgument: an object by its handle, a primitive by value; {} is undefined.
    const arg = {};
    for (const key of ['objectId', 'unserializableValue', 'value']) {
      if (key in remote) {
        arg[key] = remote[key];
        break;
      }
    }
    sunk = undefined;
    session.post('Runtime.callFunctionOn', {
      functionDeclaration: 'function (v) { globalThis[Symbol.for("hutch.kernel.sink")](v); }',
      executionContextId: contextId,
      arguments: [arg],
      objectGroup: group,
    }, (err) => {
      const v = sunk;
      sunk = undefined; // not ours to keep alive
      cb(err, v);
    });
  }

  // A stack without the kernel's frames: they start where the inspector called in
  // (hutch-kernel.js is the daemon's name for this file; [eval] is that of `node -e`).
  function userStack(stack) {
    const lines = String(stack).split('\n');
    const kernelFrame = /^\s+at .*(node:inspector|hutch-kernel\.js|\[eval\])/;
    const ours = lines.findIndex((l) => kernelFrame.test(l));
    return (ours < 0 ? lines : lines.slice(0, ours)).join('\n');
  }

  function describe(thrown) {
    const isError =
      thrown !== null && typeof thrown === 'object' && typeof thrown.stack === 'string';
    let message;
    let type;
    try {
      type = isError ? String(thrown.name) : typeof thrown;
      message = isError ? String(thrown.message) : util.inspect(thrown);
    } catch (e) {
      type = 'Error';
      message = '<inspect failed>';
    }
    const traceback = isError ? userStack(thrown.stack) : `Uncaught ${message}`;
    writeAll(2, `${traceback}\n`); // as in the REPL, the user sees it on stderr too
    return { type, message, traceback };
  }

  // The inspector itself failed us (should not happen).
  function kernelError(err) {
    return { type: 'Error', message: `hutch node kernel: ${err.message}`, traceback: '' };
  }

  function exec(id, code) {
    const cell = ++cells;
    // The group holds the inspector's handles on this call's objects until we release it.
    const call = { id, group: `hutch-cell-${cell}`, finished: false };
    current = call;
    Atomics.store(shared, IN_CALL, 1);
    const params = {
      expression: prepare(code, cell),
      contextId,
      replMode: true,
      awaitPromise: true,
      objectGroup: call.group,
    };
    session.post('Runtime.evaluate', params, (err, res) => {
      if (call.finished) return release(call); // interrupted, and now it ended after all
      if (err) {
        // A stop from the worker ends the evaluation like this.
        if (/terminated/i.test(err.message)) return finish(call, 'interrupted', null, INTERRUPTED);
        return finish(call, 'error', null, kernelError(err));
      }
      const thrown = res.exceptionDetails;
      valueOf(thrown ? thrown.exception : res.result, call.group, (err2, v) => {
        if (call.finished) return release(call);
        if (err2) return finish(call, 'error', null, kernelError(err2));
        if (thrown) return finish(call, 'error', null, describe(v));
        let value = null;
        if (v !== undefined) {
          try {
            value = { 'text/plain': util.inspect(v) };
          } catch (e) {
            return finish(call, 'error', null, describe(e));
          }
        }
        finish(call, 'ok', value, null);
      });
    });
  }

  function release(call) {
    session.post('Runtime.releaseObjectGroup', { objectGroup: call.group }, () => {});
  }

  function finish(call, status, value, error) {
    if (call.finished || leaving) return;
    call.finished = true;
    current = null;
    Atomics.store(shared, IN_CALL, 0);
    if (status !== 'interrupted') release(call); // else the evaluation may still hold it
    if (status === 'interrupted') writeAll(2, `${error.traceback}\n`);
    whenStdioFlushed(() => {
      send({ type: 'done', id: call.id, status, value, error });
      pump();
    });
  }

  function interrupt(seq) {
    if (seq <= Atomics.load(shared, TAKEN)) return; // already done (the worker asks again)
    Atomics.store(shared, TAKEN, seq);
    // A call waiting for a promise (`await new Promise(() => {})`) is abandoned: its
    // evaluation may still end later, and is then ignored.
    if (current) finish(current, 'interrupted', null, INTERRUPTED);
  }

  function pump() {
    while (!current && inbox.length > 0) {
      const msg = inbox.shift();
      if (msg.op === 'exec') {
        exec(msg.id, msg.code);
      } else {
        newContext(); // reset
        send({ type: 'done', id: null, status: 'ok' });
      }
    }
  }

  function onMessage(msg) {
    if (msg.op === 'interrupt') interrupt(msg.seq);
    else if (msg.op === 'eof') leave(0);
    else if (msg.op === 'die') die(msg.why);
    else {
      inbox.push(msg);
      pump();
    }
  }

  // ---- start -----------------------------------------------------------------------------

  // As in the Python kernel, user code does not end the kernel: process.exit() throws, and
  // the call ends with that error.
  process.exit = function (code) {
    const arg = code === undefined ? '' : code;
    const e = new Error(`process.exit(${arg}) does not end a session kernel`);
    e.name = 'ProcessExit';
    throw e;
  };

  // That import() support says once, on first use, that it is experimental: not the
  // user's business, and it would land in some call's stderr.
  const emitWarning = process.emitWarning;
  process.emitWarning = function (warning, ...rest) {
    const text = String((warning && warning.message) || warning);
    if (text.includes('USE_MAIN_CONTEXT_DEFAULT_LOADER')) return;
    return emitWarning.call(this, warning, ...rest);
  };

  // Errors of callbacks that outlive their call (timers, events) must not end the kernel.
  process.on('uncaughtException', (e) => {
    writeAll(2, `Uncaught ${util.inspect(e)}\n`);
  });
  process.on('unhandledRejection', (reason) => {
    writeAll(2, `Uncaught (in promise) ${util.inspect(reason)}\n`);
  });

  newContext();
  worker = new Worker(`(${workerMain})()`, {
    eval: true,
    workerData: { shared: shared.buffer, REQUESTED, TAKEN, IN_CALL, MAX_FRAME, CTL_FD },
  });
  worker.on('message', onMessage);
  worker.on('error', (e) => die(`reader thread failed: ${e && e.stack}`));
  send({ type: 'ready', language: 'node', version: process.version });
})();
