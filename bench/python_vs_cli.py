#!/usr/bin/python3
"""Latency through the Python module against the CLI's bench, alternating, on one model.

Each round runs `nnfuse bench --json` (RUNS timed runs after warm-up) and then the same number
of timed `Model.run` calls from Python on the same compiled model, threads and input; prints
each side's median of per-round medians and their ratio (python / CLI) with the min-max.

Usage:
  /usr/bin/python3 bench/python_vs_cli.py [--model bench/zoo/resnet50.onnx] [--rounds 5]
      [--runs 20] [--threads 2] [--nnfuse build/nnfuse] [--json OUT]

The model is exported with tests/models/export_models.py when missing; the module is taken
from build/python (scripts/build.sh builds it).
"""
import argparse, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
sys.path.insert(0, HERE)

import bench_json  # noqa: E402

import numpy as np  # noqa: E402
import nnfuse  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(HERE, "zoo", "resnet50.onnx"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--json", metavar="OUT", help="also write the result, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
    a = ap.parse_args()
    if not os.path.exists(a.model):
        name = os.path.splitext(os.path.basename(a.model))[0]
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tests/models/export_models.py"),
                        os.path.dirname(a.model), name], check=True)
    m = nnfuse.compile(a.model, threads=a.threads)
    rng = np.random.default_rng(0)
    feeds = {}
    for name, (dtype, shape) in m.inputs.items():
        feeds[name] = (rng.random([max(d, 1) for d in shape]) * 2 - 1).astype(dtype)
    for _ in range(3):
        m.run(feeds)
    cli, py = [], []
    for r in range(a.rounds):
        out = subprocess.run([a.nnfuse, "bench", a.model, "--threads", str(a.threads), "--runs",
                              str(a.runs), "--json"], capture_output=True, text=True, check=True)
        cli.append(json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
                   ["median_ms"])
        ts = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            m.run(feeds)
            ts.append((time.perf_counter() - t0) * 1e3)
        py.append(statistics.median(ts))
        print("round %d: CLI %.3f ms, Python %.3f ms" % (r + 1, cli[-1], py[-1]), file=sys.stderr)
    ratios = [p / c for p, c in zip(py, cli)]
    print("%s, %d threads: CLI %.3f ms, Python %.3f ms, python/CLI %.3f (%.3f-%.3f)" % (
        os.path.basename(a.model), a.threads, statistics.median(cli), statistics.median(py),
        statistics.median(py) / statistics.median(cli), min(ratios), max(ratios)))
    if a.json:
        bench_json.write(a.json, "python_vs_cli",
                         {"threads": a.threads, "rounds": a.rounds, "runs": a.runs},
                         [{"model": os.path.basename(a.model), "cli_ms": statistics.median(cli),
                           "python_ms": statistics.median(py),
                           "ratio": statistics.median(py) / statistics.median(cli),
                           "ratio_min": min(ratios), "ratio_max": max(ratios)}])


if __name__ == "__main__":
    main()
