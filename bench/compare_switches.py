#!/usr/bin/env python3
"""nnfuse against itself under two fusion switch files, alternating A B A B ...

For one model, runs `nnfuse bench --json` with switch file A and with switch file B (`-` for
none: the default passes) ROUNDS times each, RUNS timed runs per call, and prints both medians,
their kernels per inference, and the median A/B ratio of the rounds with its min-max.

Usage:
  /usr/bin/python3 bench/compare_switches.py MODEL.onnx A.json|- B.json|- [--rounds 5]
      [--runs 20] [--threads 2] [--nnfuse build/nnfuse]

For example, automatic fusion on against off:
  echo '{"Switch":{"GraphFusion":{"AutoFusionPass":"off"}}}' > /tmp/noauto.json
  /usr/bin/python3 bench/compare_switches.py bench/zoo/act_mlp.onnx - /tmp/noauto.json
"""
import argparse, json, os, statistics, subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(a, switch_file):
    cmd = [a.nnfuse, "bench", a.model, "--runs", str(a.runs), "--threads", str(a.threads), "--json"]
    if switch_file != "-":
        cmd += ["--fusion_switch_file", switch_file]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    j = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    return j["median_ms"], j["kernels"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    a = ap.parse_args()
    ms_a, ms_b, ratios = [], [], []
    for _ in range(a.rounds):
        x, ka = bench(a, a.a)
        y, kb = bench(a, a.b)
        ms_a.append(x)
        ms_b.append(y)
        ratios.append(x / y)
    print("%s: A (%s) %.3f ms, %d kernels; B (%s) %.3f ms, %d kernels; A/B %.3f (%.3f-%.3f)"
          % (os.path.basename(a.model), a.a, statistics.median(ms_a), ka, a.b,
             statistics.median(ms_b), kb, statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
