#!/usr/bin/env python3
"""Runs an exported model through `nnfuse run` and compares every output with PyTorch's,
saved beside the model by export_models.py. Passes when max |nnfuse - torch| <= tol * max |torch|
for every output (tol 1e-4 by default).

Usage: /usr/bin/python3 check_model.py NNFUSE ZOO_DIR MODEL [--tol 1e-4] [-- extra nnfuse args]
"""
import argparse, os, subprocess, sys, tempfile
import numpy as np
import onnx


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("nnfuse")
    ap.add_argument("zoo")
    ap.add_argument("model")
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("extra", nargs="*")
    a = ap.parse_args()
    path = os.path.join(a.zoo, a.model + ".onnx")
    io = os.path.join(a.zoo, a.model + "_io")
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    cmd = [a.nnfuse, "run", path]
    for i in m.graph.input:
        if i.name not in inits:
            cmd += ["--input", "%s=%s" % (i.name, os.path.join(io, "in_" + i.name + ".npy"))]
    with tempfile.TemporaryDirectory() as out:
        cmd += ["--output-dir", out] + a.extra
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(r.stdout + r.stderr, end="")
        if r.returncode != 0:
            print("FAIL: nnfuse exited with %d" % r.returncode)
            return 1
        ok = True
        for k, o in enumerate(m.graph.output):
            ref = np.load(os.path.join(io, "out_%d.npy" % k))
            got = np.load(os.path.join(out, o.name + ".npy"))
            if got.shape != ref.shape:
                print("FAIL: output %s has shape %s, torch gives %s" % (o.name, got.shape, ref.shape))
                ok = False
                continue
            scale = float(np.abs(ref).max())
            err = float(np.abs(got.astype(np.float64) - ref.astype(np.float64)).max())
            rel = err / scale if scale > 0 else err
            good = rel <= a.tol
            ok &= good
            print("%s output %s: max abs error %.3g, largest magnitude %.3g, relative %.3g (tol %g)"
                  % ("ok  " if good else "FAIL", o.name, err, scale, rel, a.tol))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
