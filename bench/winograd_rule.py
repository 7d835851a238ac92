#!/usr/bin/env python3
"""Winograd against the direct algorithm for unstrided 3x3 convolutions, per shape.

The conv kernels run a 3x3, stride-1 convolution with oneDNN's Winograd algorithm where
src/cost/winograd_rule.h says it pays. This measures the rule's inputs: for each
(Cin, Cout, size) it builds x -> Conv 1x1 -> Relu -> Conv 3x3 (pads 1) -> Relu -> Conv 1x1
(so the 3x3 conv reads and writes channels-last, as inside a network), profiles it with
NNFUSE_WINOGRAD=force (oneDNN's Winograd wherever the geometry allows), =own (the project's
Winograd F(4x4, 3x3) kernel, src/kernels/cpu/cpu_winograd.h) and =0 (direct) in turn, and
prints the 3x3 kernel's time on each path, the Winograd ones' ratios to the direct one, and
what the rule picks for oneDNN's.

Usage:
  /usr/bin/python3 bench/winograd_rule.py [--channels 32 64 128 256] [--sizes 7 14 28 56]
      [--rounds 2] [--runs 30] [--threads 2] [--nnfuse build/nnfuse] [--json OUT]
"""
import argparse, os, re, subprocess, sys, tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_json  # noqa: E402


def winograd_pays(cin, cout, h, w):
    """The rule of src/cost/winograd_rule.h (kept in step with it)."""
    if cin < 32 or cout < 48:
        return False
    area = h * w
    return area >= 28 * 28 or (area >= 14 * 14 and cout >= 96)


def make_model(cin, cout, hw, path):
    rng = np.random.default_rng(0)
    init = [
        numpy_helper.from_array((rng.standard_normal((cin, cin, 1, 1)) * 0.1).astype(np.float32), "w0"),
        numpy_helper.from_array((rng.standard_normal((cout, cin, 3, 3)) * 0.1).astype(np.float32), "w1"),
        numpy_helper.from_array((rng.standard_normal((cout, cout, 1, 1)) * 0.1).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w0"], ["a"], name="pre"),
        helper.make_node("Relu", ["a"], ["b"], name="pre_relu"),
        helper.make_node("Conv", ["b", "w1"], ["c"], name="conv3x3", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["d"], name="conv3x3_relu"),
        helper.make_node("Conv", ["d", "w2"], ["y"], name="post"),
    ]
    g = helper.make_graph(
        nodes, "winograd_rule",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, hw, hw])], init)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def conv_ms(nnfuse, model, mode, runs, threads):
    env = dict(os.environ, NNFUSE_WINOGRAD=mode)
    out = subprocess.run([nnfuse, "profile", model, "--runs", str(runs), "--threads", str(threads)],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("nnfuse profile %s failed:\n%s" % (model, out.stderr))
    # The 3x3 conv with its Relu is one FusedConv named after the Relu.
    m = re.search(r"^\s*([0-9.]+) ms\s+\S+ 'conv3x3_relu'", out.stdout, re.M)
    if not m:
        sys.exit("no time for conv3x3_relu in the profile of %s:\n%s" % (model, out.stdout))
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--channels", type=int, nargs="+", default=[32, 64, 128, 256])
    ap.add_argument("--sizes", type=int, nargs="+", default=[7, 14, 28, 56])
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per shape")
    ap.add_argument("--runs", type=int, default=30, help="profiled runs per round")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--json", metavar="OUT", help="also write the results, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
    a = ap.parse_args()
    if not os.path.exists(a.nnfuse):
        sys.exit("no nnfuse binary at %s: build first (./scripts/build.sh)" % a.nnfuse)
    print("| Cin | Cout | size | winograd ms | own ms | direct ms | ratio | own ratio | rule picks |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    wrong = 0
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for cin in a.channels:
            for cout in a.channels:
                for hw in a.sizes:
                    path = os.path.join(work, "c_%d_%d_%d.onnx" % (cin, cout, hw))
                    make_model(cin, cout, hw, path)
                    wino, own, direct = [], [], []
                    for _ in range(a.rounds):
                        wino.append(conv_ms(a.nnfuse, path, "force", a.runs, a.threads))
                        own.append(conv_ms(a.nnfuse, path, "own", a.runs, a.threads))
                        direct.append(conv_ms(a.nnfuse, path, "0", a.runs, a.threads))
                    w, o, d = min(wino), min(own), min(direct)
                    pick = winograd_pays(cin, cout, hw, hw)
                    wrong += (w < d) != pick
                    print("| %d | %d | %d | %.3f | %.3f | %.3f | %.2f | %.2f | %s |" %
                          (cin, cout, hw, w, o, d, w / d, o / d, "winograd" if pick else "direct"),
                          flush=True)
                    rows.append({"cin": cin, "cout": cout, "size": hw, "winograd_ms": w,
                                 "own_ms": o, "direct_ms": d, "rule": "winograd" if pick
                                 else "direct"})
    print("\nshapes where the rule picks the slower path on this machine: %d" % wrong)
    if a.json:
        bench_json.write(a.json, "winograd_rule",
                         {"threads": a.threads, "rounds": a.rounds, "runs": a.runs}, rows,
                         {"rule_wrong": wrong})


if __name__ == "__main__":
    main()
