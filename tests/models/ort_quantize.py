#!/usr/bin/env python3
"""ONNX Runtime's own quantization tools (the `onnxruntime` package from PyPI), for the tests and
benchmarks of quantized models: a virtual environment over Debian's Python (its torch and numpy
stay visible) with onnxruntime and a current onnx installed by pip on first use, and the
quantizers run in it.

  quantize_dynamic(src, dst)   ORT's quantize_dynamic (DynamicQuantizeLinear + MatMulInteger +
                               Cast + Mul per dense layer), int8 weights
  quantize_static(src, dst, fmt)
                               ORT's quantize_static, calibrated on a few random inputs: fmt
                               "qdq" (QuantizeLinear/DequantizeLinear around each op) or
                               "qoperator" (QLinearConv, QLinearMatMul, ...); uint8
                               activations, int8 per-channel weights
  quantize_nbits(src, dst, symmetric)
                               ORT's MatMulNBitsQuantizer: each MatMul with a constant weight
                               becomes a com.microsoft MatMulNBits of int4 blocks of 32
  ort_optimize(src, dst)       the model as ONNX Runtime's graph optimizer (level extended)
                               saves it: its com.microsoft fused ops (DynamicQuantizeMatMul,
                               MatMulIntegerToFloat, ...) in the file
  reference_run(model, feeds)  the model's outputs by onnx's reference evaluator: the integer
                               arithmetic of a quantized graph exactly as written (numpy), the
                               oracle for quantized models

The environment lives in /tmp/nnfuse-ort-py unless $NNFUSE_ORT_VENV names another.
"""
import fcntl, os, subprocess, sys, tempfile

ORT_PY_VERSION = "1.32.0"
ONNX_VERSION = "1.23.2"


def ensure_venv():
    """The Python of a virtual environment with onnxruntime (installing it on first use)."""
    d = os.environ.get("NNFUSE_ORT_VENV", "/tmp/nnfuse-ort-py")
    py = os.path.join(d, "bin", "python")
    os.makedirs(os.path.dirname(d) or ".", exist_ok=True)
    with open(d + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # tests run in parallel: one installs, others wait
        ok = os.path.exists(py) and subprocess.run(
            [py, "-c", "import onnxruntime.quantization, onnx, onnx_ir; "
             "assert onnx.__version__ == '%s'" % ONNX_VERSION], capture_output=True).returncode == 0
        if not ok:
            print("installing onnxruntime==%s and onnx==%s with pip into %s" %
                  (ORT_PY_VERSION, ONNX_VERSION, d), file=sys.stderr)
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", d],
                           check=True)
            pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
            subprocess.run(pip + ["onnxruntime==" + ORT_PY_VERSION], check=True,
                           stdout=sys.stderr)
            # Debian's onnx (older) would shadow the one onnxruntime's quantizer needs.
            subprocess.run(pip + ["--ignore-installed", "onnx==" + ONNX_VERSION], check=True,
                           stdout=sys.stderr)
            # The MatMulNBits quantizer's own dependency.
            subprocess.run(pip + ["onnx_ir"], check=True, stdout=sys.stderr)
    return py


QUANTIZE_DYNAMIC = """
import sys
from onnxruntime.quantization import quantize_dynamic, QuantType
quantize_dynamic(sys.argv[1], sys.argv[2], weight_type=QuantType.QInt8)
"""


def quantize_dynamic(src, dst):
    """ORT's quantize_dynamic of model `src` into `dst` (int8 weights, uint8 activations)."""
    r = subprocess.run([ensure_venv(), "-c", QUANTIZE_DYNAMIC, src, dst], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("quantize_dynamic failed: " + r.stderr.strip()[-600:])
    return dst


QUANTIZE_STATIC = """
import sys, numpy as np, onnx
from onnxruntime.quantization import (quantize_static, QuantType, QuantFormat,
                                      CalibrationDataReader)
from onnxruntime.quantization.shape_inference import quant_pre_process
src, dst, fmt, samples = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# ORT's recommended first step: shape inference and its graph optimizer (BatchNormalization
# folded into the convolutions), as users run it before quantizing.
pre = dst + ".pre.onnx"
quant_pre_process(src, pre)
src = pre
m = onnx.load(src, load_external_data=False)
init = {i.name for i in m.graph.initializer}
TYPES = {1: np.float32, 7: np.int64, 6: np.int32}
inputs = []
for i in m.graph.input:
    if i.name in init:
        continue
    t = i.type.tensor_type
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
    inputs.append((i.name, dims, TYPES[t.elem_type]))
rng = np.random.default_rng(0)
class Reader(CalibrationDataReader):
    def __init__(self):
        self.left = samples
    def get_next(self):
        if self.left == 0:
            return None
        self.left -= 1
        return {n: (rng.standard_normal(d).astype(t) if t == np.float32 else
                    np.zeros(d, t)) for n, d, t in inputs}
quantize_static(src, dst, Reader(),
                quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
                activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                per_channel=True)
import os
os.remove(pre)
"""


def quantize_static(src, dst, fmt="qdq", samples=4):
    """ORT's quantize_static of `src` into `dst` in format fmt ("qdq" or "qoperator"), after its
    quant_pre_process, calibrated on `samples` random normal inputs (float inputs; integer inputs
    are zeros)."""
    if fmt not in ("qdq", "qoperator"):
        raise ValueError("quantize_static: format must be qdq or qoperator, not %r" % fmt)
    r = subprocess.run([ensure_venv(), "-c", QUANTIZE_STATIC, src, dst, fmt, str(samples)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("quantize_static failed: " + r.stderr.strip()[-600:])
    return dst


QUANTIZE_NBITS = """
import sys, onnx
from onnxruntime.quantization.matmul_nbits_quantizer import (MatMulNBitsQuantizer,
                                                             DefaultWeightOnlyQuantConfig)
cfg = DefaultWeightOnlyQuantConfig(block_size=32, is_symmetric=sys.argv[3] == "symmetric")
q = MatMulNBitsQuantizer(onnx.load(sys.argv[1]), algo_config=cfg)
q.process()
q.model.save_model_to_file(sys.argv[2], use_external_data_format=False)
"""


def quantize_nbits(src, dst, symmetric=False):
    """ORT's MatMulNBitsQuantizer of `src` into `dst`: int4 weights in blocks of 32 along K, with
    zero points unless `symmetric`."""
    r = subprocess.run([ensure_venv(), "-c", QUANTIZE_NBITS, src, dst,
                        "symmetric" if symmetric else "asymmetric"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("MatMulNBitsQuantizer failed: " + r.stderr.strip()[-600:])
    return dst


ORT_OPTIMIZE = """
import sys, onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
so.optimized_model_filepath = sys.argv[2]
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
"""


def ort_optimize(src, dst):
    """ONNX Runtime's optimized form of `src` (level extended), written to `dst`."""
    r = subprocess.run([ensure_venv(), "-c", ORT_OPTIMIZE, src, dst], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("ONNX Runtime's optimizer failed: " + r.stderr.strip()[-600:])
    return dst


REFERENCE_RUN = """
import sys, numpy as np, onnx
from onnx import version_converter
from onnx.reference import ReferenceEvaluator
model, d, names = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    sess = ReferenceEvaluator(model)
except RuntimeError:
    # The evaluator implements QuantizeLinear and DequantizeLinear from opset 19 on: older
    # models are converted (their semantics there are the same).
    sess = ReferenceEvaluator(version_converter.convert_version(onnx.load(model), 21))
feeds = {n: np.load("%s/in_%d.npy" % (d, k)) for k, n in enumerate(names)}
for o, v in zip(sess.output_names, sess.run(None, feeds)):
    np.save("%s/out_%s.npy" % (d, o), np.asarray(v))
"""


def reference_run(model, feeds):
    """Runs `model` with onnx.reference on feeds (name -> numpy array); returns name -> array."""
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        names = list(feeds)
        for k, n in enumerate(names):
            np.save(os.path.join(d, "in_%d.npy" % k), feeds[n])
        r = subprocess.run([ensure_venv(), "-c", REFERENCE_RUN, model, d] + names,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("onnx.reference failed: " + r.stderr.strip()[-600:])
        return {f[4:-4]: np.load(os.path.join(d, f)) for f in os.listdir(d)
                if f.startswith("out_")}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__ + "\nUsage: /usr/bin/python3 ort_quantize.py SRC.onnx DST.onnx")
        sys.exit(2)
    quantize_dynamic(sys.argv[1], sys.argv[2])
