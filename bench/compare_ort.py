#!/usr/bin/env python3
"""nnfuse against ONNX Runtime, side by side on the same machine.

For each model, runs `nnfuse bench --json` and ONNX Runtime (npm onnxruntime-node, CPU
execution provider, bench/ort_bench.js) alternately, A B A B ..., ROUNDS times, each time
RUNS timed runs after warm-up, and reports the median of the per-round medians for both, the
ratio nnfuse/ORT of those medians with the min-max of the per-round ratios, nnfuse's kernels
per inference and peak activation bytes.

Usage:
  /usr/bin/python3 bench/compare_ort.py [--models resnet50 mobilenet_v2 ...] [--rounds 5]
      [--runs 20] [--threads 2] [--ort-level disabled] [--no-fusion] [--zoo DIR] [--json OUT]
      [--shape NAME=d0,d1 ...] [--switch-file F]

--shape runs both with other input dims than the model's (symbolic or fixed), e.g. BERT at
sequence 512: --models bert_base_dyn --shape input_ids=1,512 attention_mask=1,512
token_type_ids=1,512.

Models come from DIR (default bench/zoo), exported there with tests/models/export_models.py
when missing. ONNX Runtime is installed with npm into /tmp/nnfuse-ort unless $ORT_NODE names
an installed onnxruntime-node.
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# One ONNX Runtime install for the tests and the benchmarks (npm, /tmp/nnfuse-ort).
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
from ort_export import ORT_VERSION, ensure_ort  # noqa: E402,F401
sys.path.insert(0, HERE)
import bench_json  # noqa: E402


def ensure_model(zoo, name):
    path = os.path.join(zoo, name + ".onnx")
    if not os.path.exists(path):
        print("exporting %s into %s" % (name, zoo), file=sys.stderr)
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests/models/export_models.py"),
                        zoo, name], check=True)
    return path


def run_json(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return json.loads(lines[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2", "vgg16_bn", "bert_base"])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ort-level", default="disabled", choices=["disabled", "basic", "extended", "all"])
    ap.add_argument("--no-fusion", action="store_true", help="pass --no-fusion to nnfuse")
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo"))
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--json", metavar="OUT", help="also write the results, with the command, "
                    "machine and date, as JSON to this file (bench/bench_json.py)")
    ap.add_argument("--shape", nargs="+", default=[], metavar="NAME=d0,d1",
                    help="input dims to run with instead of the model's")
    ap.add_argument("--switch-file", help="pass --fusion_switch_file FILE to nnfuse (e.g. to "
                    "turn AutoFusionPass off)")
    a = ap.parse_args()
    shapes = {}
    for spec in a.shape:
        name, _, dims = spec.partition("=")
        if not name or not dims:
            raise SystemExit("--shape %s: expected NAME=d0,d1,..." % spec)
        shapes[name] = [int(d) for d in dims.split(",")]
    env = dict(os.environ, ORT_NODE=ensure_ort(), ORT_SHAPES=json.dumps(shapes))
    results = []
    for name in a.models:
        model = ensure_model(a.zoo, name)
        nn, ort, ratios, info = [], [], [], {}
        for r in range(a.rounds):
            cmd = [a.nnfuse, "bench", model, "--json", "--runs", str(a.runs), "--threads", str(a.threads)]
            if a.no_fusion:
                cmd.append("--no-fusion")
            if a.switch_file:
                cmd += ["--fusion_switch_file", a.switch_file]
            for spec in a.shape:
                cmd += ["--shape", spec]
            j = run_json(cmd)
            info = j
            o = run_json(["node", os.path.join(HERE, "ort_bench.js"), model, a.ort_level,
                          str(a.threads), str(a.runs)], env)
            nn.append(j["median_ms"])
            ort.append(o["median_ms"])
            ratios.append(j["median_ms"] / o["median_ms"])
            print("%s round %d: nnfuse %.2f ms, ORT %.2f ms, ratio %.3f"
                  % (name, r + 1, nn[-1], ort[-1], ratios[-1]), file=sys.stderr)
        label = name + ("" if not shapes else " " + " ".join(
            "%s=%s" % (k, "x".join(map(str, v))) for k, v in shapes.items()))
        res = {"model": label, "nnfuse_ms": statistics.median(nn), "ort_ms": statistics.median(ort),
               "ratio": statistics.median(nn) / statistics.median(ort),
               "ratio_min": min(ratios), "ratio_max": max(ratios),
               "kernels": info["kernels"], "nodes": info["nodes"],
               "peak_activation_bytes": info["peak_activation_bytes"],
               "total_activation_bytes": info["total_activation_bytes"]}
        results.append(res)
    print("\nnnfuse vs ONNX Runtime %s (level %s), %d threads, %d rounds x %d runs, alternating"
          % (ORT_VERSION, a.ort_level, a.threads, a.rounds, a.runs))
    print("| model | nnfuse ms | ORT ms | ratio (min-max) | kernels / nodes | peak / all activations (MiB) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %.2f | %.2f | %.3f (%.3f-%.3f) | %d / %d | %.1f / %.1f |"
              % (r["model"], r["nnfuse_ms"], r["ort_ms"], r["ratio"], r["ratio_min"], r["ratio_max"],
                 r["kernels"], r["nodes"], r["peak_activation_bytes"] / 2**20,
                 r["total_activation_bytes"] / 2**20))
    if a.json:
        bench_json.write(a.json, "compare_ort",
                         {"ort": ORT_VERSION, "ort_level": a.ort_level, "no_fusion": a.no_fusion,
                          "switch_file": a.switch_file, "shapes": shapes, "threads": a.threads,
                          "rounds": a.rounds, "runs": a.runs}, results)


if __name__ == "__main__":
    main()
