#!/usr/bin/env python3
"""torchvision's detectors (random weights), exported during the test run and run by nnfuse:
their post-processing makes shapes that are known only at run time (the regions the RPN's NMS
keeps, the boxes above a score) and runs NonMaxSuppression, TopK, NonZero, GatherND and
RoiAlign on data-dependent sizes.

For each model:
  - nnfuse's outputs (boxes, scores, labels) against ONNX Runtime's (npm onnxruntime-node,
    graph optimization disabled) on the same input: boxes and scores within 1e-4 of their
    largest magnitude, labels equal. ONNX Runtime, not PyTorch, is the oracle here: both follow
    the ONNX spec for equal scores (TopK and NMS take the lower index first), PyTorch's topk
    does not, and random weights give many equal scores. SSDlite's class scores tie so often
    that even two valid orders of its ties keep different boxes: only its leading scores are
    compared.
  - no dense product, convolution or RoiAlign on a reference kernel (`nnfuse profile`'s ref
    column),
    whether its rows or batch are static or known only at run time (Faster R-CNN's box head,
    Mask R-CNN's mask head);
  - `nnfuse run --strict` for the models whose If branches hold only index bookkeeping (their
    batched NMS), which is no compute op on a reference kernel; Mask R-CNN's mask-pasting Loop
    holds a Resize, and --strict refuses it.

Usage: /usr/bin/python3 detection.py NNFUSE ZOO_DIR [--models NAME ...]
Exports are cached in ZOO_DIR/detection.
"""
import argparse, os, re, subprocess, sys, tempfile
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ort_export  # noqa: E402  (ort_run, rel_error)

TOL = 1e-4
# name: (builder keyword arguments, input size, whether every output is compared)
MODELS = {
    # Two-stage: RPN proposals by NMS, then the box head over a data-dependent count of regions
    # pooled by MultiScaleRoIAlign. box_score_thresh 0 keeps detections despite random weights.
    "fasterrcnn_mobilenet_v3_large_320_fpn": ({"box_score_thresh": 0.0}, 320, True),
    # One-stage with per-level top-k and a batched NMS, at 256 to keep the test short; every
    # score kept.
    "retinanet_resnet50_fpn": ({"min_size": 256, "max_size": 256, "score_thresh": 0.0}, 256, True),
    # One-stage with its batched NMS inside an If (the no-box branch).
    "ssdlite320_mobilenet_v3_large": ({}, 320, False),
    # The mask head's convolutions and transposed convolution over a batch of detections known
    # only at run time (20 of them, to keep the test short), and the masks pasted by a Loop.
    "maskrcnn_resnet50_fpn": ({"box_score_thresh": 0.0, "min_size": 256, "max_size": 256,
                               "box_detections_per_img": 20}, 256, True),
}
# Run with --strict: no compute op on a reference kernel, control flow included.
STRICT = {"fasterrcnn_mobilenet_v3_large_320_fpn", "retinanet_resnet50_fpn",
          "ssdlite320_mobilenet_v3_large"}
# Outputs beyond boxes, scores and labels, compared like the boxes but within their own bound.
EXTRA = {"maskrcnn_resnet50_fpn": ["masks"]}
# The masks are sigmoids of logits that random weights without normalization make large, so in
# the sigmoid's steep band (0.3% of the pixels) float32 rounding moves them by up to 5e-4: ONNX
# Runtime differs from the reference kernels (double) by 8.7e-5 there, the fast kernels by
# 1.6e-4 (Winograd) to 4.8e-4 (direct); elsewhere they agree within 2e-5.
EXTRA_TOL = {"masks": 1e-3}
LEADING_SCORES = 8
DENSE = {"Conv", "FusedConv", "ConvTranspose", "MatMul", "FusedMatMul", "Gemm", "FusedGemm",
         "ScaledConv", "ExpandDepthwise", "FusedConvPool", "FusedConvSplit", "RoiAlign"}
OUTPUTS = ["boxes", "scores", "labels"]


def export(name, kw, res, stem):
    """Exports NAME with random weights into STEM.onnx and its input into STEM_x.npy."""
    import torch, torchvision
    torch.manual_seed(0)
    m = getattr(torchvision.models.detection, name)(weights=None, weights_backbone=None, **kw)
    m.eval()

    class Flat(torch.nn.Module):
        """One image in, the detections as three tensors out (the models take and give lists)."""

        def __init__(s, inner):
            super().__init__()
            s.inner = inner

        def forward(s, x):
            r = s.inner([x[0]])[0]
            return tuple(r[k] for k in OUTPUTS + EXTRA.get(name, []))

    x = torch.rand(1, 3, res, res)
    torch.onnx.export(Flat(m).eval(), (x,), stem + ".onnx", input_names=["x"],
                      output_names=OUTPUTS + EXTRA.get(name, []), opset_version=17)
    np.save(stem + "_x.npy", x.numpy())


def dense_on_reference(nnfuse, path, x):
    """Op types of dense products and convolutions that `nnfuse profile` runs on a reference
    kernel."""
    r = subprocess.run([nnfuse, "--quiet", "profile", path, "--input", "x=" + x, "--runs", "1",
                        "--warmup", "0", "--threads", "2"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("nnfuse profile exit %d: %s" % (r.returncode, r.stderr.strip()[-300:]))
    bad, table = [], False
    for line in r.stdout.splitlines():
        if line.startswith("op ") and "ref" in line:
            table = True
            continue
        f = line.split()
        if table and (len(f) < 3 or not f[1].isdigit()):
            break
        if table and f[0] in DENSE and int(f[2]) > 0:
            bad.append("%s (%s of %s kernels)" % (f[0], f[2], f[1]))
    if not table:
        raise RuntimeError("no op table in nnfuse profile's output")
    return bad


def check(nnfuse, zoo, name):
    kw, res, full = MODELS[name]
    stem = os.path.join(zoo, name)
    if not os.path.isfile(stem + ".onnx") or not os.path.isfile(stem + "_x.npy"):
        export(name, kw, res, stem)
    x = np.load(stem + "_x.npy")
    errors = []
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([nnfuse, "--quiet", "run", stem + ".onnx", "--input",
                            "x=" + stem + "_x.npy", "--output-dir", out, "--threads", "2"] +
                           (["--strict"] if name in STRICT else []),
                           capture_output=True, text=True)
        if r.returncode != 0:
            return ["nnfuse run exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])], 0
        got = {o: np.load(os.path.join(out, o + ".npy")) for o in OUTPUTS + EXTRA.get(name, [])}
    want = ort_export.ort_run(stem + ".onnx", {"x": x}, threads=2)
    n = want["scores"].shape[0]
    for o in got:
        if got[o].shape != want[o].shape:
            errors.append("%s: shape %s, ONNX Runtime %s" % (o, got[o].shape, want[o].shape))
    if errors:
        return errors, n
    if full:
        for o in ["boxes", "scores"] + EXTRA.get(name, []):
            e = ort_export.rel_error(got[o], want[o])
            if not e <= EXTRA_TOL.get(o, TOL):
                errors.append("%s: %.3g of the largest magnitude from ONNX Runtime's" % (o, e))
        if not np.array_equal(got["labels"], want["labels"]):
            errors.append("labels differ from ONNX Runtime's in %d of %d"
                          % (int((got["labels"] != want["labels"]).sum()), n))
    else:
        e = ort_export.rel_error(got["scores"][:LEADING_SCORES], want["scores"][:LEADING_SCORES])
        if not e <= TOL:
            errors.append("leading scores: %.3g from ONNX Runtime's" % e)
    bad = dense_on_reference(nnfuse, stem + ".onnx", stem + "_x.npy")
    if bad:
        errors.append("on a reference kernel: " + ", ".join(bad))
    return errors, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nnfuse")
    ap.add_argument("zoo")
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    a = ap.parse_args()
    zoo = os.path.join(a.zoo, "detection")
    os.makedirs(zoo, exist_ok=True)
    failed = 0
    for name in a.models:
        try:
            errors, n = check(a.nnfuse, zoo, name)
        except Exception as e:  # noqa: BLE001 (report and go on to the next model)
            errors, n = [str(e)], 0
        print("%-40s %3d detections  %s" % (name, n, "ok" if not errors else "FAIL: " +
                                             "; ".join(errors)))
        failed += bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
