// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node, CPU execution provider) on inputs
// given as raw little-endian files, and writes its outputs the same way.
// usage: node ort_run.js SPEC.json
//   SPEC: {"model", "level" (disabled|basic|extended|all), "threads", "optimized" (optional:
//          where ORT writes the graph it optimized), "inputs": [{"name", "dtype", "shape",
//          "file"}], "out_dir"}
// Prints {"outputs": [{"name", "dtype", "shape", "file"}]} on stdout.
const ort = require(process.env.ORT_NODE || 'onnxruntime-node');
const fs = require('fs');
const path = require('path');

const kArrays = { float32: Float32Array, int64: BigInt64Array, int32: Int32Array,
                  float64: Float64Array, uint8: Uint8Array, int8: Int8Array, bool: Uint8Array,
                  float16: Uint16Array };

(async () => {
  const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
  const opts = { graphOptimizationLevel: spec.level, intraOpNumThreads: spec.threads || 1,
                 interOpNumThreads: 1, executionMode: 'sequential' };
  if (spec.optimized) opts.optimizedModelFilePath = spec.optimized;
  const session = await ort.InferenceSession.create(spec.model, opts);
  const feeds = {};
  for (const i of spec.inputs) {
    const buf = fs.readFileSync(i.file);
    const Arr = kArrays[i.dtype];
    if (!Arr) throw new Error(`input '${i.name}': dtype ${i.dtype} is not supported`);
    const data = new Arr(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
    feeds[i.name] = new ort.Tensor(i.dtype, data, i.shape);
  }
  const results = await session.run(feeds);
  const outputs = [];
  for (const name of session.outputNames) {
    const t = results[name];
    const file = path.join(spec.out_dir, `out_${outputs.length}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    outputs.push({ name, dtype: t.type, shape: t.dims, file });
  }
  console.log(JSON.stringify({ outputs }));
})().catch((e) => { console.error(String(e && e.stack || e)); process.exit(1); });
