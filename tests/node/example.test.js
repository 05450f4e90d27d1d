// The Node.js example (clients/node/example.js) against the real gpuflowd.
//
//   GPUFLOW_SERVER_BIN=build/bin/gpuflowd node --test tests/node/example.test.js
//
// Run by `make test-node` (part of `make test`), which installs
// clients/node's packages first and skips this when node is missing.
'use strict';

const assert = require('node:assert/strict');
const { execFile, execFileSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
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
async function startServer(name, extraArgs = []) {
  const portFile = path.join(dir, `${name}.port`);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GPUFLOW_')));
  const child = spawn(SERVER_BIN, ['--address=127.0.0.1', '--port=0', `--port_file=${portFile}`, '--backend=cpu',
    '--metrics_port=0', ...extraArgs],
    { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (data) => { log += data; });
  const deadline = Date.now() + 30_000;
  while (!fs.existsSync(portFile)) {
    if (child.exitCode !== null) throw new Error(`gpuflowd exited with ${child.exitCode}: ${log}`);
    if (Date.now() > deadline) throw new Error(`gpuflowd did not start: ${log}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { child, port: Number(fs.readFileSync(portFile, 'utf8').trim()), log: () => log };
}

async function stopServer(child) {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGTERM');
    const code = await exited;
    assert.equal(code, 0, 'gpuflowd should exit cleanly on SIGTERM');
  }
}

before(async () => {
  assert.ok(fs.existsSync(SERVER_BIN), `gpuflowd not found at ${SERVER_BIN}: build it first (make build)`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuflow-node-'));
  ({ child: server, port } = await startServer('plain'));
});

after(async () => {
  await stopServer(server);
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function runExample(args, env = process.env) {
  return new Promise((resolve) => {
    execFile(process.execPath, [EXAMPLE, ...args], { timeout: 60_000, env }, (error, stdout, stderr) => {
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

test('the example places its session on a live worker of a pool', async () => {
  const { code, stdout, stderr } = await runExample(['--target', `127.0.0.1:1,127.0.0.1:${port}`]);
  assert.equal(code, 0, stderr);
  const lines = stdout.trim().split('\n');
  assert.match(lines[0], new RegExp(`^server: gpuflow \\S+ at 127\\.0\\.0\\.1:${port}, backend cpu `));
  assert.match(lines[1], new RegExp(`^session: [0-9a-f]{32} on worker 127\\.0\\.0\\.1:${port}$`));
  assert.equal(lines[5], 'session closed, 20 bytes freed');
});

test('the example reports an unreachable server with its gRPC code', async () => {
  const { code, stderr } = await runExample(['--target=127.0.0.1:1']);
  assert.equal(code, 1);
  assert.match(stderr, /^example\.js: UNAVAILABLE: /);
});

// A CA and a server certificate for 127.0.0.1, made by openssl in `dir`.
function makeCertificates() {
  const run = (...args) => execFileSync('openssl', args, { stdio: 'ignore' });
  const at = (name) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-days', '2', '-subj', '/CN=node-test-ca', '-keyout', at('ca.key'), '-out', at('ca.crt'));
  run('req', ...ec, '-subj', '/CN=localhost', '-keyout', at('server.key'), '-out', at('server.csr'));
  fs.writeFileSync(at('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run('x509', '-req', '-in', at('server.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key'), '-CAcreateserial',
    '-days', '2', '-extfile', at('server.ext'), '-out', at('server.crt'));
  return { ca: at('ca.crt'), cert: at('server.crt'), key: at('server.key') };
}

function hasOpenssl() {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('the example speaks TLS and sends a bearer token', { skip: !hasOpenssl() && 'needs openssl' }, async () => {
  const certs = makeCertificates();
  const token = 'node-example-token-0123456789';
  const tokens = path.join(dir, 'tokens.json');
  const sha = crypto.createHash('sha256').update(token).digest('hex');
  fs.writeFileSync(tokens, JSON.stringify({ tenants: [{ name: 'node-team', token_sha256: sha }] }));
  const secure = await startServer('secure', [`--tls_cert_file=${certs.cert}`, `--tls_key_file=${certs.key}`,
    `--auth_tokens_file=${tokens}`]);
  try {
    // A host name: TLS sends it as the server name (SNI), which an IP address may not be.
    const target = `localhost:${secure.port}`;
    let result = await runExample(['--target', target, '--tls-ca', certs.ca, '--token', token]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout.split('\n')[0], /, tenant node-team$/);
    assert.match(result.stdout, /session closed, 20 bytes freed/);
    // The same from the environment.
    const env = { ...process.env, GPUFLOW_TARGET: target, GPUFLOW_TLS_CA: certs.ca, GPUFLOW_TOKEN: token };
    result = await runExample([], env);
    assert.equal(result.code, 0, result.stderr);
    // Without the token: UNAUTHENTICATED, and the token is never logged.
    result = await runExample(['--target', target, '--tls_ca', certs.ca]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^example\.js: UNAUTHENTICATED: /);
    assert.ok(!secure.log().includes(token));
  } finally {
    await stopServer(secure.child);
  }
});
