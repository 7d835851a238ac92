#!/usr/bin/env python3
"""Writes docs/performance.md, and the summary table between the README's perf-summary
markers, from the benchmark results in bench/results/*.json.

A results file is what a benchmark writes with --json OUT (bench/bench_json.py): its name
("benchmark"), the command line that produced it, the machine, the date, the commit, its
settings and its rows. Each file becomes one table headed by its command, machine and date;
files of a benchmark are listed newest first. Nothing here is measured: record results with
the benchmarks, then run this.

Usage:
  /usr/bin/python3 bench/perf_docs.py [--results bench/results] [--check]

  --check  write nothing; exit 1 when docs/performance.md or the README's summary differ from
           what the results give.
"""
import argparse
import glob
import json
import math
import os
import sys
import textwrap

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- perf-summary:begin -->", "<!-- perf-summary:end -->"
# The README's summary: these models of the newest sweep when it has more than 12 rows.
HEADLINE = ["resnet18", "mobilenet_v2", "efficientnet_b0", "densenet121", "convnext_tiny",
            "swin_t", "vit_b_16", "bert_base", "r3d_18", "wav2vec2_small"]
# ISA extensions a reader looks for first (bench_json.ISA_OF_NOTE records more).
KEY_ISA = ["avx512f", "avx512_vnni", "avx512_bf16", "amx_tile"]


# ------------------------------------------------------------------ cells
def num(fmt):
    """A cell of a %-format, or of a str.format one ("{:,}")."""
    if "{" in fmt:
        return lambda v: "-" if v is None else fmt.format(v)
    return lambda v: "-" if v is None else fmt % v


def ratio(key):
    def cell(r):
        if r.get(key) is None:
            return "-"
        lo, hi = r.get(key + "_min"), r.get(key + "_max")
        return "%.3f" % r[key] + ("" if lo is None else " (%.3f-%.3f)" % (lo, hi))
    return cell


def mib(key):
    return lambda r: "-" if r.get(key) is None else "%.1f" % (r[key] / 2**20)


def pair(a, b, fmt="%s / %s"):
    return lambda r: fmt % (r.get(a, "-"), r.get(b, "-"))


def field(key, fmt="%s"):
    f = num(fmt)
    return lambda r: f(r.get(key))


def text(s):
    return str(s).replace("|", "/").replace("\n", " ")


# ------------------------------------------------------------------ benchmarks
def sweep_columns(doc):
    def err(r):
        e = r.get("error")
        return "-" if e is None else "%.1e%s" % (e, " FAIL" if r.get("fail_error") else "")

    def kernels(r):
        k = r.get("kernels")
        return "-" if k is None else "%d%s" % (k, " (> ORT)" if r.get("fail_kernels") else "")

    def rss(r):
        f = lambda k: "-" if r.get(k) is None else "%.0f" % (r[k] / 1024.0)
        return f("nnfuse_rss_kb") + ("" if no_ort else " / " + f("ort_rss_kb"))

    def notes(r):
        return text("; ".join(r.get("notes", []) + ["ERROR " + e for e in r.get("errors", [])]))

    no_ort = not doc["settings"].get("ort")
    cols = [("model", field("model")), ("input", field("resolution")),
            ("error vs PyTorch", err), ("ref kernels", field("reference_kernels", "%d")),
            ("strict", lambda r: {True: "pass", False: "FAIL"}.get(r.get("strict_ok"), "-")),
            ("kernels", kernels)]
    if not no_ort:
        cols += [("ORT nodes", field("ort_nodes", "%d")), ("nnfuse ms", field("nnfuse_ms", "%.2f")),
                 ("ORT ms", field("ort_ms", "%.2f")), ("ratio (min-max)", ratio("ratio"))]
    else:
        cols += [("nnfuse ms", field("nnfuse_ms", "%.2f"))]
    cols += [("peak RSS nnfuse%s (MiB)" % ("" if no_ort else " / ORT"), rss), ("notes", notes)]
    return cols


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def sweep_int8_summary(doc):
    """The geomean of each ratio column over the models that have it."""
    lines = []
    for key, what in [("ratio_ort", "ONNX Runtime"), ("ratio_ov", "OpenVINO"),
                      ("ratio_fp32", "nnfuse fp32")]:
        xs = [r[key] for r in doc["rows"] if r.get(key) is not None]
        if xs:
            worst = max(doc["rows"], key=lambda r: r.get(key) or 0)
            lines.append("geomean nnfuse int8 / %s over %s: %.3f (highest %.3f, %s %s)"
                         % (what, plural(len(xs), "file"), geomean(xs), worst[key],
                            worst["model"], worst["form"]))
    return lines


def sweep_summary(doc):
    s, lines = doc.get("summary") or {}, []
    if s.get("geomean_ratio") is not None:
        above = s.get("above_1", [])
        lines.append("geomean nnfuse/ORT over %s: %.3f; above 1.0x: %d%s"
                     % (plural(s["ratio_models"], "model"), s["geomean_ratio"], len(above),
                        " (%s)" % ", ".join(above) if above else ""))
    for key, what in [("fail_error", "error > 1e-4 of max |y| (or no result)"),
                      ("fail_strict", "bench --strict fails (or did not run)"),
                      ("fail_kernels", "nnfuse kernels > ORT nodes"),
                      ("errors", "models with errors (export / run / bench)")]:
        if key in s:
            lines.append("%s: %d%s" % (what, len(s[key]),
                                       " (%s)" % ", ".join(s[key]) if s[key] else ""))
    return lines


def compare_ort_title(doc):
    s = doc["settings"]
    t = "ONNX Runtime %s at level `%s`" % (s.get("ort"), s.get("ort_level"))
    if s.get("no_fusion"):
        t += ", nnfuse `--no-fusion`"
    if s.get("switch_file"):
        t += ", nnfuse switch file `%s`" % s["switch_file"]
    return t


def compare_switches_title(doc):
    r = doc["rows"][0] if doc["rows"] else {}
    return "A: %s; B: %s" % (("`%s`" % r["a"]) if r.get("a") else "the default passes",
                             ("`%s`" % r["b"]) if r.get("b") else "the default passes")


def compile_scaling_summary(doc):
    return ["generated kernels: %s cache" % ("cold (empty)" if doc["settings"].get("cold")
                                            else "warm (built by a first compile)")]


KINDS = {
    "sweep": {
        "title": "Architecture sweep",
        "about": "`bench/sweep.py` exports each model from PyTorch (random weights, BN statistics "
                 "randomized) and gives it one row: the error against PyTorch (`nnfuse run`, "
                 "relative to the largest output), the kernels left on a reference kernel and "
                 "whether `bench --strict` passes, nnfuse's kernels per inference against the node"
                 " count of ONNX Runtime's optimized graph (level `all`, saved through "
                 "`optimizedModelFilePath`), the latency ratio nnfuse / ONNX Runtime alternating A"
                 " B A B (median of the rounds' medians, with the min-max of the per-round ratios)"
                 " and the peak RSS of each benchmark process (`/usr/bin/time -f %M`); then the "
                 "geomean of the ratios and the models failing each criterion. The models: the "
                 "torchvision 0.14 classification catalogue, the smallest member of each family, "
                 "its segmentation models (the `out` map) and video classifiers (16 frames of "
                 "112x112; S3D's of 224x224), plus bert_tiny, bert_base and two audio models "
                 "(wav2vec2_small: wav2vec 2.0's conv feature extractor, positional conv and "
                 "encoder layers on 1 s of 16 kHz audio; hifigan_small: a HiFi-GAN-style vocoder "
                 "of transposed and dilated 1-D convs) from `tests/models/export_models.py`, "
                 "exported once into `bench/zoo/sweep` (the first of opsets 13, 14 and 17 that "
                 "exports). `--assert` makes any failure (an error over 1e-4 of the largest "
                 "output, `--strict` failing, more kernels than ORT nodes, a model that did not "
                 "export or run) the exit status; `--resolution N` changes the input size where "
                 "the architecture allows it (the row notes where it does not); `--no-ort` "
                 "measures correctness and kernels only. A quick run: `bench/sweep.py --models "
                 "resnet18 mobilenet_v3_small squeezenet1_0 --resolution 64 --rounds 1 --runs 3`.",
        "columns": sweep_columns, "summary": sweep_summary,
    },
    "compare_ort": {
        "title": "Against ONNX Runtime",
        "about": "`bench/compare_ort.py` runs `nnfuse bench` and ONNX Runtime (npm "
                 "`onnxruntime-node`, CPU execution provider) alternately; ratio = nnfuse median /"
                 " ORT median, with the min-max of the per-round ratios. `peak` is the activation "
                 "arena the memory planner lays out; `all` is the sum of every activation's size, "
                 "what a runtime without reuse would hold. Models come from "
                 "`tests/models/export_models.py` (torchvision, and a BERT with Hugging Face's op "
                 "structure, sequence 128); `bert_base_dyn` has symbolic batch and sequence, run "
                 "at other shapes with `--shape input_ids=1,512 attention_mask=1,512 "
                 "token_type_ids=1,512`. torchvision's detectors are exported by "
                 "`tests/models/detection.py build/nnfuse DIR` (random weights; Faster R-CNN and "
                 "Mask R-CNN with `box_score_thresh` 0 so that they keep their full count of "
                 "detections, RetinaNet at 256 with every score kept, Mask R-CNN at 256 with 20 "
                 "detections) and measured with `--zoo DIR/detection`.",
        "subtitle": compare_ort_title,
        "columns": lambda doc: [
            ("model", field("model")), ("nnfuse ms", field("nnfuse_ms", "%.2f")),
            ("ORT ms", field("ort_ms", "%.2f")), ("ratio (min-max)", ratio("ratio")),
            ("kernels / nodes", pair("kernels", "nodes")),
            ("peak / all activations (MiB)",
             lambda r: "%s / %s" % (mib("peak_activation_bytes")(r),
                                    mib("total_activation_bytes")(r)))],
    },
    "sweep_int8": {
        "title": "Quantized models",
        "about": "`bench/sweep_int8.py` quantizes each model with ONNX Runtime's own tools "
                 "(pip's `onnxruntime`): `quantize_dynamic` (int8 weights, uint8 activations), "
                 "`quantize_static` in the QDQ and QOperator forms (after `quant_pre_process`, "
                 "calibrated on random inputs, int8 per-channel weights, uint8 activations) or "
                 "`MatMulNBitsQuantizer` (weight-only int4 blocks of 32), and runs the quantized "
                 "file in nnfuse, in ONNX Runtime (npm `onnxruntime-node`, level `all`) and in "
                 "OpenVINO (pip's `openvino`, CPU, latency hint), and the float model in nnfuse, "
                 "alternating A B C D; `/ ORT`, `/ OpenVINO` and `/ fp32` are nnfuse's median "
                 "over theirs (where OpenVINO cannot read a file, its error instead). Errors are of output 0 relative to its largest "
                 "magnitude, on the exported inputs: against the oracle (onnx's reference "
                 "evaluator, the quantized graph's arithmetic exactly as written; the QDQ file of "
                 "the same calibration for the QOperator form; ONNX Runtime at level `disabled` "
                 "for int4), for nnfuse and for ONNX Runtime, with the static forms' also in "
                 "output quantization steps, and nnfuse's against its float model. `quantized "
                 "ops left`: MatMulInteger, ConvInteger, QuantizeLinear and DequantizeLinear nodes "
                 "after compiling. Peak RSS: one process loading the file and running it once "
                 "(ONNX Runtime's includes Node.js, some 40 MiB).",
        "columns": lambda doc: [
            ("model", field("model")), ("form", field("form")),
            ("nnfuse int8 ms", field("int8_ms", "%.2f")), ("ORT int8 ms", field("ort_ms", "%.2f")),
            ("/ ORT", field("ratio_ort", "%.3f")),
            ("OpenVINO int8 ms",
             lambda r: num("%.2f")(r.get("ov_ms")) if "ov_ms" in r or "ov_failed" not in r
             else "fails: " + r["ov_failed"].lstrip("- ")),
            ("/ OpenVINO", field("ratio_ov", "%.3f")),
            ("nnfuse fp32 ms", field("fp32_ms", "%.2f")),
            ("/ fp32", field("ratio_fp32", "%.3f")),
            ("kernels (on reference)", pair("kernels", "reference_kernels", "%s (%s)")),
            ("quantized ops left", field("quant_ops_left", "%d")),
            ("error to oracle: nnfuse / ORT",
             lambda r: "%s / %s" % (num("%.1e")(r.get("to_oracle")),
                                    num("%.1e")(r.get("ort_to_oracle"))) +
             (" (%s / %s steps)" % (num("%.3g")(r.get("oracle_steps")),
                                    num("%.3g")(r.get("ort_oracle_steps")))
              if "oracle_steps" in r else "")),
            ("nnfuse to fp32", field("to_fp32", "%.1e")),
            ("peak RSS MiB: nnfuse / ORT",
             lambda r: "%s / %s" % (num("%.0f")(r.get("rss_mib")),
                                    num("%.0f")(r.get("ort_rss_mib"))))],
        "summary": sweep_int8_summary,
    },
    "sweep_families": {
        "title": "Model families with run-time shapes and control flow",
        "about": "`bench/sweep_families.py` exports the families of `bench/families.py` (random "
                 "weights) and runs each in nnfuse and in ONNX Runtime (npm `onnxruntime-node`, "
                 "level `all`) on the same inputs, alternating A B: mixture-of-experts layers (8 "
                 "SwiGLU experts, 128 tokens; Switch top-1 and Mixtral top-2 routing with "
                 "index_add, top-2 with index_select and scatter_add), masked selection through "
                 "an MLP, ConvNeXt-V2 with GRN, a detector's score filtering, NMS and box head, "
                 "a scripted greedy-decoding Loop (32 steps, a KV cache that grows a position a "
                 "step) and an If-gated block. Error against PyTorch relative to the largest "
                 "output; `strict`: `bench --strict`; the notes give an MoE layer's time against "
                 "its experts run densely on static slices of the routed token counts, and the "
                 "Loop's time per step against one step run as a model of its own.",
        "columns": lambda doc: [
            ("model", field("model")), ("error vs PyTorch", field("error", "%.1e")),
            ("ref kernels", field("reference_kernels", "%d")),
            ("strict", lambda r: {True: "pass", False: "FAIL"}.get(r.get("strict_ok"), "-")),
            ("kernels", field("kernels", "%d")), ("ORT nodes", field("ort_nodes", "%d")),
            ("nnfuse ms", field("nnfuse_ms", "%.3f")), ("ORT ms", field("ort_ms", "%.3f")),
            ("ratio (min-max)", ratio("ratio")),
            ("notes", lambda r: text("; ".join(r.get("notes", []) +
                                               ["ERROR " + e for e in r.get("errors", [])])))],
        "summary": sweep_summary,
    },
    "ort_export_bench": {
        "title": "ONNX Runtime running nnfuse's export",
        "about": "`bench/ort_export_bench.py`: ONNX Runtime runs the model as nnfuse exports it "
                 "(`compile --format ort`) at optimization level `disabled` (nnfuse's graph "
                 "exactly) and `all`, against the original model at level `all` (ONNX Runtime's "
                 "own fusions), in turn, A B C A B C; ratio = median / ORT's own median.",
        "columns": lambda doc: [
            ("model", field("model")), ("nodes", field("nodes", "%d")),
            ("export nodes", field("export_nodes", "%d")),
            ("ORT `all` nodes", field("ort_all_nodes", "%d")),
            ("ORT own ms", field("ort_all_ms", "%.2f")),
            ("export, `disabled` ms", field("export_ms", "%.2f")), ("ratio", ratio("ratio")),
            ("export, `all` ms", field("export_all_ms", "%.2f")),
            ("ratio", ratio("all_ratio"))],
    },
    "compare_plan_cache": {
        "title": "Symbolic shapes through the plan cache",
        "about": "`bench/compare_plan_cache.py`: one `nnfuse bench --shape-cycle` process running "
                 "every shape set on one plan cache, alternated with one `--shape` process per "
                 "set; ratio = plan cache / `--shape`.",
        "subtitle": lambda doc: "model `%s`" % doc["settings"].get("model"),
        "columns": lambda doc: [
            ("shapes", lambda r: "`%s`" % r["shapes"]),
            ("plan cache ms", field("cycle_ms", "%.2f")),
            ("`--shape` ms", field("shape_ms", "%.2f")),
            ("ratio (min-max)", ratio("ratio")), ("kernels", field("kernels", "%d")),
            ("reference kernels", field("reference_kernels", "%d")),
            ("first run ms", field("first_run_ms", "%.0f"))],
        "summary": lambda doc: ["plans built per cycle process: %s"
                                % (doc.get("summary") or {}).get("plans_built", "-")],
    },
    "compare_switches": {
        "title": "Fusion switches compared",
        "about": "`bench/compare_switches.py`: nnfuse under two switch files, alternating A B A B;"
                 " ratio = A / B.",
        "subtitle": compare_switches_title,
        "columns": lambda doc: [
            ("model", field("model")), ("A ms", field("a_ms", "%.3f")),
            ("B ms", field("b_ms", "%.3f")), ("kernels A / B", pair("a_kernels", "b_kernels")),
            ("ratio A / B (min-max)", ratio("ratio"))],
    },
    "compile_scaling": {
        "title": "Compile time against graph size",
        "about": "`bench/compile_scaling.py`: `nnfuse compile` of generated graphs (`chain`: Relu "
                 "nodes in a row; `dag`: random elementwise ops each reading one of the 20-50 "
                 "nodes before it), with the load / fuse / save split it prints, and `nnfuse run "
                 "--no-fusion` of the same graph.",
        "columns": lambda doc: [
            ("graph", field("family")), ("nodes", field("nodes", "{:,}")),
            ("`compile` s", field("compile_s", "%.2f")),
            ("load / fuse / save s", lambda r: "-" if r.get("load_s") is None else
             "%.2f / %.2f / %.2f" % (r["load_s"], r["fuse_s"], r["save_s"])),
            ("nodes after", field("nodes_after", "{:,}")),
            ("`run --no-fusion` s", field("run_s", "%.2f"))],
        "summary": compile_scaling_summary,
    },
    "compare_builds": {
        "title": "Two builds of nnfuse compared",
        "about": "`bench/compare_builds.py`: two nnfuse binaries (A, the one compared against, and "
                 "B) on the sweep's models, exported as `bench/sweep.py` exports them: kernels "
                 "per inference of each, and the latency alternating A B A B; ratio = B median / "
                 "A median, with the min-max of the per-round ratios. What a refactoring must "
                 "leave alone: equal kernel counts and ratios within the per-round spread.",
        "subtitle": lambda doc: "A `%s`, B `%s`" % (doc["settings"].get("a"),
                                                  doc["settings"].get("b")),
        "columns": lambda doc: [
            ("model", field("model")), ("kernels A / B", pair("kernels_a", "kernels_b")),
            ("A ms", field("ms_a", "%.3f")), ("B ms", field("ms_b", "%.3f")),
            ("ratio B / A (min-max)", ratio("ratio"))],
        "summary": lambda doc: ["geomean B / A: %s over %s models; kernel counts differ on: %s"
                                % tuple((lambda s: ("%.3f" % s["geomean_ratio"]
                                                    if s.get("geomean_ratio") else "-",
                                                    s.get("models", "-"),
                                                    ", ".join(s.get("kernel_counts_differ", []))
                                                    or "none"))(doc.get("summary") or {}))],
    },
    "python_vs_cli": {
        "title": "The Python module against the CLI",
        "about": "`bench/python_vs_cli.py`: `nnfuse bench` alternated with as many timed "
                 "`Model.run` calls from Python on the same model and inputs; ratio = Python / "
                 "CLI.",
        "columns": lambda doc: [
            ("model", field("model")), ("CLI ms", field("cli_ms", "%.3f")),
            ("Python ms", field("python_ms", "%.3f")), ("ratio (min-max)", ratio("ratio"))],
    },
    "winograd_rule": {
        "title": "Winograd against the direct algorithm",
        "about": "`bench/winograd_rule.py`: a 3x3 stride-1 conv between two 1x1 convs, profiled "
                 "with oneDNN's Winograd (`NNFUSE_WINOGRAD=force`), the project's own (`=own`) and"
                 " the direct algorithm (`=0`); ratios to the direct time, and what "
                 "`src/cost/winograd_rule.h` picks for oneDNN's.",
        "columns": lambda doc: [
            ("Cin", field("cin", "%d")), ("Cout", field("cout", "%d")),
            ("size", field("size", "%d")), ("oneDNN Winograd ms", field("winograd_ms", "%.3f")),
            ("own ms", field("own_ms", "%.3f")),
            ("direct ms", field("direct_ms", "%.3f")),
            ("ratio", lambda r: "%.2f" % (r["winograd_ms"] / r["direct_ms"])),
            ("own ratio", lambda r: "%.2f" % (r["own_ms"] / r["direct_ms"])),
            ("rule picks", field("rule"))],
        "summary": lambda doc: ["shapes where the rule picks the slower path on this machine: %s"
                                % (doc.get("summary") or {}).get("rule_wrong", "-")],
    },
}


# ------------------------------------------------------------------ rendering
def render_table(cols, rows):
    left = ("model", "notes", "graph", "shapes", "rule picks", "strict")
    out = ["| " + " | ".join(h for h, _ in cols) + " |",
           "|" + "|".join("---" if h in left else "---:" for h, _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(text(f(r)) for _, f in cols) + " |")
    return out


def machine_line(m):
    ident = m.get("cpu", "unknown CPU")
    extra = [x for x in [m.get("vendor"), m.get("family") is not None and "family %s" % m["family"],
                         m.get("model") is not None and "model %s" % m["model"]] if x]
    if extra:
        ident += " (%s)" % ", ".join(extra)
    cores = []
    if m.get("cores"):
        cores.append("%d cores" % m["cores"])
    if m.get("logical_cpus"):
        cores.append("%d logical CPUs" % m["logical_cpus"])
    isa = m.get("isa", [])
    missing = [x for x in KEY_ISA if x not in isa]
    parts = [ident] + ([", ".join(cores)] if cores else [])
    parts.append("ISA: %s%s" % (", ".join(isa) or "none of note",
                                "; without %s" % ", ".join(missing) if missing else ""))
    return "; ".join(parts)


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def when(doc):
    d = doc.get("date", "")
    return d.replace("T", " ").replace("Z", " UTC") if d else "unknown date"


def provenance(doc):
    s = doc.get("settings", {})
    lines = ["    " + doc.get("command", "(command not recorded)"), ""]
    facts = ["Machine: " + machine_line(doc.get("machine", {}))]
    facts.append("date: " + when(doc))
    if doc.get("commit"):
        facts.append("commit `%s`" % doc["commit"])
    if s.get("threads") is not None:
        facts.append(plural(s["threads"], "thread"))
    if s.get("rounds") is not None and s.get("runs") is not None:
        facts.append("%s x %s" % (plural(s["rounds"], "round"), plural(s["runs"], "run")))
    lines.append("; ".join(facts) + ".")
    return lines


def load(results):
    docs = []
    for path in sorted(glob.glob(os.path.join(results, "*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit("%s: not a results file (%s)" % (path, e))
        kind = doc.get("benchmark") if isinstance(doc, dict) else None
        if kind not in KINDS:
            raise SystemExit("%s: benchmark %r is none of %s (write it with --json from a bench "
                             "script)" % (path, kind, ", ".join(KINDS)))
        for key in ("command", "machine", "date", "rows"):
            if key not in doc:
                raise SystemExit("%s: no '%s'" % (path, key))
        doc.setdefault("settings", {})
        doc["_file"] = os.path.relpath(path, ROOT)
        docs.append(doc)
    order = list(KINDS)
    docs.sort(key=lambda d: d["date"], reverse=True)
    docs.sort(key=lambda d: order.index(d["benchmark"]))
    return docs


def wrap(lines):
    """Prose lines wrapped at 100 columns; tables, code, headings and blank lines as they are."""
    out = []
    for line in lines:
        if not line or line.startswith(("|", "    ", "#", "- ")) or len(line) <= 100:
            out.append(line)
        else:
            out += textwrap.wrap(line, 100, break_long_words=False, break_on_hyphens=False)
    return out


def performance_page(docs, results_rel):
    out = ["# Performance", "",
           "Every table on this page is generated by `bench/perf_docs.py` from the results files "
           "in `%s/`, which the benchmarks write with `--json OUT`; each table gives the command "
           "that produced it, the machine, the date and the commit. Compare figures only within "
           "one table: machines differ from one run to the next, and a ratio measured "
           "alternating two programs in one run is what holds. The README's summary is taken "
           "from the newest sweep." % results_rel, "",
           "To add or refresh a table, run a benchmark with `--json` into that folder, then the "
           "generator:", "",
           "    /usr/bin/python3 bench/sweep.py --rounds 3 --runs 10 --json %s/sweep.json"
           % results_rel,
           "    /usr/bin/python3 bench/perf_docs.py", "",
           "`bench/sweep.py`, `compare_ort.py`, `ort_export_bench.py`, `compare_plan_cache.py`, "
           "`compare_switches.py`, `compile_scaling.py`, `python_vs_cli.py`, `sweep_int8.py`, "
           "`sweep_families.py` and "
           "`winograd_rule.py` take `--json OUT`; their usage is in each script's header. "
           "`bench/perf_docs.py --check` says whether this page is up to date.", ""]
    for kind, spec in KINDS.items():
        mine = [d for d in docs if d["benchmark"] == kind]
        out += ["## " + spec["title"], "", spec["about"], ""]
        if not mine:
            out += ["No results recorded yet.", ""]
        for doc in mine:
            sub = spec.get("subtitle")
            heading = "### %s, %s" % (doc.get("machine", {}).get("cpu", "unknown CPU"),
                                      when(doc)[:10])
            if sub:
                heading += ": " + sub(doc)
            out += [heading, ""] + provenance(doc) + [""]
            out += render_table(spec["columns"](doc), doc["rows"]) + [""]
            summary = spec.get("summary")
            if summary:
                lines = summary(doc)
                if lines:
                    out += ["    " + l for l in lines] + [""]
            out += ["From `%s`." % doc["_file"], ""]
    return "\n".join(wrap(out)) + "\n"


def readme_summary(docs):
    sweeps = [d for d in docs if d["benchmark"] == "sweep" and d["settings"].get("ort")
              and any(r.get("ratio") is not None for r in d["rows"])]
    if sweeps:
        doc = sweeps[0]
        rows = doc["rows"]
        if len(rows) > 12:
            rows = [r for r in rows if r["model"] in HEADLINE]
        cols = [("model", field("model")), ("input", field("resolution")),
                ("error vs PyTorch", field("error", "%.1e")),
                ("kernels / ORT nodes", pair("kernels", "ort_nodes")),
                ("nnfuse ms", field("nnfuse_ms", "%.2f")), ("ORT ms", field("ort_ms", "%.2f")),
                ("nnfuse / ORT", ratio("ratio"))]
        lines = render_table(cols, rows)
        s = doc.get("summary") or {}
        if s.get("geomean_ratio") is not None:
            lines += ["", "Geomean nnfuse / ONNX Runtime %s over the sweep's %s: %.3f."
                      % (doc["settings"]["ort"], plural(s["ratio_models"], "model"),
                         s["geomean_ratio"])]
    else:
        compares = [d for d in docs if d["benchmark"] == "compare_ort"]
        if not compares:
            return wrap(["No measured results are recorded yet: [docs/performance.md]"
                         "(docs/performance.md) says how to record them."])
        doc = compares[0]
        lines = render_table(KINDS["compare_ort"]["columns"](doc), doc["rows"])
    return lines + wrap(["", "Measured with `%s`; %s; %s. Every table, with its command, in "
                         "[docs/performance.md](docs/performance.md)."
                         % (doc["command"], machine_line(doc["machine"]), when(doc))])


def replace_between_markers(readme, body):
    b, e = readme.find(BEGIN), readme.find(END)
    if b < 0 or e < b:
        raise SystemExit("README.md: no %s ... %s pair" % (BEGIN, END))
    return readme[:b + len(BEGIN)] + "\n" + "\n".join(body) + "\n" + readme[e:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "performance.md"))
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--check", action="store_true", help="exit 1 when the docs are out of date")
    a = ap.parse_args()
    docs = load(a.results)
    results_rel = os.path.relpath(os.path.abspath(a.results), ROOT)
    page = performance_page(docs, results_rel)
    with open(a.readme) as f:
        readme = f.read()
    new_readme = replace_between_markers(readme, readme_summary(docs))
    stale = []
    for path, new in [(a.docs, page), (a.readme, new_readme)]:
        try:
            with open(path) as f:
                old = f.read()
        except OSError:
            old = None
        if old == new:
            continue
        stale.append(path)
        if not a.check:
            with open(path, "w") as f:
                f.write(new)
    if a.check:
        if stale:
            print("out of date (run bench/perf_docs.py): %s" % ", ".join(
                os.path.relpath(p, ROOT) for p in stale), file=sys.stderr)
            return 1
        print("docs/performance.md and the README's summary are up to date (%d results files)"
              % len(docs))
        return 0
    print("%d results files; %s" % (len(docs), "wrote " + ", ".join(
        os.path.relpath(p, ROOT) for p in stale) if stale else "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
