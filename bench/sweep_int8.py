#!/usr/bin/env python3
"""The quantized sweep: models quantized by ONNX Runtime's own tools, run by nnfuse and by ONNX
Runtime on the same file, side by side.

For each model (exported into the zoo with tests/models/export_models.py when missing) the
sweep quantizes it with ORT's own tools (pip's onnxruntime in a virtual environment,
tests/models/ort_quantize.py), in the form the entry names (MODEL or MODEL:FORM): dynamic
(quantize_dynamic, the default), qdq or qoperator (quantize_static after quant_pre_process,
calibrated on random inputs, uint8 activations, int8 per-channel weights), or int4
(MatMulNBitsQuantizer: weight-only int4 blocks of 32 with zero points), and reports:
  - accuracy on the exported inputs (<zoo>/<model>_io): the largest error of nnfuse's output 0
    relative to its largest magnitude, against the oracle (onnx's reference evaluator: the
    quantized graph's integers exactly as written; for the QOperator form, whose com.microsoft
    ops it does not run, the QDQ form of the same calibration; for int4, ORT at level disabled,
    whose MatMulNBits computes in float32), against the float model
    (nnfuse's fp32 run), and ORT's (level all) distance to the same oracle; for the static
    forms also in output quantization steps;
  - nnfuse's kernels, those on reference kernels, and the quantized ops left unfused
    (MatMulInteger, QuantizeLinear, DequantizeLinear nodes after compiling);
  - latency, alternating A B C D A B C D: nnfuse on the quantized file, ORT (npm
    onnxruntime-node, level all) on the same file, OpenVINO (pip's openvino, in a virtual
    environment bench/openvino_peer.py makes) on the same file, nnfuse on the float model; the
    ratios int8 nnfuse / int8 ORT, int8 nnfuse / int8 OpenVINO and int8 nnfuse / fp32 nnfuse
    (OpenVINO's failure, where it cannot read the file, instead of its ratio);
  - peak RSS of one process loading and running the quantized file once, nnfuse's and ORT's
    (ORT's includes Node.js itself, some 40 MiB).

Usage:
  /usr/bin/python3 bench/sweep_int8.py [--models bert_tiny resnet18:qdq ...] [--rounds 3]
      [--runs 10] [--threads 2] [--zoo DIR] [--no-oracle] [--no-openvino] [--json OUT]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
import numpy as np
import onnx
import onnx.numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, HERE)
import bench_json  # noqa: E402
import openvino_peer  # noqa: E402
import ort_quantize  # noqa: E402
from compare_ort import ensure_model, run_json  # noqa: E402
from ort_export import ORT_VERSION, ensure_ort, ort_run  # noqa: E402

QUANT_OPS = ("MatMulInteger", "ConvInteger", "QuantizeLinear", "DequantizeLinear")


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


def feeds_of(zoo, name):
    d = os.path.join(zoo, name + "_io")
    return {f[3:-4]: np.load(os.path.join(d, f)) for f in sorted(os.listdir(d))
            if f.startswith("in_")}


def nnfuse_output0(nnfuse, model, feeds, tmp):
    flags = []
    for k, v in feeds.items():
        f = os.path.join(tmp, "in_%s.npy" % k)
        np.save(f, v)
        flags += ["--input", "%s=%s" % (k, f)]
    out = os.path.join(tmp, "out_" + os.path.basename(model))
    subprocess.run([nnfuse, "run", model, "--output-dir", out] + flags, check=True,
                   capture_output=True)
    first = onnx.load(model, load_external_data=False).graph.output[0].name
    return np.load(os.path.join(out, first + ".npy")), first


FILE_FORMS = {"dynamic": "int8_dynamic", "qdq": "int8_qdq", "qoperator": "int8_qop",
              "int4": "int4"}
FORM_NAMES = {"dynamic": "dynamic (quantize_dynamic)", "qdq": "static QDQ (quantize_static)",
              "qoperator": "static QOperator (quantize_static)",
              "int4": "weight-only int4 (MatMulNBits)"}


def quantized(zoo, name, fp32, form):
    """The zoo's quantized file of `name` in `form`, made when missing."""
    q = os.path.join(zoo, "%s_%s.onnx" % (name, FILE_FORMS[form]))
    if not os.path.exists(q):
        print("quantizing %s (%s) with ORT's tools" % (name, form), file=sys.stderr)
        if form == "dynamic":
            ort_quantize.quantize_dynamic(fp32, q)
        elif form == "int4":
            ort_quantize.quantize_nbits(fp32, q)
        else:
            ort_quantize.quantize_static(fp32, q, form)
    return q


def output_step(model, first):
    """The scale of the DequantizeLinear making output `first`, or None."""
    m = onnx.load(model, load_external_data=False)
    init = {i.name: i for i in m.graph.initializer}
    for n in m.graph.node:
        if first in n.output and n.op_type == "DequantizeLinear" and n.input[1] in init:
            return float(onnx.numpy_helper.to_array(init[n.input[1]]).max())
    return None


def peak_rss_mib(cmd, env=None):
    """Peak resident set of `cmd` in MiB (GNU time's %M)."""
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (cmd[0], r.stderr.strip()[-400:]))
    return int(r.stderr.strip().splitlines()[-1]) / 1024.0


def left_ops(nnfuse, model, tmp):
    out = os.path.join(tmp, "compiled.onnx")
    subprocess.run([nnfuse, "compile", model, "-o", out], check=True, capture_output=True)
    ops = [n.op_type for n in onnx.load(out, load_external_data=False).graph.node]
    return sum(ops.count(op) for op in QUANT_OPS)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+",
                    default=["bert_tiny", "bert_base", "llama_prefill_128", "resnet18:qdq",
                             "resnet18:qoperator", "resnet50:qdq", "mobilenet_v2:qdq",
                             "llama_decode_256:int4"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo"))
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--no-oracle", action="store_true",
                    help="skip onnx's reference evaluator (slow on large models)")
    ap.add_argument("--no-openvino", action="store_true", help="leave OpenVINO out")
    ap.add_argument("--json", metavar="OUT", help="also write the results as JSON (bench_json)")
    a = ap.parse_args()
    env = dict(os.environ, ORT_NODE=ensure_ort())
    results = []
    for entry in a.models:
        name, _, form = entry.partition(":")
        form = form or "dynamic"
        if form not in FILE_FORMS:
            sys.exit("sweep_int8: %s: form must be one of %s" % (entry, ", ".join(FILE_FORMS)))
        fp32 = ensure_model(a.zoo, name)
        q = quantized(a.zoo, name, fp32, form)
        # The oracle's file: onnx's reference evaluator runs no com.microsoft op.
        oracle_file = quantized(a.zoo, name, fp32, "qdq") if form == "qoperator" else q
        feeds = feeds_of(a.zoo, name)
        res = {"model": name, "form": FORM_NAMES[form]}
        with tempfile.TemporaryDirectory() as tmp:
            got, first = nnfuse_output0(a.nnfuse, q, feeds, tmp)
            float_out, _ = nnfuse_output0(a.nnfuse, fp32, feeds, tmp)
            res["to_fp32"] = rel(got, float_out)
            ort_out = ort_run(q, feeds, "all", threads=a.threads)[first]
            if not a.no_oracle and form == "int4":
                oracle = ort_run(q, feeds, "disabled", threads=a.threads)[first]
                res["to_oracle"], res["ort_to_oracle"] = rel(got, oracle), rel(ort_out, oracle)
            elif not a.no_oracle:
                oracle = ort_quantize.reference_run(oracle_file, feeds)
                oracle = oracle[first] if first in oracle else list(oracle.values())[0]
                res["to_oracle"], res["ort_to_oracle"] = rel(got, oracle), rel(ort_out, oracle)
                step = output_step(oracle_file, first) if form != "dynamic" else None
                if step:
                    res["oracle_steps"] = float(np.abs(got - oracle).max()) / step
                    res["ort_oracle_steps"] = float(np.abs(ort_out - oracle).max()) / step
            res["ort_to_nnfuse"] = rel(ort_out, got)
            res["quant_ops_left"] = left_ops(a.nnfuse, q, tmp)
        res["rss_mib"] = peak_rss_mib([a.nnfuse, "bench", q, "--runs", "1", "--warmup", "0",
                                       "--threads", str(a.threads)])
        res["ort_rss_mib"] = peak_rss_mib(["node", os.path.join(HERE, "ort_bench.js"), q, "all",
                                           str(a.threads), "1"], env)
        times = {"int8": [], "ort": [], "ov": [], "fp32": []}
        ov_failed = None if not a.no_openvino else "not run"
        for r in range(a.rounds):
            base = ["--json", "--runs", str(a.runs), "--threads", str(a.threads)]
            j = run_json([a.nnfuse, "bench", q] + base)
            o = run_json(["node", os.path.join(HERE, "ort_bench.js"), q, "all", str(a.threads),
                          str(a.runs)], env)
            if not ov_failed:
                try:
                    v = openvino_peer.ov_bench(q, a.threads, a.runs)
                    times["ov"].append(v["median_ms"])
                    res["ov_version"] = v["version"].split("-")[0]
                except RuntimeError as e:
                    ov_failed = str(e).strip().splitlines()[-1][-160:].lstrip("- ")
            f = run_json([a.nnfuse, "bench", fp32] + base)
            times["int8"].append(j["median_ms"])
            times["ort"].append(o["median_ms"])
            times["fp32"].append(f["median_ms"])
            res["kernels"], res["reference_kernels"] = j["kernels"], j["reference_kernels"]
            print("%s round %d: nnfuse int8 %.2f ms, ORT int8 %.2f ms, OpenVINO int8 %s, "
                  "nnfuse fp32 %.2f ms" %
                  (name, r + 1, j["median_ms"], o["median_ms"],
                   "%.2f ms" % times["ov"][-1] if not ov_failed else "failed", f["median_ms"]),
                  file=sys.stderr)
        for k, v in times.items():
            if v:
                res[k + "_ms"] = statistics.median(v)
        res["ratio_ort"] = res["int8_ms"] / res["ort_ms"]
        res["ratio_fp32"] = res["int8_ms"] / res["fp32_ms"]
        if ov_failed:
            res.pop("ov_ms", None)
            res["ov_failed"] = ov_failed
        else:
            res["ratio_ov"] = res["int8_ms"] / res["ov_ms"]
        results.append(res)
    print("\nnnfuse int8 vs ONNX Runtime %s (level all) on the same quantized files, and vs "
          "nnfuse fp32; %d threads, %d rounds x %d runs, alternating" %
          (ORT_VERSION, a.threads, a.rounds, a.runs))
    print("| model | form | nnfuse int8 ms | ORT int8 ms | / ORT | OpenVINO int8 ms | / OpenVINO | "
          "nnfuse fp32 ms | / fp32 | kernels (ref) | quantized ops left | "
          "error to oracle: nnfuse / ORT | to fp32 | peak RSS MiB: nnfuse / ORT |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        oracle = ("%.1e / %.1e" % (r["to_oracle"], r["ort_to_oracle"]) if "to_oracle" in r
                  else "not run")
        if "oracle_steps" in r:
            oracle += " (%.3g / %.3g steps)" % (r["oracle_steps"], r["ort_oracle_steps"])
        ov = ("%.2f | %.3f" % (r["ov_ms"], r["ratio_ov"]) if "ov_ms" in r
              else "%s | -" % r["ov_failed"])
        print("| %s | %s | %.2f | %.2f | %.3f | %s | %.2f | %.3f | %d (%d) | %d | %s | %.1e | "
              "%.0f / %.0f |" %
              (r["model"], r["form"], r["int8_ms"], r["ort_ms"], r["ratio_ort"], ov, r["fp32_ms"],
               r["ratio_fp32"], r["kernels"], r["reference_kernels"], r["quant_ops_left"],
               oracle, r["to_fp32"], r["rss_mib"], r["ort_rss_mib"]))
    if a.json:
        bench_json.write(a.json, "sweep_int8",
                         {"ort": ORT_VERSION, "ort_level": "all",
                          "openvino": None if a.no_openvino else openvino_peer.OV_VERSION,
                          "threads": a.threads,
                          "rounds": a.rounds, "runs": a.runs}, results)


if __name__ == "__main__":
    main()
