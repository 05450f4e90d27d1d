// The Node.js example (clients/node/example.js) against the real gpuflowd.
//
//   GPUFLOW_SERVER_BIN=build/bin/gpuflowd node --test tests/node/example.test.js
//
// Run by `make test-node` (part of `make test`), which installs
// clients/node's packages first and skips this when node is missing.
'use strict';

const assert = require('node:assert/strict');
const { execFile, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { after, before, test } = require('node:test');

const ROOT = path.resolve(__dirname, '..', '..');
const SERVER_BIN = path.resolve(process.env.GPUFLOW_SERVER_BIN || path.join(ROOT, 'build', 'bin', 'gpuflowd'));
const EXAMPLE = path.join(ROOT, 'clients', 'node', 'example.js');

let server;
let port;
let dir;

// Starts gpuflowd on a free loopback port (--port=0, --port_file) with the
// CPU backend and no metrics endpoint (its fixed port could be taken), and
// waits for it to serve.
before(async () => {
  assert.ok(fs.existsSync(SERVER_BIN), `gpuflowd not found at ${SERVER_BIN}: build it first (make build)`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuflow-node-'));
  const portFile = path.join(dir, 'port');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GPUFLOW_')));
  server = spawn(SERVER_BIN, ['--address=127.0.0.1', '--port=0', `--port_file=${portFile}`, '--backend=cpu',
    '--metrics_port=0'],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr.on('data', (data) => { log += data; });
  const deadline = Date.now() + 30_000;
  while (!fs.existsSync(portFile)) {
    if (server.exitCode !== null) throw new Error(`gpuflowd exited with ${server.exitCode}: ${log}`);
    if (Date.now() > deadline) throw new Error(`gpuflowd did not start: ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  port = Number(fs.readFileSync(portFile, 'utf8').trim());
});

after(async () => {
  if (server && server.exitCode === null) {
    const exited = new Promise((resolve) => server.on('exit', resolve));
    server.kill('SIGTERM');
    const code = await exited;
    assert.equal(code, 0, 'gpuflowd should exit cleanly on SIGTERM');
  }
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function runExample(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [EXAMPLE, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? error.code : 0, stdout, stderr });
    });
  });
}

test('the example uploads x, runs sqrt(x * x + 1) and closes its session', async () => {
  const { code, stdout, stderr } = await runExample(['--target', `127.0.0.1:${port}`]);
  assert.equal(code, 0, stderr);
  const lines = stdout.trim().split('\n');
  assert.match(lines[0], /^server: gpuflow \S+ at 127\.0\.0\.1:\d+, backend cpu /);
  assert.match(lines[1], /^session: [0-9a-f]{32}$/);
  assert.equal(lines[2], 'uploaded x: DTYPE_FLOAT32 [5] = [0, 1, 2, 3, -4]');
  // float32 sqrt(x*x + 1), as NumPy gives it.
  assert.equal(lines[3], 'y = sqrt(x * x + 1): DTYPE_FLOAT32 [5] = [1, 1.4142135, 2.236068, 3.1622777, 4.1231055]');
  assert.match(lines[4], /^server time: [0-9.]+ ms$/);
  assert.equal(lines[5], 'session closed, 20 bytes freed');
});

test('the example reports an unreachable server with its gRPC code', async () => {
  const { code, stderr } = await runExample(['--target=127.0.0.1:1']);
  assert.equal(code, 1);
  assert.match(stderr, /^example\.js: UNAVAILABLE: /);
});
