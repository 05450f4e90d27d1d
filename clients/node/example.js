#!/usr/bin/env node
// gpuflow from Node.js, with nothing but the v1 proto: @grpc/proto-loader
// reads proto/gpuflow/v1/service.proto at run time (no generated code), and
// @grpc/grpc-js makes the calls.
//
//   node clients/node/example.js --target localhost:50051
//   node clients/node/example.js --target gpu.example:50051 --tls-ca ca.crt --token "$TOKEN"
//
// --target may name a pool of workers, host1:port1,host2:port2 (docs/scale-out.md):
// the session then goes to the least-loaded healthy one, and every call of it
// goes there.
//
// It opens a session, uploads a small float32 array x, runs the graph
// y = sqrt(x * x + 1) on the server, prints y and closes the session. With
// --tls-ca (and --tls-cert/--tls-key for mutual TLS) it speaks TLS; with
// --token every call carries `authorization: Bearer <token>` (a server with
// tenants, docs/security.md).
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_DIR = path.resolve(__dirname, '..', '..', 'proto');

const USAGE = `usage: node example.js [--target HOST:PORT] [--token TOKEN]
                       [--tls-ca FILE [--tls-cert FILE --tls-key FILE]]
  --target    the server, or a pool host1:port1,host2:port2 (default: $GPUFLOW_TARGET,
              else localhost:50051)
  --token     bearer token of a server with tenants (default: $GPUFLOW_TOKEN)
  --tls-ca    use TLS, trusting this PEM CA bundle (default: $GPUFLOW_TLS_CA)
  --tls-cert  client certificate for mutual TLS (default: $GPUFLOW_TLS_CERT)
  --tls-key   its private key (default: $GPUFLOW_TLS_KEY)`;

// Options from the command line, else the environment. --name VALUE and
// --name=VALUE both work; --tls_ca is --tls-ca.
function parseArgs(argv) {
  const env = process.env;
  const options = {
    target: env.GPUFLOW_TARGET || 'localhost:50051',
    token: env.GPUFLOW_TOKEN || '',
    'tls-ca': env.GPUFLOW_TLS_CA || '',
    'tls-cert': env.GPUFLOW_TLS_CERT || '',
    'tls-key': env.GPUFLOW_TLS_KEY || '',
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    const match = /^--([a-z_-]+)(?:=(.*))?$/.exec(arg);
    const name = match ? match[1].replace(/_/g, '-') : '';
    if (!match || !(name in options)) {
      console.error(`example.js: unknown argument '${arg}' (try --help)`);
      process.exit(2);
    }
    if (match[2] !== undefined) {
      options[name] = match[2];
    } else if (i + 1 < argv.length) {
      options[name] = argv[++i];
    } else {
      console.error(`example.js: ${arg} needs a value (try --help)`);
      process.exit(2);
    }
  }
  if (!options['tls-cert'] !== !options['tls-key']) {
    console.error('example.js: --tls-cert and --tls-key go together');
    process.exit(2);
  }
  return options;
}

// Plaintext, or TLS when a CA or a client certificate is given.
function channelCredentials(options) {
  if (!options['tls-ca'] && !options['tls-cert']) return grpc.credentials.createInsecure();
  const read = (file) => (file ? fs.readFileSync(file) : null);
  return grpc.credentials.createSsl(read(options['tls-ca']), read(options['tls-key']),
    read(options['tls-cert']));
}

// Metadata sent with every call: the bearer token, if any.
function callMetadata(token) {
  const metadata = new grpc.Metadata();
  if (token) metadata.set('authorization', `Bearer ${token}`);
  return metadata;
}

// The GpuFlow service, loaded from the .proto files. keepCase keeps the
// proto's field names (session_id, not sessionId); longs: String keeps int64
// values exact; enums: String gives 'DTYPE_FLOAT32' rather than 12.
function loadService() {
  const definition = protoLoader.loadSync('gpuflow/v1/service.proto', {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).gpuflow.v1.GpuFlow;
}

// Calls a unary method and returns a promise of its reply.
function call(client, metadata, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, metadata, (error, reply) => (error ? reject(error) : resolve(reply)));
  });
}

// UploadArray is a client stream: a header message, then the bytes in
// chunks of at most the server's max_chunk_bytes.
function upload(client, metadata, sessionId, name, dtype, shape, bytes, chunkBytes) {
  return new Promise((resolve, reject) => {
    const stream = client.UploadArray(metadata,
      (error, info) => (error ? reject(error) : resolve(info)));
    stream.write({ header: { session_id: sessionId, name, dtype, shape } });
    for (let offset = 0; offset < bytes.length; offset += chunkBytes) {
      stream.write({ chunk: bytes.subarray(offset, offset + chunkBytes) });
    }
    stream.end();
  });
}

// An InlineArray of float32 (C order, little-endian) as a JS array.
function float32Values(inline) {
  if (inline.dtype !== 'DTYPE_FLOAT32') throw new Error(`expected float32, got ${inline.dtype}`);
  const values = [];
  for (let i = 0; i < inline.data.length; i += 4) values.push(inline.data.readFloatLE(i));
  return values;
}

// float32 values as they read best: 8 significant digits are enough to
// identify any float32 (1.4142135, not 1.4142135381698608).
function show(values) {
  return `[${values.map((v) => Number(v.toPrecision(8))).join(', ')}]`;
}

// The worker a new session goes to: of the targets that answer and are
// healthy, the one with the fewest sessions, then requests in flight, then
// bytes held (ServerInfo.load). Returns its address, client and info, and
// closes the others' clients.
async function placeSession(GpuFlow, targets, options, metadata) {
  const clients = targets.map((t) => new GpuFlow(t, channelCredentials(options)));
  const deadline = new Date(Date.now() + 5000);
  const answers = await Promise.allSettled(clients.map((c) => new Promise((resolve, reject) => {
    c.GetServerInfo({}, metadata, { deadline }, (error, reply) => (error ? reject(error) : resolve(reply)));
  })));
  const load = (info) => [info.load.sessions, info.load.requests_in_flight, Number(info.load.bytes_held)];
  let best = -1;
  answers.forEach((answer, i) => {
    if (answer.status !== 'fulfilled' || !answer.value.healthy) return;
    if (best < 0) { best = i; return; }
    const [a, b] = [load(answer.value), load(answers[best].value)];
    for (let k = 0; k < a.length; k++) {
      if (a[k] !== b[k]) { if (a[k] < b[k]) best = i; return; }
    }
  });
  clients.forEach((c, i) => { if (i !== best) c.close(); });
  if (best < 0) {
    const why = answers.find((a) => a.status === 'rejected');
    throw why ? why.reason : new Error(`no healthy gpuflow worker among ${targets.join(', ')}`);
  }
  return { target: targets[best], client: clients[best], info: answers[best].value };
}

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const GpuFlow = loadService();
  const metadata = callMetadata(options.token);
  const targets = options.target.split(',').map((t) => t.trim()).filter(Boolean);
  const { target, client, info } = await placeSession(GpuFlow, targets, options, metadata);

  const tenant = info.tenant ? `, tenant ${info.tenant}` : '';
  console.log(`server: gpuflow ${info.version} at ${target}, backend ${info.backend} (${info.device})${tenant}`);
  const chunkBytes = Number(info.limits.max_chunk_bytes) || 1 << 20;

  const session = await call(client, metadata, 'CreateSession', { label: 'node example' });
  const id = session.session_id;
  console.log(`session: ${id}${targets.length > 1 ? ` on worker ${target}` : ''}`);
  try {
    const x = Float32Array.from([0, 1, 2, 3, -4]);
    const uploaded = await upload(
      client, metadata, id, 'x', 'DTYPE_FLOAT32', [x.length], Buffer.from(x.buffer), chunkBytes);
    console.log(`uploaded x: ${uploaded.dtype} [${uploaded.shape.join(', ')}] = ${show(Array.from(x))}`);

    // y = sqrt(x * x + 1): three nodes, fused into one step by the server.
    const reply = await call(client, metadata, 'Execute', {
      session_id: id,
      graph: {
        nodes: [
          { id: 'sq', op: 'mul', inputs: [{ array: 'x' }, { array: 'x' }] },
          { id: 'p1', op: 'add', inputs: [{ node: 'sq' }, { scalar: { int_value: 1 } }] },
          { id: 'y', op: 'sqrt', inputs: [{ node: 'p1' }] },
        ],
      },
      outputs: [{ node: 'y', return_inline: true }],
    });
    const y = reply.outputs[0].value;
    console.log(`y = sqrt(x * x + 1): ${y.dtype} [${y.shape.join(', ')}] = ${show(float32Values(y))}`);
    console.log(`server time: ${(reply.timings.total_seconds * 1e3).toFixed(3)} ms`);
  } finally {
    const closed = await call(client, metadata, 'CloseSession', { session_id: id });
    console.log(`session closed, ${closed.freed_bytes} bytes freed`);
    client.close();
  }
}

main().catch((error) => {
  // gRPC errors carry the status code and the server's message.
  const code = error.code !== undefined ? grpc.status[error.code] : 'ERROR';
  console.error(`example.js: ${code}: ${error.details || error.message}`);
  process.exit(1);
});
