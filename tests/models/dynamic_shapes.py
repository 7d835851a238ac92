#!/usr/bin/env python3
"""A BERT exported with symbolic batch and sequence (export_models.py's bert_tiny_dyn) run at
three shapes in one process through the plan cache (`nnfuse bench --shape-cycle`): each shape
gets one plan with no node on a reference kernel (--strict), a cache of 8 builds exactly 3
plans, and a cache of 2 never holds more than 2 (it rebuilds instead); a shape the model
forbids is refused naming the input and both shapes.

Usage: /usr/bin/python3 dynamic_shapes.py NNFUSE ZOO_DIR
"""
import json, os, subprocess, sys

SETS = ["input_ids=%s attention_mask=%s token_type_ids=%s" % (s, s, s)
        for s in ("1,32", "1,128", "4,128")]


def bench(nnfuse, model, extra):
    cmd = [nnfuse, "bench", model, "--json", "--strict", "--runs", "2", "--warmup", "0"] + extra
    for s in SETS:
        cmd += ["--shape-cycle", s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, "bench failed (%d): %s" % (r.returncode, r.stderr.strip()[-800:])
    return json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1]), None


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    nnfuse, zoo = sys.argv[1:]
    model = os.path.join(zoo, "bert_tiny_dyn.onnx")
    errors = []
    j, err = bench(nnfuse, model, ["--plan-cache", "8"])
    if err:
        errors.append(err)
    else:
        if j["plans_built"] != 3 or j["plans_held"] != 3:
            errors.append("cache of 8: built %d, held %d plans for 3 shapes" %
                          (j["plans_built"], j["plans_held"]))
        for e in j["shape_sets"]:
            print("  %s: %d kernels, %d on reference kernels, median %.3f ms" %
                  (e["shapes"], e["kernels"], e["reference_kernels"], e["median_ms"]))
            if e["reference_kernels"] != 0:
                errors.append("%s: %d reference kernels" % (e["shapes"], e["reference_kernels"]))
    j, err = bench(nnfuse, model, ["--plan-cache", "2"])
    if err:
        errors.append(err)
    elif j["plans_held"] > 2 or j["plans_built"] <= 3:
        errors.append("cache of 2: held %d, built %d (expected <= 2 held, rebuilds)" %
                      (j["plans_held"], j["plans_built"]))
    r = subprocess.run([nnfuse, "bench", model, "--shape-cycle",
                        "input_ids=1,32,7 attention_mask=1,32 token_type_ids=1,32"],
                       capture_output=True, text=True)
    if r.returncode != 1 or "input 'input_ids' has shape [1, 32, 7]" not in r.stderr \
            or "[batch, sequence]" not in r.stderr:
        errors.append("a forbidden shape: exit %d, %s" % (r.returncode, r.stderr.strip()))
    for e in errors:
        print("FAIL " + e)
    print("%d passed, %d failed" % (1 if not errors else 0, 1 if errors else 0))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
