#!/usr/bin/env python3
"""A second CPU peer: OpenVINO (pip's `openvino`, in a virtual environment made on first use)
running an ONNX file as it is, timed like bench/ort_bench.js times ONNX Runtime.

As a module: ensure_openvino() gives the environment's python; ov_bench(model, threads, runs)
times a model and returns {"median_ms", "min_ms", "max_ms", "load_ms", "version"}.
As a script inside that environment (how ov_bench runs it):
  python bench/openvino_peer.py MODEL.onnx THREADS RUNS
prints that object as one JSON line. Inputs are made as ort_bench.js makes them: int64 ids
(0 for token types, 1 for masks, (k * 7919) % 1000 otherwise), float32 sin(k / 1000), a model's
unknown dims as 1. The environment lives in /tmp/nnfuse-ov-py unless $NNFUSE_OV_VENV names
another.
"""
import json, os, subprocess, sys, time

OV_VERSION = "2026.4.1"
HERE = os.path.dirname(os.path.abspath(__file__))


def ensure_openvino():
    """The python of a virtual environment with openvino==OV_VERSION, made on first use."""
    d = os.environ.get("NNFUSE_OV_VENV", "/tmp/nnfuse-ov-py")
    py = os.path.join(d, "bin", "python")
    marker = os.path.join(d, ".openvino-" + OV_VERSION)
    if not os.path.exists(marker):
        print("installing openvino==%s with pip into %s" % (OV_VERSION, d), file=sys.stderr)
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", d],
                       check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "openvino==" + OV_VERSION], check=True, stdout=sys.stderr)
        open(marker, "w").close()
    return py


def ov_bench(model, threads, runs):
    """OpenVINO's latency on `model` (a JSON object, see the module's text)."""
    r = subprocess.run([ensure_openvino(), os.path.abspath(__file__), model, str(threads),
                        str(runs)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("OpenVINO failed on %s: %s" % (model, r.stderr.strip()[-600:]))
    return json.loads(r.stdout.strip().splitlines()[-1])


def _feeds(model):
    import numpy as np
    import onnx
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    feeds = {}
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value or 1 for d in t.shape.dim]
        n = int(np.prod(shape)) if shape else 1
        k = np.arange(n)
        if t.elem_type == onnx.TensorProto.INT64:
            v = (np.zeros(n) if "type" in i.name else np.ones(n) if "mask" in i.name
                 else (k * 7919) % 1000).astype(np.int64)
        else:
            v = np.sin(k * 0.001).astype(np.float32)
        feeds[i.name] = v.reshape(shape)
    return feeds


def _main(model, threads, runs):
    import numpy as np
    import openvino as ov
    core = ov.Core()
    t0 = time.perf_counter()
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads,
                                                 "PERFORMANCE_HINT": "LATENCY"})
    load_ms = (time.perf_counter() - t0) * 1e3
    req = compiled.create_infer_request()
    feeds = _feeds(model)
    for _ in range(3):
        req.infer(feeds)
    ts = []
    for _ in range(runs):
        a = time.perf_counter()
        req.infer(feeds)
        ts.append((time.perf_counter() - a) * 1e3)
    ts.sort()
    print(json.dumps({"model": model, "threads": threads, "load_ms": round(load_ms, 1),
                      "median_ms": round(float(np.median(ts)), 2), "min_ms": round(ts[0], 2),
                      "max_ms": round(ts[-1], 2), "version": ov.__version__}))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: openvino_peer.py MODEL.onnx THREADS RUNS")
    _main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
