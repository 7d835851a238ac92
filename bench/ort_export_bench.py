#!/usr/bin/env python3
"""ONNX Runtime running nnfuse's export against ONNX Runtime's own fusions, side by side.

For each model: `nnfuse compile --format ort` writes the fused graph with ONNX Runtime's contrib
ops; then ONNX Runtime (npm onnxruntime-node, CPU) runs that export with graph optimization
`disabled` (what runs is nnfuse's graph) and the original model at level `all` (ORT's own
fusions), and the export at level `all` too (how a server would run it: ORT's layout
optimizations, such as its blocked NCHWc convolutions, apply to the export as well), in turn,
A B C A B C ..., ROUNDS times, each RUNS timed runs after warm-up. Reports the median of the
per-round medians of each, the ratios to ORT's own (below 1: nnfuse's fusion serves faster)
with the min-max of the per-round ratios, and the node counts.

Usage:
  /usr/bin/python3 bench/ort_export_bench.py [--models resnet50 bert_base ...] [--zoo DIR]
      [--rounds 3] [--runs 10] [--threads 2] [--json OUT]

Models are <zoo>/<name>.onnx with their inputs in <name>_io/ (bench/sweep.py's zoo,
bench/zoo/sweep by default; resnet50 from bench/zoo).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
from ort_export import ORT_VERSION, ensure_ort, count_nodes, zoo_feeds  # noqa: E402
sys.path.insert(0, HERE)
import bench_json  # noqa: E402

DEFAULT_MODELS = ["resnet18_224", "mobilenet_v2_224", "efficientnet_b0_224", "densenet121_224",
                  "convnext_tiny_224", "vit_b_16_224", "bert_base"]


def run_json(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    return json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS)
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo", "sweep"))
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="OUT", help="also write the results, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
    a = ap.parse_args()
    env = dict(os.environ, ORT_NODE=ensure_ort())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models:
            path, feeds = zoo_feeds(a.zoo, name)
            shapes = {k: list(v.shape) for k, v in feeds.items()}
            export = os.path.join(tmp, name + ".ort.onnx")
            cmd = [a.nnfuse, "compile", path, "-o", export, "--format", "ort", "--json"]
            for k, v in shapes.items():
                cmd += ["--shape", "%s=%s" % (k, ",".join(map(str, v)))]
            run_json(cmd)
            optimized = os.path.join(tmp, name + ".ort_all.onnx")
            spec = json.dumps([{"name": k, "elem": onnx.helper.np_dtype_to_tensor_dtype(v.dtype)
                                if hasattr(onnx.helper, "np_dtype_to_tensor_dtype")
                                else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[v.dtype],
                                "shape": list(v.shape)} for k, v in feeds.items()])
            run_env = dict(env, ORT_SPEC=spec)
            exp_ms, ort_ms, all_ms, ratios, all_ratios = [], [], [], [], []
            bench = os.path.join(HERE, "ort_bench.js")
            for r in range(a.rounds):
                e = run_json(["node", bench, export, "disabled", str(a.threads), str(a.runs)],
                             run_env)
                o = run_json(["node", bench, path, "all", str(a.threads), str(a.runs)]
                             + ([optimized] if r == 0 else []), run_env)
                x = run_json(["node", bench, export, "all", str(a.threads), str(a.runs)], run_env)
                exp_ms.append(e["median_ms"])
                ort_ms.append(o["median_ms"])
                all_ms.append(x["median_ms"])
                ratios.append(e["median_ms"] / o["median_ms"])
                all_ratios.append(x["median_ms"] / o["median_ms"])
                print("%s round %d: export (disabled) %.2f ms, ORT all %.2f ms, export (all) "
                      "%.2f ms, ratios %.3f %.3f" % (name, r + 1, exp_ms[-1], ort_ms[-1],
                                                    all_ms[-1], ratios[-1], all_ratios[-1]),
                      file=sys.stderr)
            rows.append({"model": name, "export_ms": statistics.median(exp_ms),
                         "ort_all_ms": statistics.median(ort_ms),
                         "export_all_ms": statistics.median(all_ms),
                         "ratio": statistics.median(exp_ms) / statistics.median(ort_ms),
                         "ratio_min": min(ratios), "ratio_max": max(ratios),
                         "all_ratio": statistics.median(all_ms) / statistics.median(ort_ms),
                         "all_ratio_min": min(all_ratios), "all_ratio_max": max(all_ratios),
                         "export_nodes": count_nodes(export),
                         "ort_all_nodes": count_nodes(optimized),
                         "nodes": count_nodes(path)})
    print("\nONNX Runtime %s running nnfuse's export (disabled) vs its own fusions (all), "
          "%d threads, %d rounds x %d runs, alternating" % (ORT_VERSION, a.threads, a.rounds,
                                                           a.runs))
    print("| model | nodes | export nodes | ORT all nodes | ORT all ms | export (disabled) ms "
          "| ratio (min-max) | export (all) ms | ratio (min-max) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %d | %d | %d | %.2f | %.2f | %.3f (%.3f-%.3f) | %.2f | %.3f (%.3f-%.3f) |"
              % (r["model"], r["nodes"], r["export_nodes"], r["ort_all_nodes"],
                 r["ort_all_ms"], r["export_ms"], r["ratio"], r["ratio_min"], r["ratio_max"],
                 r["export_all_ms"], r["all_ratio"], r["all_ratio_min"], r["all_ratio_max"]))
    if a.json:
        bench_json.write(a.json, "ort_export_bench",
                         {"ort": ORT_VERSION, "threads": a.threads, "rounds": a.rounds,
                          "runs": a.runs}, rows)


if __name__ == "__main__":
    main()
