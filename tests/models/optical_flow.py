#!/usr/bin/env python3
"""torchvision's RAFT optical-flow models (random weights), exported during the test run and run
by nnfuse: each refinement step looks the correlation pyramid up with GridSample (one per
level, RAFT small: 4 levels x the steps) around coordinates stacked into [..., 2] grids, and
runs a convolutional GRU.

For each model:
  - nnfuse's flow against PyTorch's on the same images, within 1e-4 of its largest magnitude;
  - `nnfuse run --strict`: no compute op (GridSample included) on a reference kernel.

Usage: /usr/bin/python3 optical_flow.py NNFUSE ZOO_DIR [--models NAME ...]
Exports are cached in ZOO_DIR/optical_flow.
"""
import argparse, os, subprocess, sys, tempfile
import numpy as np

TOL = 1e-4
# name: (flow updates, image size): a few updates and a small image keep the test short.
MODELS = {"raft_small": (4, 128)}


def export(name, updates, res, stem):
    """Exports NAME with random weights into STEM.onnx, its images into STEM_a.npy and
    STEM_b.npy and PyTorch's last flow into STEM_flow.npy."""
    import torch
    from torchvision.models import optical_flow
    torch.manual_seed(0)
    m = getattr(optical_flow, name)(weights=None).eval()

    class Last(torch.nn.Module):
        """Two images in, the last refinement's flow out (the model gives every step's)."""

        def __init__(s, inner):
            super().__init__()
            s.inner = inner

        def forward(s, a, b):
            return s.inner(a, b, num_flow_updates=updates)[-1]

    w = Last(m).eval()
    a, b = torch.randn(1, 3, res, res), torch.randn(1, 3, res, res)
    with torch.no_grad():
        flow = w(a, b)
    torch.onnx.export(w, (a, b), stem + ".onnx", input_names=["a", "b"], output_names=["flow"],
                      opset_version=16)
    np.save(stem + "_a.npy", a.numpy())
    np.save(stem + "_b.npy", b.numpy())
    np.save(stem + "_flow.npy", flow.numpy())


def check(nnfuse, zoo, name):
    updates, res = MODELS[name]
    stem = os.path.join(zoo, name)
    if not all(os.path.isfile(stem + s) for s in (".onnx", "_a.npy", "_b.npy", "_flow.npy")):
        export(name, updates, res, stem)
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([nnfuse, "--quiet", "run", stem + ".onnx", "--input",
                            "a=" + stem + "_a.npy", "--input", "b=" + stem + "_b.npy",
                            "--output-dir", out, "--threads", "2", "--strict"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return ["nnfuse run --strict exit %d: %s" % (r.returncode, r.stderr.strip()[-400:])]
        got = np.load(os.path.join(out, "flow.npy"))
    want = np.load(stem + "_flow.npy")
    if got.shape != want.shape:
        return ["flow: shape %s, PyTorch %s" % (got.shape, want.shape)]
    e = float(np.abs(got.astype(np.float64) - want).max() / max(np.abs(want).max(), 1e-30))
    return [] if e <= TOL else ["flow: %.3g of the largest magnitude from PyTorch's" % e]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nnfuse")
    ap.add_argument("zoo")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    a = ap.parse_args()
    zoo = os.path.join(a.zoo, "optical_flow")
    os.makedirs(zoo, exist_ok=True)
    failed = 0
    for name in a.models:
        try:
            errors = check(a.nnfuse, zoo, name)
        except Exception as e:  # noqa: BLE001 (report and go on to the next model)
            errors = [str(e)]
        print("%-20s %s" % (name, "ok" if not errors else "FAIL: " + "; ".join(errors)))
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
