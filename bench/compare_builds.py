#!/usr/bin/python3
"""Two nnfuse builds side by side on the sweep's models: what fuses and how fast each runs.

For each model (exported by bench/sweep.py's exporter into its cache): the kernels per inference
and the reference kernels of each build (`nnfuse bench --json`), then their latency alternating
A B A B, ROUNDS times, RUNS timed runs each; ratio = median B / median A, with the spread of the
per-round ratios (min-max). A refactoring that leaves what users get alone shows equal kernel
counts and ratios within the machine's noise (the per-round spread says how large that is).

Usage:
  /usr/bin/python3 bench/compare_builds.py --a OLD/nnfuse --b build/nnfuse [--models NAME ...]
      [--resolution N] [--rounds 5] [--runs 10] [--threads 2] [--zoo bench/zoo/sweep]
      [--json OUT]
"""
import argparse, math, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_json  # noqa: E402
import compare_ort  # noqa: E402  (run_json)
import sweep  # noqa: E402  (the models, their exports and inputs)


def bench(nnfuse, path, flags, runs, threads):
    return compare_ort.run_json([nnfuse, "bench", path, "--json", "--runs", str(runs),
                                 "--threads", str(threads)] + flags)


def compare_model(a, name, flags_of):
    stem, res, _ = sweep.plan(name, a.resolution)
    path, _ = sweep.ensure_export(name, res, a.zoo, stem, a.threads)
    flags = flags_of(path)
    first = {k: bench(b, path, flags, 1, a.threads) for k, b in (("a", a.a), ("b", a.b))}
    row = {"model": stem, "kernels_a": first["a"]["kernels"], "kernels_b": first["b"]["kernels"],
           "ref_a": first["a"].get("reference_kernels", 0),
           "ref_b": first["b"].get("reference_kernels", 0)}
    ma, mb, ratios = [], [], []
    for _ in range(a.rounds):
        ra = bench(a.a, path, flags, a.runs, a.threads)["median_ms"]
        rb = bench(a.b, path, flags, a.runs, a.threads)["median_ms"]
        ma.append(ra)
        mb.append(rb)
        ratios.append(rb / ra)
    row.update(ms_a=statistics.median(ma), ms_b=statistics.median(mb),
               ratio=statistics.median(mb) / statistics.median(ma), ratio_min=min(ratios),
               ratio_max=max(ratios))
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    ap.add_argument("--a", required=True, metavar="NNFUSE", help="the build compared against")
    ap.add_argument("--b", required=True, metavar="NNFUSE", help="the build compared")
    ap.add_argument("--models", nargs="+", default=sweep.DEFAULT_MODELS, metavar="NAME")
    ap.add_argument("--resolution", type=int)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo", "sweep"), metavar="DIR")
    ap.add_argument("--json", metavar="OUT", help="also write the rows as a results file")
    a = ap.parse_args()
    for b in (a.a, a.b):
        if not os.access(b, os.X_OK):
            sys.exit("compare_builds: %s: no such executable" % b)
    os.makedirs(a.zoo, exist_ok=True)

    def flags_of(path):
        # Inputs with symbolic dims at the exported inputs' sizes, as the sweep runs them.
        io = os.path.splitext(path)[0] + "_io"
        flags = []
        for f in sorted(os.listdir(io)) if os.path.isdir(io) else []:
            if f.startswith("in_") and f.endswith(".npy"):
                flags += ["--input", "%s=%s" % (f[3:-4], os.path.join(io, f))]
        return flags

    rows, failed = [], 0
    print("%-34s %9s %9s %8s %8s %7s %13s" % ("model", "kernels A", "kernels B", "A ms", "B ms",
                                             "B/A", "rounds min-max"))
    for i, name in enumerate(a.models):
        print("[%d/%d] %s" % (i + 1, len(a.models), name), file=sys.stderr)
        try:
            r = compare_model(a, name, flags_of)
        except (RuntimeError, SystemExit) as e:
            failed += 1
            rows.append({"model": name, "error": str(e)[:300]})
            print("%-34s error: %s" % (name, str(e)[:200]))
            continue
        rows.append(r)
        print("%-34s %9d %9d %8.3f %8.3f %7.3f %6.3f-%.3f%s" %
              (r["model"], r["kernels_a"], r["kernels_b"], r["ms_a"], r["ms_b"], r["ratio"],
               r["ratio_min"], r["ratio_max"],
               "" if r["kernels_a"] == r["kernels_b"] else "  (kernel counts differ)"))
        sys.stdout.flush()
    done = [r for r in rows if "ratio" in r]
    summary = {"models": len(done), "errors": failed,
               "geomean_ratio": math.exp(statistics.mean(math.log(r["ratio"]) for r in done))
               if done else None,
               "kernel_counts_differ": [r["model"] for r in done
                                        if r["kernels_a"] != r["kernels_b"]]}
    if done:
        print("geomean B/A %.3f over %d models; kernel counts differ on %d" %
              (summary["geomean_ratio"], len(done), len(summary["kernel_counts_differ"])))
    if a.json:
        bench_json.write(a.json, "compare_builds",
                         {"a": a.a, "b": a.b, "rounds": a.rounds, "runs": a.runs,
                          "threads": a.threads, "resolution": a.resolution}, rows, summary)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
