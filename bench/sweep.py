#!/usr/bin/python3
"""Sweep nnfuse over every torchvision 0.14 classification family, its segmentation and video
models (and the project's BERTs and audio models).

For each model: export it from PyTorch (random weights, BN statistics and affine parameters
randomized, eval mode, batch 1) into a cache folder with PyTorch's own output as the oracle,
then
  - error:       `nnfuse run` against PyTorch, max|got - want| / max|want| over every output;
  - ref kernels: `reference_kernels` of `nnfuse bench --json`, and whether `bench --strict`
                 passes (no compute op on a reference kernel);
  - kernels:     `kernels` of `nnfuse bench --json` (launches per inference);
  - ORT nodes:   nodes of the model ONNX Runtime (level all) optimizes, saved by
                 onnxruntime-node (`optimizedModelFilePath`) and counted with onnx;
  - latency:     nnfuse bench and bench/ort_bench.js alternating A B A B, ROUNDS times, RUNS
                 timed runs each; ratio = median nnfuse / median ORT (min-max per round);
  - peak RSS:    the max resident size of each benchmark process (`/usr/bin/time -f %M`).
At the end: the geomean of the ratios, how many are above 1.0x, and how many models fail each
criterion. Progress goes to stderr; a model whose export or run fails gets its error in its
row and the sweep goes on.

Usage:
  /usr/bin/python3 bench/sweep.py [--models NAME ...] [--resolution N] [--rounds 3] [--runs 10]
      [--threads 2] [--zoo bench/zoo/sweep] [--json OUT] [--nnfuse build/nnfuse] [--no-ort]
      [--assert]

  --resolution N  input size N x N instead of each model's default where the architecture
                  allows it (e.g. 64 or 96 for quick runs); where it does not (alexnet and
                  vgg11_bn need the feature map to divide into their 6x6 / 7x7 adaptive pool,
                  inception_v3 needs 75+, vit_b_16 a multiple of 16, swin_t of 32) the model
                  keeps its default and the row says so. The BERTs keep their sequence.
  --no-ort        skip ONNX Runtime: only the correctness and kernel columns.
  --json OUT      also write the rows and the summary with the command, machine and date
                  (bench/bench_json.py; bench/perf_docs.py makes docs/performance.md of them).
  --assert        exit 1 when any model errors or violates: error > 1e-4 of max |y|,
                  `bench --strict` fails, or nnfuse kernels > ORT's optimized nodes.

ONNX Runtime is npm onnxruntime-node, installed into /tmp/nnfuse-ort by compare_ort.py's
ensure_ort() unless $ORT_NODE names one.
"""
import argparse, json, math, os, shutil, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare_ort  # noqa: E402  (ensure_ort, run_json)
import bench_json  # noqa: E402

PYTHON = "/usr/bin/python3"
TOL = 1e-4


def alexnet_ok(n):
    a = (n + 4 - 11) // 4 + 1          # conv1 11x11 s4 p2
    for _ in range(3):                 # three 3x3 s2 max pools (convs keep the size)
        a = (a - 3) // 2 + 1
    return a >= 6 and a % 6 == 0, "its features (%dx%d) must divide into the 6x6 adaptive pool" % (a, a)


def vgg_ok(n):
    a = n // 32
    return a >= 7 and a % 7 == 0, "its features (%dx%d) must divide into the 7x7 adaptive pool" % (a, a)


def multiple_ok(k, what):
    return lambda n: (n % k == 0, "needs a multiple of %d (%s)" % (k, what))


def at_least(k):
    return lambda n: (n >= k, "needs at least %d" % k)


# name: (default resolution, opsets to try in order, resolution check or None)
# The builders are in export_one (only the export subprocess imports torch).
TV = {
    "alexnet": (224, [13, 14, 17], alexnet_ok),
    "convnext_tiny": (224, [13, 14, 17], None),
    "densenet121": (224, [13, 14, 17], None),
    "efficientnet_b0": (224, [13, 14, 17], None),
    "efficientnet_v2_s": (384, [13, 14, 17], None),
    "googlenet": (224, [13, 14, 17], None),
    "inception_v3": (299, [13, 14, 17], at_least(75)),
    "mnasnet0_5": (224, [13, 14, 17], None),
    "mobilenet_v2": (224, [13, 14, 17], None),
    "mobilenet_v3_small": (224, [14, 17], None),   # as export_models.py: HardSwish is opset 14
    "regnet_x_400mf": (224, [13, 14, 17], None),
    "regnet_y_400mf": (224, [13, 14, 17], None),
    "resnet18": (224, [13, 14, 17], None),
    "resnext50_32x4d": (224, [13, 14, 17], None),
    "shufflenet_v2_x0_5": (224, [13, 14, 17], None),
    "squeezenet1_0": (224, [13, 14, 17], None),
    "swin_t": (224, [13, 14, 17], multiple_ok(32, "patch 4, three 2x patch merges")),
    "vgg11_bn": (224, [13, 14, 17], vgg_ok),
    "vit_b_16": (224, [13, 14, 17], multiple_ok(16, "16x16 patches")),
    "wide_resnet50_2": (224, [13, 14, 17], None),
    "mobilenet_v3_large": (224, [14, 17], None),
    "maxvit_t": (224, [13, 14, 17], lambda n: (n == 224, "its 7x7 windows need 224")),
    # Dense prediction: the segmentation map ("out"), backbones without their ImageNet weights.
    "deeplabv3_mobilenet_v3_large": (224, [14, 17], None),
    "lraspp_mobilenet_v3_large": (224, [14, 17], None),
    "fcn_resnet50": (224, [13, 14, 17], None),
    # Video: 16 frames of N x N (3-D convs and pools).
    "r3d_18": (112, [13, 14, 17], None),
    "mc3_18": (112, [13, 14, 17], None),
    "r2plus1d_18": (112, [13, 14, 17], None),
    "s3d": (224, [13, 14, 17], at_least(224)),
}
SEGMENTATION = {"deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "fcn_resnet50"}
VIDEO = {"r3d_18", "mc3_18", "r2plus1d_18", "s3d"}
# The project's transformers and audio models, exported by tests/models/export_models.py (its
# shapes): wav2vec2_small (1-D conv feature extractor, grouped positional conv, encoder layers
# on 1 s of 16 kHz audio) and hifigan_small (a mel spectrogram of 64 frames upsampled 256x by
# transposed and dilated 1-D convs).
PROJECT = ["bert_tiny", "bert_base", "wav2vec2_small", "hifigan_small"]
DEFAULT_MODELS = list(TV) + PROJECT


class Status:
    """One line below the log on stderr, rewritten in place with '\\r' while stderr is a terminal
    (nothing otherwise): the model being measured, its step and the time since the sweep began,
    redrawn every second. Log lines go above it."""

    def __init__(self):
        self.on, self.text, self.drawn, self.t0 = False, "", 0, time.time()
        self.lock = threading.Lock()

    def start(self):
        self.on, self.t0 = sys.stderr.isatty(), time.time()
        if self.on:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self):
        while True:
            time.sleep(1)
            with self.lock:
                self._draw()

    def _draw(self):
        if not self.on or not self.text:
            return
        line = "%s  %.0f s" % (self.text, time.time() - self.t0)
        line = line[:max(shutil.get_terminal_size().columns - 1, 1)]
        sys.stderr.write("\r" + line + " " * max(self.drawn - len(line), 0))
        sys.stderr.flush()
        self.drawn = len(line)

    def print(self, *a):
        """Prints a line to stderr, on a line of its own above the status line."""
        with self.lock:
            if self.drawn:
                sys.stderr.write("\r" + " " * self.drawn + "\r")
                self.drawn = 0
            print(*a, file=sys.stderr, flush=True)
            self._draw()


STATUS = Status()


def log(*a):
    STATUS.print("[sweep %s]" % time.strftime("%H:%M:%S"), *a)


def short(msg, n=160):
    msg = " ".join(str(msg).split())
    return msg if len(msg) <= n else msg[:n - 3] + "..."


# ------------------------------------------------------------------ export (subprocess)
def export_one(name, res, zoo, stem, threads):
    """Runs in its own process: exports NAME at RES into ZOO/STEM.onnx with its oracle."""
    import numpy as np
    import torch, torchvision
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    import export_models
    torch.set_num_threads(max(1, threads))
    meta = {"name": name, "resolution": res}
    if name not in TV:
        # A project model: export_models.py's own export (weights, inputs and oracle).
        export_models.export(name, zoo)
        build, _, opset, _ = export_models.ZOO[name]
        meta.update(opset=opset, source="tests/models/export_models.py", resolution=None)
        with open(os.path.join(zoo, stem + ".json"), "w") as f:
            json.dump(meta, f)
        return
    torch.manual_seed(0)
    tv = torchvision.models
    kw = {}
    if name == "vit_b_16":
        kw["image_size"] = res
    if name in ("googlenet", "inception_v3"):
        kw["init_weights"] = True   # the default without weights, stated to avoid the warning
    x = torch.randn(1, 3, res, res)
    if name in SEGMENTATION:
        m = getattr(tv.segmentation, name)(weights=None, weights_backbone=None)
    elif name in VIDEO:
        m = getattr(tv.video, name)(weights=None)
        x = torch.randn(1, 3, 16, res, res)
    else:
        m = getattr(tv, name)(weights=None, **kw)
    m = export_models.wake_dead_params(export_models.randomize_bn(m)).eval()
    has_bn = any(isinstance(x, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d))
                 for x in m.modules())
    if name in SEGMENTATION:
        class Out(torch.nn.Module):
            """The segmentation map alone (the models return a dict)."""

            def __init__(s, inner):
                super().__init__()
                s.inner = inner

            def forward(s, x):
                return s.inner(x)["out"]

        m = Out(m).eval()
    with torch.no_grad():
        y = m(x)
    d = os.path.join(zoo, stem + "_io")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "in_x.npy"), x.numpy())
    np.save(os.path.join(d, "out_0.npy"), y.numpy())
    path = os.path.join(zoo, stem + ".onnx")
    # BN kept as BatchNormalization (as export_models.py does), for the fusion passes to fold.
    mode = torch.onnx.TrainingMode.PRESERVE if has_bn else torch.onnx.TrainingMode.EVAL
    errors = []
    for opset in TV[name][1]:
        try:
            torch.onnx.export(m, (x,), path, input_names=["x"], output_names=["y"],
                              opset_version=opset, training=mode, do_constant_folding=True)
            meta["opset"] = opset
            break
        except Exception as e:  # noqa: BLE001 (next opset)
            errors.append("opset %d: %s" % (opset, short(e, 300)))
            print("export %s at opset %d failed: %s" % (name, opset, e), file=sys.stderr)
    else:
        raise SystemExit("export failed: " + "; ".join(errors))
    if errors:
        meta["note"] = "opset %d (%s)" % (meta["opset"], errors[0])
    with open(os.path.join(zoo, stem + ".json"), "w") as f:
        json.dump(meta, f)
    print(name, res, "opset", meta["opset"], os.path.getsize(path) // (1 << 20), "MiB", file=sys.stderr)


def plan(name, resolution):
    """(stem, resolution used, note) of a model, without torch."""
    if name not in TV:
        return name, None, ("--resolution does not apply (export_models.py's shapes)"
                            if resolution else "")
    default, _, check = TV[name]
    if not resolution or resolution == default:
        return "%s_%d" % (name, default), default, ""
    if check is not None:
        ok, why = check(resolution)
        if not ok:
            return ("%s_%d" % (name, default), default,
                    "kept %d: %d not possible, %s" % (default, resolution, why))
    return "%s_%d" % (name, resolution), resolution, ""


def ensure_export(name, res, zoo, stem, threads):
    path = os.path.join(zoo, stem + ".onnx")
    meta_path = os.path.join(zoo, stem + ".json")
    if os.path.exists(path) and os.path.exists(meta_path):
        with open(meta_path) as f:
            return path, json.load(f)
    cmd = [PYTHON, os.path.abspath(__file__), "--_export", name, str(res or 0), zoo, stem,
           str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(path):
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        raise RuntimeError("export failed (%d): %s" % (r.returncode, short(lines[-1] if lines else "")))
    with open(meta_path) as f:
        return path, json.load(f)


# ------------------------------------------------------------------ measuring
def io_spec(path):
    """Graph inputs (not initializers) and outputs, in the shape ort_bench.js wants them."""
    import onnx
    m = onnx.load(path, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    ins = []
    for i in m.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        ins.append({"name": i.name, "elem": t.elem_type, "shape": [d.dim_value or 1 for d in t.shape.dim]})
    return ins, [o.name for o in m.graph.output]


def timed_json(cmd, env=None):
    """compare_ort.run_json under /usr/bin/time: (its JSON, peak RSS in KiB)."""
    with tempfile.NamedTemporaryFile(prefix="sweep_rss_", suffix=".txt", delete=False) as f:
        rss_file = f.name
    try:
        j = compare_ort.run_json(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd, env)
        with open(rss_file) as f:
            nums = [int(l) for l in f.read().split() if l.isdigit()]
        return j, (nums[-1] if nums else None)
    except SystemExit as e:  # run_json exits on failure; keep the sweep going
        raise RuntimeError(short(str(e).replace(" ".join(["/usr/bin/time", "-f", "%M", "-o", rss_file]) + " ", ""), 400))
    finally:
        os.unlink(rss_file)


def check_error(a, path, ins, outs, io_dir):
    import numpy as np
    with tempfile.TemporaryDirectory(prefix="sweep_out_") as d:
        cmd = [a.nnfuse, "run", path, "--output-dir", d, "--threads", str(a.threads)]
        for i in ins:
            cmd += ["--input", "%s=%s" % (i["name"], os.path.join(io_dir, "in_%s.npy" % i["name"]))]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            raise RuntimeError("nnfuse run exit %d: %s" % (r.returncode, short(lines[-1] if lines else "(no stderr)")))
        worst = 0.0
        for k, o in enumerate(outs):
            want = np.load(os.path.join(io_dir, "out_%d.npy" % k)).astype(np.float64)
            got = np.load(os.path.join(d, o + ".npy")).astype(np.float64)
            if got.shape != want.shape:
                raise RuntimeError("output %s: shape %s, PyTorch %s" % (o, got.shape, want.shape))
            scale = float(np.abs(want).max()) or 1.0
            err = float(np.abs(got - want).max()) / scale
            worst = max(worst, err if math.isfinite(err) else float("inf"))
        return worst


def strict_check(a, path):
    r = subprocess.run([a.nnfuse, "bench", path, "--strict", "--runs", "1", "--warmup", "0",
                        "--threads", str(a.threads)], capture_output=True, text=True)
    if r.returncode == 0:
        return True, ""
    if r.returncode == 3:
        # the refused nodes are named in stderr; keep the first line that names one
        lines = [l for l in r.stderr.splitlines() if "reference" in l] or r.stderr.splitlines()
        return False, short(lines[0] if lines else "exit 3", 200)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    raise RuntimeError("bench --strict exit %d: %s" % (r.returncode, short(lines[-1] if lines else "(no stderr)")))


def static_shapes(a, path):
    r = subprocess.run([a.nnfuse, "info", path], capture_output=True, text=True)
    for l in r.stdout.splitlines():
        if l.startswith("static shapes:"):
            return l[len("static shapes:"):].split("(")[0].strip()
    return None


def ort_nodes(a, path, env, tmp):
    import onnx
    opt = os.path.join(tmp, "ort_optimized.onnx")
    timed_json(["node", os.path.join(HERE, "ort_bench.js"), path, "all", str(a.threads), "1", opt], env)
    m = onnx.load(opt, load_external_data=False)
    hist = {}
    for n in m.graph.node:
        key = (n.domain + "." if n.domain else "") + n.op_type
        hist[key] = hist.get(key, 0) + 1
    os.unlink(opt)
    return len(m.graph.node), hist


def sweep_model(a, name, ort_env, idx, total):
    stem, res, note = plan(name, a.resolution)
    row = {"model": name, "resolution": res, "notes": [note] if note else [], "errors": []}
    tag = "[%d/%d] %s" % (idx, total, name)

    def step(what, fn):
        STATUS.text = "sweep: model %d/%d %s: %s" % (idx, total, name, what)
        log(tag, what)
        try:
            return fn()
        except Exception as e:  # noqa: BLE001 (reported in the row)
            row["errors"].append("%s: %s" % (what, short(e, 300)))
            log(tag, what, "FAILED:", short(e, 300))
            return None

    got = step("export" + (" at %d" % res if res else ""),
               lambda: ensure_export(name, res, a.zoo, stem, a.threads))
    if got is None:
        return row
    path, meta = got
    row["opset"] = meta.get("opset")
    if meta.get("note"):
        row["notes"].append(meta["note"])
    ins, outs = io_spec(path)
    row["inputs"] = {i["name"]: i["shape"] for i in ins}
    io_dir = os.path.join(a.zoo, stem + "_io")
    # run first: it also builds any generated kernels into the cache before anything is timed
    row["error"] = step("nnfuse run vs PyTorch", lambda: check_error(a, path, ins, outs, io_dir))
    ss = step("nnfuse info", lambda: static_shapes(a, path))
    if ss:
        row["static_shapes"] = ss
        done, _, of = ss.partition(" of ")
        if done.strip() != of.split()[0]:
            row["notes"].append("static shapes " + ss)
    strict = step("nnfuse bench --strict", lambda: strict_check(a, path))
    if strict is not None:
        row["strict_ok"] = strict[0]
        if not strict[0]:
            row["notes"].append("strict: " + strict[1])
    bench = [a.nnfuse, "bench", path, "--json", "--runs", str(a.runs), "--threads", str(a.threads)]
    ort_cmd = ["node", os.path.join(HERE, "ort_bench.js"), path, "all", str(a.threads), str(a.runs)]
    env = None
    if not a.no_ort:
        env = dict(ort_env, ORT_SPEC=json.dumps(ins), ORT_SHAPES="{}")
        with tempfile.TemporaryDirectory(prefix="sweep_ort_", dir=a.zoo) as tmp:
            n = step("ORT optimized model (level all)", lambda: ort_nodes(a, path, env, tmp))
        if n is not None:
            row["ort_nodes"], row["ort_op_histogram"] = n
    nn_ms, ort_ms, ratios, nn_rss, ort_rss = [], [], [], [], []
    for r in range(1 if a.no_ort else a.rounds):
        j = step("round %d: nnfuse bench" % (r + 1), lambda: timed_json(bench))
        if j is None:
            break
        info, rss = j
        nn_ms.append(info["median_ms"]); nn_rss.append(rss)
        row["nnfuse_min_ms"] = min(row.get("nnfuse_min_ms", info["min_ms"]), info["min_ms"])
        if r == 0:
            for k in ("kernels", "nodes", "nodes_after_passes", "reference_kernels",
                      "reference_kernel_share", "peak_activation_bytes", "kernel_histogram"):
                row[k] = info.get(k)
        if a.no_ort:
            break
        o = step("round %d: ORT bench" % (r + 1), lambda: timed_json(ort_cmd, env))
        if o is None:
            break
        ort_ms.append(o[0]["median_ms"]); ort_rss.append(o[1])
        row["ort_min_ms"] = min(row.get("ort_min_ms", o[0]["min_ms"]), o[0]["min_ms"])
        ratios.append(nn_ms[-1] / ort_ms[-1])
        log(tag, "round %d: nnfuse %.2f ms, ORT %.2f ms, ratio %.3f" % (r + 1, nn_ms[-1], ort_ms[-1], ratios[-1]))
    if nn_ms:
        row["nnfuse_ms"] = statistics.median(nn_ms)
        row["nnfuse_rss_kb"] = max((x for x in nn_rss if x), default=None)
    if ratios:
        row["ort_ms"] = statistics.median(ort_ms)
        row["ratio"] = row["nnfuse_ms"] / row["ort_ms"]
        row["ratio_min"], row["ratio_max"] = min(ratios), max(ratios)
        row["ort_rss_kb"] = max((x for x in ort_rss if x), default=None)
    # the criteria --assert checks
    row["fail_error"] = row.get("error") is None or not row["error"] <= TOL
    row["fail_strict"] = row.get("strict_ok") is not True
    row["fail_kernels"] = (row.get("kernels") is not None and row.get("ort_nodes") is not None
                           and row["kernels"] > row["ort_nodes"])
    return row


# ------------------------------------------------------------------ report
def fmt_row(r, no_ort):
    def f(key, spec, dash="-"):
        v = r.get(key)
        return dash if v is None else spec % v
    err = f("error", "%.1e")
    if r.get("error") is not None and r["fail_error"]:
        err += " FAIL"
    strict = {True: "pass", False: "FAIL"}.get(r.get("strict_ok"), "-")
    kern = f("kernels", "%d")
    if r.get("fail_kernels"):
        kern += " (>ORT)"
    ratio = "-" if r.get("ratio") is None else "%.3f (%.3f-%.3f)" % (r["ratio"], r["ratio_min"], r["ratio_max"])
    mib = lambda k: "-" if r.get(k) is None else "%.0f" % (r[k] / 1024.0)
    notes = "; ".join(r["notes"] + ["ERROR " + e for e in r["errors"]])
    res = "-" if r.get("resolution") is None else str(r["resolution"])
    cells = [r["model"], res, err, f("reference_kernels", "%d"), strict, kern]
    if not no_ort:
        cells += [f("ort_nodes", "%d"), f("nnfuse_ms", "%.2f"), f("ort_ms", "%.2f"), ratio,
                  "%s / %s" % (mib("nnfuse_rss_kb"), mib("ort_rss_kb"))]
    else:
        cells += [f("nnfuse_ms", "%.2f"), mib("nnfuse_rss_kb")]
    cells.append(notes.replace("|", "/"))
    return "| " + " | ".join(cells) + " |"


def report(a, rows):
    if a.no_ort:
        head = ["model", "input", "error vs PyTorch", "ref kernels", "strict", "kernels",
                "nnfuse ms", "peak RSS (MiB)", "notes"]
    else:
        head = ["model", "input", "error vs PyTorch", "ref kernels", "strict", "kernels",
                "ORT nodes", "nnfuse ms", "ORT ms", "ratio (min-max)", "peak RSS nnfuse / ORT (MiB)",
                "notes"]
    print("\nnnfuse sweep: %d threads, %s" % (a.threads, "no ORT, 1 bench of %d runs" % a.runs if a.no_ort
          else "vs ONNX Runtime %s (level all), %d rounds x %d runs, alternating"
          % (compare_ort.ORT_VERSION, a.rounds, a.runs)))
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" if h in ("model", "notes", "strict") else "---:" for h in head) + "|")
    for r in rows:
        print(fmt_row(r, a.no_ort))
    summary = {}
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    if ratios:
        gm = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        above = [r["model"] for r in rows if r.get("ratio", 0) > 1.0]
        summary.update(geomean_ratio=gm, ratio_models=len(ratios), above_1=above)
        print("\ngeomean nnfuse/ORT over %d models: %.3f; above 1.0x: %d%s"
              % (len(ratios), gm, len(above), " (%s)" % ", ".join(above) if above else ""))
    elif not a.no_ort:
        print("\nno latency ratios")
    crit = [("fail_error", "error > %g of max |y| (or no result)" % TOL),
            ("fail_strict", "bench --strict fails (or did not run)"),
            ("fail_kernels", "nnfuse kernels > ORT nodes")]
    if a.no_ort:
        crit = crit[:2]
    for key, what in crit:
        bad = [r["model"] for r in rows if r.get(key)]
        summary[key] = bad
        print("failing %s: %d%s" % (what, len(bad), " (%s)" % ", ".join(bad) if bad else ""))
    errs = [r["model"] for r in rows if r["errors"]]
    summary["errors"] = errs
    print("models with errors (export / run / bench): %d%s" % (len(errs), " (%s)" % ", ".join(errs) if errs else ""))
    return summary


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_export":   # internal: one export, own process
        name, res, zoo, stem, threads = sys.argv[2:7]
        export_one(name, int(res), zoo, stem, int(threads))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS, metavar="NAME",
                    help="subset (default: every torchvision family and %s)" % " ".join(PROJECT))
    ap.add_argument("--resolution", type=int, help="input size N x N instead of each default")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--zoo", default=os.path.join(HERE, "zoo", "sweep"), metavar="DIR",
                    help="export cache (default bench/zoo/sweep)")
    ap.add_argument("--json", metavar="OUT", help="also write every row and the summary as JSON")
    ap.add_argument("--nnfuse", default=os.path.join(ROOT, "build", "nnfuse"))
    ap.add_argument("--no-ort", action="store_true", help="skip ONNX Runtime")
    ap.add_argument("--assert", dest="assert_", action="store_true",
                    help="exit 1 when any model errors or fails a criterion")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
    project = set()
    try:  # which project models export_models.py offers, without importing torch here
        src = open(os.path.join(ROOT, "tests", "models", "export_models.py")).read()
        project = {n for n in PROJECT + ["act_mlp", "resnet50", "vgg16_bn", "bert_base_dyn"]
                   if '"%s":' % n in src}
    except OSError:
        pass
    unknown = [m for m in a.models if m not in TV and m not in project]
    if unknown:
        ap.error("unknown model(s) %s; known: %s" % (" ".join(unknown), " ".join(list(TV) + sorted(project))))
    a.models = [m for m in a.models if m in TV or m in project]
    if a.resolution is not None and a.resolution < 16:
        ap.error("--resolution must be at least 16")
    a.zoo = os.path.abspath(a.zoo)
    a.nnfuse = os.path.abspath(a.nnfuse)
    os.makedirs(a.zoo, exist_ok=True)
    if not os.access(a.nnfuse, os.X_OK):
        ap.error("no nnfuse at %s (--nnfuse)" % a.nnfuse)
    ort_env = None
    if not a.no_ort:
        ort_env = dict(os.environ, ORT_NODE=compare_ort.ensure_ort())
    rows = []
    t0 = time.time()
    STATUS.start()
    for k, name in enumerate(a.models, 1):
        rows.append(sweep_model(a, name, ort_env, k, len(a.models)))
    STATUS.text = ""
    log("done in %.0f s" % (time.time() - t0))
    summary = report(a, rows)
    if a.json:
        bench_json.write(a.json, "sweep",
                         {"threads": a.threads, "rounds": a.rounds, "runs": a.runs,
                          "resolution": a.resolution,
                          "ort": None if a.no_ort else compare_ort.ORT_VERSION,
                          "ort_level": None if a.no_ort else "all"},
                         rows, summary)
    if a.assert_:
        bad = set(summary["errors"] + summary["fail_error"] + summary["fail_strict"] + summary.get("fail_kernels", []))
        if bad:
            print("--assert: %d model(s) with errors or violations: %s"
                  % (len(bad), " ".join(m for m in a.models if m in bad)), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
