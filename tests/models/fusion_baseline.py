#!/usr/bin/env python3
"""The fused graph of each model, against a recorded baseline: for every model, the node count
before and after fusion, the kernels per inference, every pass's match and effect counts, every
fused node (its pass and the nodes it was fused from) and the report's summary. A change to the
fusion passes that is meant to leave what users get alone (a refactoring) must leave all of it
identical; a change that is meant to fuse differently records a new baseline.

  /usr/bin/python3 fusion_baseline.py NNFUSE BASELINE.json MODEL.onnx...           (check)
  /usr/bin/python3 fusion_baseline.py NNFUSE BASELINE.json MODEL.onnx... --record  (write)

Models are keyed by file name; inputs with symbolic dims are fixed to their sizes in an _io/
folder beside the model when there is one (export_models.py's layout), else to 1.
"""
import argparse, json, os, subprocess, sys, tempfile

import numpy as np
import onnx


SUMMARY_KEYS = ("matches", "effects", "kernels_saved", "bytes_saved", "kernels_before",
                "kernels_after", "bytes_moved_before", "bytes_moved_after", "flops")


def shape_flags(path):
    """--shape flags for inputs with symbolic dims."""
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    io = os.path.splitext(path)[0] + "_io"
    flags = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1
                for d in i.type.tensor_type.shape.dim]
        if all(d >= 0 for d in dims):
            continue
        f = os.path.join(io, "in_" + i.name + ".npy")
        shape = list(np.load(f, mmap_mode="r").shape) if os.path.exists(f) else \
            [d if d >= 0 else 1 for d in dims]
        flags += ["--shape", "%s=%s" % (i.name, ",".join(map(str, shape)))]
    return flags


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (" ".join(cmd[:3]), r.returncode,
                                                    r.stderr.strip()))
    return json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])


def summarize(nnfuse, path, tmp):
    flags = shape_flags(path)
    c = run_json([nnfuse, "compile", path, "-o", os.path.join(tmp, "m.onnx"), "--json"] + flags)
    b = run_json([nnfuse, "bench", path, "--json", "--runs", "1", "--warmup", "0"] + flags)
    f = c["fusion"]
    return {
        "nodes_before": c["nodes_before"],
        "nodes_after": c["nodes_after"],
        "kernels": b["kernels"],
        "passes": {k: [v["match_times"], v["effect_times"]] for k, v in f["graph_fusion"].items()},
        "fused": sorted("%s: %s <- %s" % (n["pass"], n["node"], ", ".join(n["fused_from"]))
                        for n in f["fused_nodes"]),
        # What fusion decides, not the machine's estimates or measurements.
        "summary": {k: f["summary"][k] for k in SUMMARY_KEYS if k in f["summary"]},
        "fallbacks": len(f["fallback"]),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nnfuse")
    ap.add_argument("baseline")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--record", action="store_true", help="write the baseline instead")
    a = ap.parse_args()
    got = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.models:
            got[os.path.basename(path)] = summarize(a.nnfuse, path, tmp)
    if a.record:
        old = json.load(open(a.baseline)) if os.path.exists(a.baseline) else {}
        old.update(got)
        with open(a.baseline, "w") as f:
            json.dump(old, f, indent=1, sort_keys=True)
            f.write("\n")
        print("recorded %d models into %s" % (len(got), a.baseline))
        return 0
    want = json.load(open(a.baseline))
    failed = 0
    for name, g in got.items():
        w = want.get(name)
        if w is None:
            print("FAIL %s: not in the baseline (record it with --record)" % name)
            failed += 1
            continue
        diffs = []
        for k in sorted(set(w) | set(g)):
            if w.get(k) == g.get(k):
                continue
            if k == "fused":
                gone = sorted(set(w[k]) - set(g[k]))
                new = sorted(set(g[k]) - set(w[k]))
                diffs.append("fused nodes: %d no longer made (first: %s), %d new (first: %s)"
                             % (len(gone), gone[:1], len(new), new[:1]))
            elif k == "passes":
                # A pass that never fires changes nothing: absent and [0, 0] are the same.
                for p in sorted(set(w[k]) | set(g[k])):
                    if w[k].get(p, [0, 0]) != g[k].get(p, [0, 0]):
                        diffs.append("%s: [match, effect] %s, baseline %s"
                                     % (p, g[k].get(p), w[k].get(p)))
            else:
                diffs.append("%s: %s, baseline %s" % (k, g.get(k), w.get(k)))
        print("%s %s: %d -> %d nodes, %d kernels" % ("ok  " if not diffs else "FAIL", name,
                                                    g["nodes_before"], g["nodes_after"],
                                                    g["kernels"]))
        for d in diffs:
            print("     " + d)
        failed += bool(diffs)
    if failed:
        print("FAIL: %d of %d models fuse differently from the baseline" % (failed, len(got)))
        return 1
    print("all %d models fuse as the baseline records" % len(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
