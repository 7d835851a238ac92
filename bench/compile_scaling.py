#!/usr/bin/env python3
"""Compile time against graph size: nnfuse on generated graphs of 10k to 100k nodes.

Two graph families, both on a [1, 16] float input:
  chain  N Relu nodes in a row (automatic fusion makes N/32 generated kernels of one source);
  dag    N random elementwise nodes (Relu, Sigmoid, Tanh, Add, Mul, Sub), each reading nodes
         among the 20 (unary) or 50 (binary) before it, every unread value a graph output
         (thousands of distinct generated kernels).

For each, times `nnfuse compile` (import, every pass, export) and `nnfuse run --no-fusion`
(import, planning, one inference), and prints the load / fuse / save split that compile
reports. Generated kernels are built into a fresh cache first (a `warm` compile), so the
figures are the graph algorithms' cost; `--cold` times the first compile instead, compiler
invocations included.

Usage:
  /usr/bin/python3 bench/compile_scaling.py [--sizes 10000 20000 50000 100000]
      [--families chain dag] [--cold] [--nnfuse build/nnfuse] [--work DIR] [--json OUT]
"""
import argparse, os, random, re, subprocess, sys, tempfile, time

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_json  # noqa: E402


def make_chain(n):
    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else "v%d" % i
        nodes.append(helper.make_node("Relu", [prev], [out], name="relu%d" % i))
        prev = out
    return nodes, ["y"]


def make_dag(n, seed=0):
    rnd = random.Random(seed)
    nodes, vals = [], ["x"]
    for i in range(n):
        op = rnd.choice(["Relu", "Sigmoid", "Tanh", "Add", "Mul", "Sub"])
        k = len(vals)
        ins = [vals[rnd.randrange(max(0, k - 20), k)]]
        if op in ("Add", "Mul", "Sub"):
            ins.append(vals[rnd.randrange(max(0, k - 50), k)])
        out = "v%d" % i
        nodes.append(helper.make_node(op, ins, [out], name="n%d" % i))
        vals.append(out)
    read = {i for nd in nodes for i in nd.input}
    return nodes, [v for v in vals[1:] if v not in read]


def write_model(family, n, path):
    nodes, outs = (make_chain if family == "chain" else make_dag)(n)
    vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 16])
    g = helper.make_graph(nodes, family, [vi("x")], [vi(o) for o in outs])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("command failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr[-2000:]))
    return dt, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10000, 20000, 50000, 100000])
    ap.add_argument("--families", nargs="+", default=["chain", "dag"], choices=["chain", "dag"])
    ap.add_argument("--cold", action="store_true", help="time the first compile (cold cache)")
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--work", default=None, help="folder for the models (default: a temp dir)")
    ap.add_argument("--json", metavar="OUT", help="also write the results, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="nnfuse-scaling-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, NNFUSE_CACHE_DIR=os.path.join(work, "jit-cache"))
    x = os.path.join(work, "x.npy")
    np.save(x, np.random.default_rng(0).standard_normal((1, 16)).astype(np.float32))

    print("%-6s %7s %10s %24s %9s %14s" % ("family", "nodes", "compile s", "load / fuse / save s",
                                            "nodes out", "run --no-fusion s"))
    rows = []
    for family in a.families:
        for n in a.sizes:
            model = os.path.join(work, "%s_%d.onnx" % (family, n))
            if not os.path.exists(model):
                write_model(family, n, model)
            out = os.path.join(work, "out.onnx")
            compile_cmd = [a.nnfuse, "compile", model, "-o", out]
            if not a.cold:
                timed(compile_cmd, env)  # builds the generated kernels into the cache
            dt, text = timed(compile_cmd, env)
            m = re.search(r"time: load ([\d.]+) s, fuse ([\d.]+) s .*save ([\d.]+) s", text)
            k = re.search(r"-> (\d+)", text)
            split = "%s / %s / %s" % m.groups() if m else "?"
            run_dt, _ = timed([a.nnfuse, "run", model, "--no-fusion", "--input", "x=" + x,
                               "--output-dir", os.path.join(work, "out")], env)
            print("%-6s %7d %10.2f %24s %9s %14.2f" % (family, n, dt, split,
                                                       k.group(1) if k else "?", run_dt),
                  flush=True)
            load, fuse, save = (float(x) for x in m.groups()) if m else (None, None, None)
            rows.append({"family": family, "nodes": n, "compile_s": dt, "load_s": load,
                         "fuse_s": fuse, "save_s": save,
                         "nodes_after": int(k.group(1)) if k else None, "run_s": run_dt})
    if a.json:
        bench_json.write(a.json, "compile_scaling", {"cold": a.cold}, rows)


if __name__ == "__main__":
    main()
