"""Shared by the exporter-variant tests (norm_variants.py, transformer_variants.py,
attention_variants.py): compile an exported model with nnfuse and read fusion_result.json,
check the passes that must have fired and the ONNX checker, run the fused model against
PyTorch's output, verify fused against unfused, and the loop over the cases."""
import contextlib, json, os, subprocess, sys, tempfile
import numpy as np
import onnx
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_export  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def randomize_norms(m):
    """Norms start at gamma 1, beta 0 (nn.LayerNorm, nn.GroupNorm): random values for every 1-D
    parameter catch a swapped or lost one."""
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith("weight") and p.dim() == 1:
                p.uniform_(0.5, 1.5)
            elif p.dim() == 1:
                p.uniform_(-0.5, 0.5)
    return m


def export(module, inputs, path, opset, grad=False):
    """Exports `module` to `path` with the inputs' names (name -> tensor) and one output "y", and
    returns PyTorch's output for them. grad=True exports with autograd on: under no_grad
    nn.MultiheadAttention takes a fast path that does not export."""
    with torch.no_grad():
        want = module(*inputs.values()).numpy()
    with contextlib.nullcontext() if grad else torch.no_grad():
        torch.onnx.export(module, tuple(inputs.values()), path, opset_version=opset,
                          input_names=list(inputs), output_names=["y"])
    return want


def save_feeds(tmp, name, inputs):
    """Writes each input (name -> numpy array) to .npy; returns nnfuse's --input flags."""
    feeds = []
    for k, v in inputs.items():
        f = os.path.join(tmp, "%s_%s.npy" % (name, k))
        np.save(f, v)
        feeds += ["--input", "%s=%s" % (k, f)]
    return feeds


def attrs_of(node):
    """The node's attributes as Python values (strings decoded)."""
    got = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    return {k: v.decode() if isinstance(v, bytes) else v for k, v in got.items()}


def attr_errors(node, want, missing=None):
    """One message per attribute of `want` the node does not have (floats within 1e-5); an
    absent attribute reads as `missing`."""
    got = attrs_of(node)
    errors = []
    for k, v in want.items():
        g = got.get(k, missing)
        ok = (isinstance(g, (int, float)) and abs(g - v) <= 1e-5) if isinstance(v, float) \
            else g == v
        if not ok:
            errors.append("%s %s = %s, expected %s" % (node.op_type, k, g, v))
    return errors


def compile_model(nnfuse, tmp, name, path, passes):
    """nnfuse compile with --report. Returns (fused model path, report, errors); the report is
    None when compiling failed. `passes` maps pass name -> minimum effect_times."""
    out = os.path.join(tmp, name + "_fused.onnx")
    report = os.path.join(tmp, name + "_report.json")
    rc, log = run([nnfuse, "compile", path, "-o", out, "--report", report])
    if rc != 0:
        return out, None, ["compile failed (%d): %s" % (rc, log.strip())]
    rep = json.load(open(report))
    errors = []
    for p, n in passes.items():
        rec = rep["graph_fusion"].get(p, {})
        if rec.get("effect_times", 0) < n:
            errors.append("%s: effect_times %d, expected >= %d (rejected: %s)" %
                          (p, rec.get("effect_times", 0), n,
                           [r["reason"] for r in rec.get("rejected", [])]))
    try:
        onnx.checker.check_model(onnx.load(out))
    except Exception as e:  # noqa: BLE001 - any checker failure is a test failure
        errors.append("the fused model fails the ONNX checker: %s" % str(e).splitlines()[0])
    return out, rep, errors


def run_and_verify(nnfuse, path, fused, feeds, want, tolerance=1e-4):
    """The fused model reloads, runs and gives PyTorch's output `want` (output "y") within
    `tolerance` of its largest magnitude; `nnfuse verify` passes on the original model."""
    errors = []
    with tempfile.TemporaryDirectory() as res:
        rc, log = run([nnfuse, "run", fused, "--output-dir", res] + feeds)
        if rc != 0:
            errors.append("running the fused model failed (%d): %s" % (rc, log.strip()))
        else:
            got = np.load(os.path.join(res, "y.npy")).astype(np.float64)
            rel = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-6))
            print("     largest error relative to the largest magnitude: %.3g" % rel)
            if got.shape != want.shape or rel > tolerance:
                errors.append("fused model output differs from PyTorch: shape %s vs %s, "
                              "relative error %.3g" % (got.shape, want.shape, rel))
    rc, log = run([nnfuse, "verify", path])
    if rc != 0:
        errors.append("verify failed (%d): %s" % (rc, log.strip()))
    return errors + ort_export_errors(nnfuse, path, feeds)


def ort_export_errors(nnfuse, path, feeds):
    """The model's ONNX Runtime export (ort_export.check_export) on the inputs of `feeds`
    (nnfuse's --input flags): checker-valid, nnfuse's outputs in ORT, at most ORT's node count.
    Prints its node counts."""
    arrays = {}
    for flag in feeds[1::2]:
        name, f = flag.split("=", 1)
        arrays[name] = np.load(f)
    name = os.path.splitext(os.path.basename(path))[0]
    with tempfile.TemporaryDirectory() as tmp:
        errors, row = ort_export.check_export(nnfuse, tmp, name, path, arrays)
    print("     ort export: %s" % ", ".join("%s %s" % (k, v) for k, v in row.items()
                                              if k != "model"))
    return errors


def main(doc, cases, check, what):
    """Runs check(nnfuse, tmp, *case) for every case; check returns errors or (errors, note)."""
    if len(sys.argv) != 2:
        print(doc)
        return 2
    nnfuse = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            note = ""
            try:
                r = check(nnfuse, tmp, *case)
                errors, note = r if isinstance(r, tuple) else (r, "")
            except Exception as e:  # noqa: BLE001 - report and go on with the other models
                errors = ["%s: %s" % (type(e).__name__, e)]
            print("%s %s%s" % ("ok  " if not errors else "FAIL", case[0], note))
            for e in errors:
                print("     " + e)
            failed += bool(errors)
    if failed:
        print("FAIL: %d of %d %s" % (failed, len(cases), what))
        return 1
    print("all %d %s export, compile, run and verify" % (len(cases), what))
    return 0
