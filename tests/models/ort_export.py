#!/usr/bin/env python3
"""The ONNX Runtime export (`nnfuse compile --format ort`) checked on a model: the export passes
the ONNX checker, runs in ONNX Runtime (npm onnxruntime-node, CPU, graph optimization
`disabled`, so what runs is nnfuse's graph) and matches nnfuse's own outputs within 1e-4 of
their largest magnitude, and has at most as many nodes as ONNX Runtime's own optimized graph
(level `all`) of the original model.

Used by the model tests and the exporter-variant tests (check_export); as a program it checks
models of the test zoo and prints the table:
  /usr/bin/python3 ort_export.py NNFUSE ZOO_DIR MODEL... [--json OUT]

ONNX Runtime is installed with npm into /tmp/nnfuse-ort unless $ORT_NODE names an installed
onnxruntime-node.
"""
import argparse, fcntl, json, os, subprocess, sys, tempfile
import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_VERSION = "1.30.0"
RUNNER = os.path.join(HERE, "ort_run.js")
TOL = 1e-4


def ensure_ort():
    """The onnxruntime-node module to require (installing it with npm on first use)."""
    if os.environ.get("ORT_NODE"):
        return os.environ["ORT_NODE"]
    d = "/tmp/nnfuse-ort"
    mod = os.path.join(d, "node_modules", "onnxruntime-node")
    os.makedirs(d, exist_ok=True)
    # Tests run in parallel: one installs while the others wait.
    with open(os.path.join(d, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(mod, "package.json")):
            print("installing onnxruntime-node@%s with npm into %s" % (ORT_VERSION, d),
                  file=sys.stderr)
            subprocess.run(["npm", "init", "-y"], cwd=d, check=True, capture_output=True)
            # Its install script fetches GPU binaries; the CPU library ships inside the package.
            subprocess.run(["npm", "install", "--ignore-scripts",
                            "onnxruntime-node@" + ORT_VERSION], cwd=d, check=True,
                           stdout=sys.stderr)
    return mod


def ort_run(model, feeds, level="disabled", optimized=None, threads=1):
    """Runs `model` in ONNX Runtime on feeds (name -> numpy array); returns name -> array.
    With `optimized`, ORT writes the graph it ran there."""
    env = dict(os.environ, ORT_NODE=ensure_ort())
    with tempfile.TemporaryDirectory() as d:
        inputs = []
        for k, (name, a) in enumerate(feeds.items()):
            f = os.path.join(d, "in_%d.bin" % k)
            a = np.ascontiguousarray(a)
            a.tofile(f)
            inputs.append({"name": name, "dtype": "bool" if a.dtype == np.bool_ else str(a.dtype),
                           "shape": list(a.shape), "file": f})
        spec = {"model": model, "level": level, "threads": threads, "inputs": inputs,
                "out_dir": d}
        if optimized:
            spec["optimized"] = optimized
        with open(os.path.join(d, "spec.json"), "w") as f:
            json.dump(spec, f)
        r = subprocess.run(["node", RUNNER, os.path.join(d, "spec.json")], capture_output=True,
                           text=True, env=env)
        if r.returncode != 0:
            raise RuntimeError("ONNX Runtime failed on %s (level %s): %s"
                               % (model, level, r.stderr.strip().splitlines()[0] if r.stderr
                                  else r.returncode))
        out = {}
        for o in json.loads(r.stdout.strip().splitlines()[-1])["outputs"]:
            out[o["name"]] = np.fromfile(o["file"], dtype=o["dtype"]).reshape(o["shape"])
        return out


def count_nodes(path):
    return len(onnx.load(path, load_external_data=False).graph.node)


def rel_error(got, want):
    scale = float(np.abs(want).max()) if want.size else 0.0
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) if want.size \
        else 0.0
    return err / scale if scale > 0 else err


def check_export(nnfuse, tmp, name, model, feeds, compile_flags=()):
    """Checks the ORT export of `model` on feeds (name -> numpy array). Returns (errors, row);
    row holds the node counts and the largest relative difference."""
    errors = []
    row = {"model": name, "nodes": count_nodes(model)}
    out = os.path.join(tmp, name + ".ort.onnx")
    shapes = []
    for k, v in feeds.items():
        shapes += ["--shape", "%s=%s" % (k, ",".join(str(d) for d in v.shape))]
    r = subprocess.run([nnfuse, "compile", model, "-o", out, "--format", "ort", "--json"]
                       + shapes + list(compile_flags), capture_output=True, text=True)
    if r.returncode != 0:
        return ["compile --format ort failed (%d): %s" % (r.returncode, r.stderr.strip())], row
    row["nnfuse_nodes"] = json.loads(r.stdout.strip().splitlines()[-1])["nodes_after"]
    try:
        onnx.checker.check_model(onnx.load(out))
    except Exception as e:  # noqa: BLE001 - any checker failure is a test failure
        errors.append("the ORT export fails the ONNX checker: %s" % str(e).splitlines()[0])
    row["export_nodes"] = count_nodes(out)
    # nnfuse's own outputs for the feeds.
    feed_flags = []
    for k, v in feeds.items():
        f = os.path.join(tmp, "%s_in_%s.npy" % (name, k))
        np.save(f, v)
        feed_flags += ["--input", "%s=%s" % (k, f)]
    res = os.path.join(tmp, name + "_nnfuse_out")
    r = subprocess.run([nnfuse, "run", model, "--output-dir", res] + feed_flags,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return errors + ["nnfuse run failed (%d): %s" % (r.returncode, r.stderr.strip())], row
    try:
        got = ort_run(out, feeds, "disabled")
    except RuntimeError as e:
        return errors + [str(e)], row
    worst = 0.0
    for o in onnx.load(model, load_external_data=False).graph.output:
        want = np.load(os.path.join(res, o.name + ".npy"))
        if o.name not in got:
            errors.append("ONNX Runtime gives no output '%s'" % o.name)
            continue
        if got[o.name].shape != want.shape:
            errors.append("output '%s': ORT gives shape %s, nnfuse %s"
                          % (o.name, got[o.name].shape, want.shape))
            continue
        e = rel_error(got[o.name], want)
        worst = max(worst, e)
        if e > TOL:
            errors.append("output '%s': ORT running the export differs from nnfuse by %.3g "
                          "(relative, tol %g)" % (o.name, e, TOL))
    row["rel_error"] = worst
    optimized = os.path.join(tmp, name + ".ort_all.onnx")
    try:
        ort_run(model, feeds, "all", optimized=optimized)
        row["ort_all_nodes"] = count_nodes(optimized)
        if row["export_nodes"] > row["ort_all_nodes"]:
            errors.append("the export has %d nodes, ONNX Runtime's own optimized graph %d"
                          % (row["export_nodes"], row["ort_all_nodes"]))
    except RuntimeError as e:
        errors.append(str(e))
    return errors, row


def zoo_feeds(zoo, model):
    """The inputs export_models.py saved beside a zoo model."""
    path = os.path.join(zoo, model + ".onnx")
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    io = os.path.join(zoo, model + "_io")
    return path, {i.name: np.load(os.path.join(io, "in_" + i.name + ".npy"))
                  for i in m.graph.input if i.name not in inits}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("nnfuse")
    ap.add_argument("zoo")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--json", help="write the rows here")
    a = ap.parse_args()
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models:
            path, feeds = zoo_feeds(a.zoo, name)
            errors, row = check_export(a.nnfuse, tmp, name, path, feeds)
            rows.append(row)
            print("%s %s: %s" % ("ok  " if not errors else "FAIL", name,
                                 ", ".join("%s %s" % (k, v) for k, v in row.items()
                                           if k != "model")))
            for e in errors:
                print("     " + e)
            failed += bool(errors)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if failed:
        print("FAIL: %d of %d models" % (failed, len(a.models)))
        return 1
    print("all %d ORT exports pass the checker, match nnfuse in ONNX Runtime and have at most "
          "ORT's own node count" % len(a.models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
