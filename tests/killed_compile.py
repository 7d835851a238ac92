#!/usr/bin/env python3
"""A compile killed midway leaves the output it would replace whole: `nnfuse compile` of a model
with 64 MiB of weights is killed (SIGKILL) after delays from 0 to past its end, over an output
file that holds an earlier compile; after each kill the output loads and is byte for byte the
earlier compile's (or, where the kill came after the rename, the new one's: the same bytes),
never a partial file. The fusion report written beside it likewise.

Usage: /usr/bin/python3 killed_compile.py NNFUSE
"""
import hashlib, os, re, subprocess, sys, tempfile, time
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    nnfuse = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        # Four 2048x2048 MatMuls with ReLUs: 64 MiB of weights to write.
        rng = np.random.default_rng(0)
        nodes, inits, x = [], [], "x"
        for i in range(4):
            w = numpy_helper.from_array(rng.standard_normal((2048, 2048), np.float32) / 45, "w%d" % i)
            inits.append(w)
            nodes.append(helper.make_node("MatMul", [x, w.name], ["m%d" % i]))
            nodes.append(helper.make_node("Relu", ["m%d" % i], ["r%d" % i]))
            x = "r%d" % i
        g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2048])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [4, 2048])], inits)
        model = os.path.join(d, "big.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), model)
        out, report = os.path.join(d, "out.onnx"), os.path.join(d, "fusion_result.json")
        cmd = [nnfuse, "compile", model, "-o", out, "--report", report]
        t0 = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        took = time.time() - t0
        if r.returncode != 0:
            print("FAIL: the first compile failed: " + r.stdout + r.stderr)
            return 1
        want, want_report = digest(out), digest(report)
        # "time: load A s, fuse B s (...), save C s": the kills land across the save above all.
        m = re.search(r"time: load ([0-9.]+) s, fuse ([0-9.]+) s.*save ([0-9.]+) s", r.stdout + r.stderr)
        save_start = float(m.group(1)) + float(m.group(2)) if m else took * 0.5
        save = float(m.group(3)) if m else took * 0.5
        delays = [0.0, save_start / 2] + [save_start + save * k / 8 for k in range(10)] + [took * 1.2]
        failures = 0
        steps = len(delays) - 1
        for delay in delays:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(delay)
            p.kill()
            p.wait()
            got, got_report = digest(out), digest(report)
            ok = got == want and got_report == want_report
            print("%s killed after %.3f s (exit %s): output %s, report %s" % (
                "ok  " if ok else "FAIL", delay, p.returncode, "whole" if got == want else "TORN",
                "whole" if got_report == want_report else "TORN"))
            failures += not ok
        onnx.checker.check_model(out)
        leftovers = [f for f in os.listdir(d) if ".tmp." in f]
        print("temporary files a kill left behind (never read): %d" % len(leftovers))
        if failures:
            print("FAIL: %d of %d kills left a torn file" % (failures, steps + 1))
            return 1
        print("every kill left whole files (compile took %.2f s)" % took)
        return 0


if __name__ == "__main__":
    sys.exit(main())
