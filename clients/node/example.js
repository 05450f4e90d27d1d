#!/usr/bin/env node
// gpuflow from Node.js, with nothing but the v1 proto: @grpc/proto-loader
// reads proto/gpuflow/v1/service.proto at run time (no generated code), and
// @grpc/grpc-js makes the calls.
//
//   node clients/node/example.js --target localhost:50051
//
// It opens a session, uploads a small float32 array x, runs the graph
// y = sqrt(x * x + 1) on the server, prints y and closes the session.
'use strict';

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_DIR = path.resolve(__dirname, '..', '..', 'proto');

function parseArgs(argv) {
  const options = { target: process.env.GPUFLOW_TARGET || 'localhost:50051' };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') {
      console.log('usage: node example.js [--target HOST:PORT]  (default: $GPUFLOW_TARGET, else localhost:50051)');
      process.exit(0);
    } else if (arg === '--target' && i + 1 < argv.length) {
      options.target = argv[++i];
    } else if (arg.startsWith('--target=')) {
      options.target = arg.slice('--target='.length);
    } else {
      console.error(`example.js: unknown argument '${arg}' (try --help)`);
      process.exit(2);
    }
  }
  return options;
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
function call(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, (error, reply) => (error ? reject(error) : resolve(reply)));
  });
}

// UploadArray is a client stream: a header message, then the bytes in
// chunks of at most the server's max_chunk_bytes.
function upload(client, sessionId, name, dtype, shape, bytes, chunkBytes) {
  return new Promise((resolve, reject) => {
    const stream = client.UploadArray((error, info) => (error ? reject(error) : resolve(info)));
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

async function main() {
  const { target } = parseArgs(process.argv.slice(2));
  const GpuFlow = loadService();
  const client = new GpuFlow(target, grpc.credentials.createInsecure());

  const info = await call(client, 'GetServerInfo', {});
  console.log(`server: gpuflow ${info.version} at ${target}, backend ${info.backend} (${info.device})`);
  const chunkBytes = Number(info.limits.max_chunk_bytes) || 1 << 20;

  const session = await call(client, 'CreateSession', { label: 'node example' });
  const id = session.session_id;
  console.log(`session: ${id}`);
  try {
    const x = Float32Array.from([0, 1, 2, 3, -4]);
    const uploaded = await upload(
      client, id, 'x', 'DTYPE_FLOAT32', [x.length], Buffer.from(x.buffer), chunkBytes);
    console.log(`uploaded x: ${uploaded.dtype} [${uploaded.shape.join(', ')}] = ${show(Array.from(x))}`);

    // y = sqrt(x * x + 1): three nodes, fused into one step by the server.
    const reply = await call(client, 'Execute', {
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
    const closed = await call(client, 'CloseSession', { session_id: id });
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
