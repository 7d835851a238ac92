#!/usr/bin/python3
"""Families sweep: model families whose mechanism is a cliff elsewhere (bench/families.py),
exported by the project itself, each run by nnfuse and by ONNX Runtime on the same inputs.

Families: mixture-of-experts layers (Switch top-1 and Mixtral top-2 routing written with
index_add, and top-2 written with index_select and scatter_add), masked selection (x[mask]
through an MLP), ConvNeXt-V2 with GRN, a detector's post-processing (score filtering, NMS, a box
head over the boxes kept), a scripted greedy-decoding Loop over a small decoder whose KV cache
grows, and an If-gated block.

For each model:
  - error:        `nnfuse run` against PyTorch, max|got - want| / max|want| over every output;
  - ref kernels:  `reference_kernels` of `nnfuse bench --json`, and whether `bench --strict`
                  passes (no compute op on a reference kernel, subgraphs included);
  - kernels:      launches per inference, against ONNX Runtime's optimized nodes (level all);
  - latency:      nnfuse bench and bench/ort_bench.js on the same inputs, alternating A B A B,
                  ROUNDS times, RUNS timed runs each; ratio = median nnfuse / median ORT;
  - overheads:    an MoE layer against its companion (the same experts run on static slices of
                  the routed token counts, no routing), and the greedy Loop's time per step
                  against its companion (one step as a model of its own, at the middle KV
                  length), both on nnfuse, alternating; and the subgraph plans made while the
                  timed runs ran (`subgraphs_planned_while_running` of bench --json: 0 when
                  nothing is planned per iteration).
At the end: the geomean of the ratios and how many models fail each criterion.

Usage:
  /usr/bin/python3 bench/sweep_families.py [--models NAME ...] [--rounds 3] [--runs 20]
      [--threads 2] [--zoo bench/zoo/families] [--json OUT] [--nnfuse build/nnfuse] [--no-ort]
      [--assert]

  --assert   exit 1 when a model errors, its error is over 1e-4, `bench --strict` fails, or a
             ratio is over 1.0x.
"""
import argparse, json, math, os, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bench_json  # noqa: E402
import compare_ort  # noqa: E402
import sweep  # noqa: E402  (check_error, strict_check, timed_json, io_spec, ort_nodes, short)

PYTHON = "/usr/bin/python3"
TOL = 1e-4
FAMILIES = ["moe_switch", "moe_mixtral", "moe_scatter", "masked_mlp", "convnext_v2",
            "detect_post", "greedy_loop", "if_gated"]
COMPANIONS = {"moe_switch": "moe_switch_dense", "moe_mixtral": "moe_mixtral_dense",
              "moe_scatter": "moe_scatter_dense", "greedy_loop": "greedy_step"}
STEPS = {"greedy_loop": 32}  # decoding steps per run (twice the 16 cached positions)


def log(*a):
    print("[families %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def export_one(name, zoo):
    """Runs in its own process (it imports torch): ZOO/NAME.onnx, its inputs and PyTorch's
    outputs in ZOO/NAME_io/."""
    import numpy as np
    import torch
    import families
    torch.set_num_threads(1)
    m, ins, how = families.build(name)
    with torch.no_grad():
        want = m(*ins.values())
        exported = torch.jit.script(m) if how == "script" else m
        path = os.path.join(zoo, name + ".onnx")
        torch.onnx.export(exported, tuple(ins.values()), path, input_names=list(ins),
                          opset_version=17)
    want = want if isinstance(want, tuple) else (want,)
    d = os.path.join(zoo, name + "_io")
    os.makedirs(d, exist_ok=True)
    for k, v in ins.items():
        np.save(os.path.join(d, "in_%s.npy" % k), v.numpy())
    for k, v in enumerate(want):
        np.save(os.path.join(d, "out_%d.npy" % k), v.numpy())
    with open(os.path.join(zoo, name + ".json"), "w") as f:
        json.dump({"name": name, "opset": 17, "export": how}, f)


def ensure_export(name, zoo):
    path = os.path.join(zoo, name + ".onnx")
    if not (os.path.exists(path) and os.path.exists(os.path.join(zoo, name + ".json"))):
        r = subprocess.run([PYTHON, os.path.abspath(__file__), "--_export", name, zoo],
                           capture_output=True, text=True)
        if r.returncode != 0 or not os.path.exists(path):
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            raise RuntimeError("export failed (%d): %s" % (r.returncode,
                                                          sweep.short(lines[-1] if lines else "")))
    return path


def bench_cmd(a, path, ins, io_dir, runs):
    cmd = [a.nnfuse, "bench", path, "--json", "--quiet", "--runs", str(runs),
           "--threads", str(a.threads)]
    for i in ins:
        cmd += ["--input", "%s=%s" % (i["name"], os.path.join(io_dir, "in_%s.npy" % i["name"]))]
    return cmd


def sweep_model(a, name, ort_env, idx, total):
    row = {"model": name, "notes": [], "errors": []}
    tag = "[%d/%d] %s" % (idx, total, name)

    def step(what, fn):
        log(tag, what)
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 (reported in the row)
            row["errors"].append("%s: %s" % (what, sweep.short(e, 300)))
            log(tag, what, "FAILED:", sweep.short(e, 300))
            return None

    path = step("export", lambda: ensure_export(name, a.zoo))
    if path is None:
        return row
    ins, outs = sweep.io_spec(path)
    io_dir = os.path.join(a.zoo, name + "_io")
    row["error"] = step("nnfuse run vs PyTorch", lambda: sweep.check_error(a, path, ins, outs, io_dir))
    strict = step("nnfuse bench --strict", lambda: sweep.strict_check(a, path))
    if strict is not None:
        row["strict_ok"] = strict[0]
        if not strict[0]:
            row["notes"].append("strict: " + strict[1])
    bench = bench_cmd(a, path, ins, io_dir, a.runs)
    ort_cmd = ["node", os.path.join(HERE, "ort_bench.js"), path, "all", str(a.threads), str(a.runs)]
    env = None
    if not a.no_ort:
        env = dict(ort_env, ORT_SPEC=json.dumps(ins), ORT_SHAPES="{}", ORT_INPUT_DIR=io_dir)
        with tempfile.TemporaryDirectory(prefix="families_ort_", dir=a.zoo) as tmp:
            n = step("ORT optimized model (level all)", lambda: sweep.ort_nodes(a, path, env, tmp))
        if n is not None:
            row["ort_nodes"], row["ort_op_histogram"] = n
    companion = COMPANIONS.get(name)
    comp_cmd = None
    if companion:
        cpath = step("export companion " + companion, lambda: ensure_export(companion, a.zoo))
        if cpath:
            cins, _ = sweep.io_spec(cpath)
            comp_cmd = bench_cmd(a, cpath, cins, os.path.join(a.zoo, companion + "_io"), a.runs)
    nn_ms, ort_ms, ratios, comp_ms = [], [], [], []
    for r in range(a.rounds):
        j = step("round %d: nnfuse bench" % (r + 1), lambda: sweep.timed_json(bench))
        if j is None:
            break
        info, _ = j
        nn_ms.append(info["median_ms"])
        if r == 0:
            for k in ("kernels", "reference_kernels", "reference_kernel_share",
                      "kernel_histogram", "subgraphs_planned_while_running"):
                row[k] = info.get(k)
        if comp_cmd:
            c = step("round %d: companion" % (r + 1), lambda: sweep.timed_json(comp_cmd))
            if c is not None:
                comp_ms.append(c[0]["median_ms"])
        if a.no_ort:
            continue
        o = step("round %d: ORT bench" % (r + 1), lambda: sweep.timed_json(ort_cmd, env))
        if o is None:
            break
        ort_ms.append(o[0]["median_ms"])
        ratios.append(nn_ms[-1] / ort_ms[-1])
        log(tag, "round %d: nnfuse %.3f ms, ORT %.3f ms, ratio %.3f" % (r + 1, nn_ms[-1], ort_ms[-1], ratios[-1]))
    if nn_ms:
        row["nnfuse_ms"] = statistics.median(nn_ms)
    if ratios:
        row["ort_ms"] = statistics.median(ort_ms)
        row["ratio"] = row["nnfuse_ms"] / row["ort_ms"]
        row["ratio_min"], row["ratio_max"] = min(ratios), max(ratios)
    if comp_ms and nn_ms:
        row["companion"] = companion
        row["companion_ms"] = statistics.median(comp_ms)
        per = row["nnfuse_ms"] / STEPS.get(name, 1)
        row["overhead"] = per / row["companion_ms"]
        what = "per step / one step alone" if name in STEPS else "routed / dense experts"
        row["notes"].append("%s %.3f (%.3f / %.3f ms)" % (what, row["overhead"], per, row["companion_ms"]))
    row["fail_error"] = row.get("error") is None or not row["error"] <= TOL
    row["fail_strict"] = row.get("strict_ok") is not True
    row["fail_ratio"] = row.get("ratio") is not None and row["ratio"] > 1.0
    return row


def report(a, rows):
    head = ["model", "error vs PyTorch", "ref kernels", "strict", "kernels", "ORT nodes",
            "nnfuse ms", "ORT ms", "ratio (min-max)", "notes"]
    print("\nnnfuse families sweep: %d threads, %s" % (
        a.threads, "no ORT" if a.no_ort else "vs ONNX Runtime %s (level all), %d rounds x %d runs, "
        "alternating, same inputs" % (compare_ort.ORT_VERSION, a.rounds, a.runs)))
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if h in ("model", "notes", "strict") else "---:" for h in head) + "|")
    for r in rows:
        f = lambda k, spec: "-" if r.get(k) is None else spec % r[k]
        ratio = "-" if r.get("ratio") is None else "%.3f (%.3f-%.3f)" % (r["ratio"], r["ratio_min"], r["ratio_max"])
        notes = "; ".join(r["notes"] + ["ERROR " + e for e in r["errors"]])
        if r.get("subgraphs_planned_while_running"):
            notes += "; %d subgraph plans while running" % r["subgraphs_planned_while_running"]
        cells = [r["model"], f("error", "%.1e"), f("reference_kernels", "%d"),
                 {True: "pass", False: "FAIL"}.get(r.get("strict_ok"), "-"), f("kernels", "%d"),
                 f("ort_nodes", "%d"), f("nnfuse_ms", "%.3f"), f("ort_ms", "%.3f"), ratio,
                 notes.replace("|", "/")]
        print("| " + " | ".join(cells) + " |")
    summary = {}
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        summary.update(geomean_ratio=gm, ratio_models=len(ratios),
                       above_1=[r["model"] for r in rows if r.get("fail_ratio")])
        print("\ngeomean nnfuse/ORT over %d models: %.3f; above 1.0x: %d%s"
              % (len(ratios), gm, len(summary["above_1"]),
                 " (%s)" % ", ".join(summary["above_1"]) if summary["above_1"] else ""))
    for key, what in [("fail_error", "error > %g of max |y| (or no result)" % TOL),
                      ("fail_strict", "bench --strict fails (or did not run)")]:
        bad = [r["model"] for r in rows if r.get(key)]
        summary[key] = bad
        print("failing %s: %d%s" % (what, len(bad), " (%s)" % ", ".join(bad) if bad else ""))
    summary["errors"] = [r["model"] for r in rows if r["errors"]]
    print("models with errors: %d%s" % (len(summary["errors"]),
          " (%s)" % ", ".join(summary["errors"]) if summary["errors"] else ""))
    return summary


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_export":  # internal: one export, own process
        export_one(sys.argv[2], sys.argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=FAMILIES, choices=FAMILIES, metavar="NAME",
                    help="subset of: " + " ".join(FAMILIES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo", "families"), metavar="DIR")
    ap.add_argument("--json", metavar="OUT", help="also write the rows and the summary as JSON")
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    ap.add_argument("--assert", dest="assert_", action="store_true",
                    help="exit 1 when a model errors or fails a criterion")
    a = ap.parse_args()
    a.zoo, a.nnfuse = os.path.abspath(a.zoo), os.path.abspath(a.nnfuse)
    os.makedirs(a.zoo, exist_ok=True)
    if not os.access(a.nnfuse, os.X_OK):
        ap.error("no nnfuse at %s (--nnfuse)" % a.nnfuse)
    ort_env = None if a.no_ort else dict(os.environ, ORT_NODE=compare_ort.ensure_ort())
    t0 = time.time()
    rows = [sweep_model(a, name, ort_env, k, len(a.models)) for k, name in enumerate(a.models, 1)]
    log("done in %.0f s" % (time.time() - t0))
    summary = report(a, rows)
    if a.json:
        bench_json.write(a.json, "sweep_families",
                         {"threads": a.threads, "rounds": a.rounds, "runs": a.runs,
                          "ort": None if a.no_ort else compare_ort.ORT_VERSION,
                          "ort_level": None if a.no_ort else "all"}, rows, summary)
    if a.assert_:
        bad = set(summary["errors"] + summary["fail_error"] + summary["fail_strict"] +
                  summary.get("above_1", []))
        if bad:
            print("--assert: %d model(s) with errors or violations: %s" % (len(bad), " ".join(sorted(bad))),
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
