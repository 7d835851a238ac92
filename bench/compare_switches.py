#!/usr/bin/env python3
"""nnfuse against itself under two fusion switch files, alternating A B A B ...

For one model, runs `nnfuse bench --json` with switch file A and with switch file B (`-` for
none: the default passes) ROUNDS times each, RUNS timed runs per call, and prints both medians,
their kernels per inference, and the median A/B ratio of the rounds with its min-max.

Usage:
  /usr/bin/python3 bench/compare_switches.py MODEL.onnx A.json|- B.json|- [--rounds 5]
      [--runs 20] [--threads 2] [--nnfuse build/nnfuse] [--json OUT]

For example, automatic fusion on against off:
  echo '{"Switch":{"GraphFusion":{"AutoFusionPass":"off"}}}' > /tmp/noauto.json
  /usr/bin/python3 bench/compare_switches.py bench/zoo/act_mlp.onnx - /tmp/noauto.json
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_json  # noqa: E402


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
    ap.add_argument("--json", metavar="OUT", help="also write the result, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
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
    if a.json:
        switches = lambda f: None if f == "-" else open(f).read().strip()
        bench_json.write(a.json, "compare_switches",
                         {"threads": a.threads, "rounds": a.rounds, "runs": a.runs},
                         [{"model": os.path.basename(a.model), "a": switches(a.a),
                           "b": switches(a.b), "a_ms": statistics.median(ms_a),
                           "b_ms": statistics.median(ms_b), "a_kernels": ka, "b_kernels": kb,
                           "ratio": statistics.median(ratios), "ratio_min": min(ratios),
                           "ratio_max": max(ratios)}])


if __name__ == "__main__":
    main()
