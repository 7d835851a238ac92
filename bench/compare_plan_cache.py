#!/usr/bin/env python3
"""A model with symbolic dims through one plan cache against plans specialized with --shape.

Alternating ROUNDS times: one `nnfuse bench --shape-cycle SET ...` process that runs every
shape set in turn on one plan cache, then one `nnfuse bench --shape ...` process per set (the
plan built for that set alone). Prints per set both medians, their ratio (cycle / specialized)
with the min-max over rounds, kernels and reference kernels.

Usage:
  /usr/bin/python3 bench/compare_plan_cache.py MODEL.onnx --set "input_ids=1,32 ..." \\
      --set "input_ids=4,128 ..." [--rounds 3] [--runs 20] [--threads 2] [--nnfuse build/nnfuse]
      [--json OUT]

For example, a BERT exported with symbolic batch and sequence (tests/models/export_models.py
DIR bert_base_dyn):
  S="input_ids=%s attention_mask=%s token_type_ids=%s"
  /usr/bin/python3 bench/compare_plan_cache.py DIR/bert_base_dyn.onnx \\
      --set "$(printf "$S" 1,32 1,32 1,32)" --set "$(printf "$S" 1,128 1,128 1,128)" \\
      --set "$(printf "$S" 4,128 4,128 4,128)"
"""
import argparse, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_json  # noqa: E402


def bench(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s" % (r.returncode, " ".join(cmd), r.stderr))
    return json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--set", action="append", required=True, dest="sets")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--json", metavar="OUT", help="also write the results, with the command, "
                    "machine and date, as JSON (bench/bench_json.py)")
    a = ap.parse_args()
    base = [a.nnfuse, "bench", a.model, "--runs", str(a.runs), "--threads", str(a.threads),
            "--json"]
    cycle_ms = [[] for _ in a.sets]
    fixed_ms = [[] for _ in a.sets]
    info = [None] * len(a.sets)
    for r in range(a.rounds):
        cmd = list(base)
        for s in a.sets:
            cmd += ["--shape-cycle", s]
        j = bench(cmd)
        for i, e in enumerate(j["shape_sets"]):
            cycle_ms[i].append(e["median_ms"])
            info[i] = (e["kernels"], e["reference_kernels"], e["first_run_ms"], j["plans_built"])
        for i, s in enumerate(a.sets):
            cmd = list(base)
            for spec in s.replace(";", " ").split():
                cmd += ["--shape", spec]
            fixed_ms[i].append(bench(cmd)["median_ms"])
        print("round %d of %d done" % (r + 1, a.rounds), flush=True)
    print("%-44s %10s %12s %22s %8s %5s %10s" % ("shapes", "cycle ms", "--shape ms",
                                                 "ratio (min-max)", "kernels", "ref",
                                                 "first ms"))
    rows = []
    for i, s in enumerate(a.sets):
        ratios = [c / f for c, f in zip(cycle_ms[i], fixed_ms[i])]
        rows.append({"shapes": s, "cycle_ms": statistics.median(cycle_ms[i]),
                     "shape_ms": statistics.median(fixed_ms[i]),
                     "ratio": statistics.median(ratios), "ratio_min": min(ratios),
                     "ratio_max": max(ratios), "kernels": info[i][0],
                     "reference_kernels": info[i][1], "first_run_ms": info[i][2]})
        print("%-44s %10.3f %12.3f %8.3f (%.3f-%.3f) %8d %5d %10.1f" % (
            s[:44], rows[-1]["cycle_ms"], rows[-1]["shape_ms"], rows[-1]["ratio"], min(ratios),
            max(ratios), info[i][0], info[i][1], info[i][2]))
    print("plans built per cycle process: %d" % info[0][3])
    if a.json:
        bench_json.write(a.json, "compare_plan_cache",
                         {"model": os.path.basename(a.model), "threads": a.threads,
                          "rounds": a.rounds, "runs": a.runs}, rows,
                         {"plans_built": info[0][3]})


if __name__ == "__main__":
    main()
