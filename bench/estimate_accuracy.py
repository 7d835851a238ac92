#!/usr/bin/env python3
"""How far the roofline estimate is from the measurement, per fused node.

For each model, runs `nnfuse report MODEL --measure --runs N --json OUT` (both the fused and the
unfused model profiled on the same inputs) and compares every fused node's `estimated_speedup`
with its `measured_speedup` (its original nodes' kernels unfused over its own kernel fused):
the ratio estimate / measurement, its median and its worst (farthest from 1 either way), and
the same for the whole model.

Usage:
  /usr/bin/python3 bench/estimate_accuracy.py [--models resnet50 bert_base] [--runs 20]
      [--threads 2] [--zoo bench/zoo] [--nnfuse build/nnfuse] [--out DIR]

Models come from ZOO (exported there with tests/models/export_models.py when missing). Run
`nnfuse calibrate` first so the estimates are for this machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from compare_ort import ensure_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", default=["resnet50", "bert_base"])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--zoo", default=os.path.join(ROOT, "bench", "zoo"))
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--out", default="/tmp/nnfuse-estimate-accuracy")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for m in a.models:
        model = ensure_model(a.zoo, m)
        js = os.path.join(a.out, m + ".json")
        cmd = [a.nnfuse, "report", model, "-o", os.path.join(a.out, m + ".html"), "--measure",
               "--runs", str(a.runs), "--threads", str(a.threads), "--json", js]
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        j = json.load(open(js))
        ratios = []
        for f in j["fused_nodes"]:
            if "estimated_speedup" in f and "measured_speedup" in f and f["measured_speedup"] > 0:
                ratios.append((f["estimated_speedup"] / f["measured_speedup"], f["node"], f))
        n = len(j["fused_nodes"])
        if not ratios:
            print(f"{m}: no fused node has both an estimate and a measurement ({n} fused)")
            continue
        med = statistics.median(r for r, _, _ in ratios)
        worst = max(ratios, key=lambda t: max(t[0], 1 / t[0]))
        s = j["summary"]
        whole = s.get("estimated_speedup", 0) / s["measured_speedup"] if s.get("measured_speedup") else 0
        print(f"{m}: {len(ratios)} of {n} fused nodes estimated and measured; estimate/measured "
              f"median {med:.2f}, worst {worst[0]:.2f} ('{worst[1]}', estimated "
              f"{worst[2]['estimated_speedup']:.2f}x, measured {worst[2]['measured_speedup']:.2f}x); "
              f"whole model estimated {s.get('estimated_speedup', 0):.2f}x, measured "
              f"{s.get('measured_speedup', 0):.2f}x (ratio {whole:.2f})")
        rows.append((m, len(ratios), n, med, worst[0]))
    print("\n| model | nodes compared | median estimate/measured | worst |")
    print("|---|---:|---:|---:|")
    for m, k, n, med, w in rows:
        print(f"| {m} | {k} of {n} | {med:.2f} | {w:.2f} |")


if __name__ == "__main__":
    main()
