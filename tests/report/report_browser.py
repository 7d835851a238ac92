#!/usr/bin/env python3
"""`nnfuse report` in a browser: for each model, writes the HTML report with measured kernel
times, then opens it in headless Chromium (check_report.js) and checks that it renders offline
with its graphs, tables and sections, and that its screenshot is not blank.

Usage:
  /usr/bin/python3 tests/report/report_browser.py NNFUSE ZOO_DIR OUT_DIR
      [--models resnet50 bert_base] [--runs 3] [--threads 2] [--update-docs]

Models come from ZOO_DIR, exported there with tests/models/export_models.py when missing. The
report and its screenshot are OUT_DIR/MODEL_report.html and OUT_DIR/MODEL_report.png;
--update-docs copies ResNet-50's screenshot to docs/report_resnet50.png. puppeteer-core is
installed with npm into /tmp/nnfuse-puppeteer unless $NNFUSE_PUPPETEER_DIR names a directory
holding node_modules/puppeteer-core; the browser is Debian's chromium ($CHROMIUM overrides).
"""
import argparse, fcntl, os, shutil, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from compare_ort import ensure_model  # noqa: E402
CHECKER = os.path.join(HERE, "check_report.js")
# The newest release line that still runs on Node 20 (25.x needs Node 22); it drives Chromium
# 156 over CDP.
PUPPETEER_VERSION = "24.43.1"


def ensure_puppeteer():
    """The directory whose node_modules holds puppeteer-core (installing it with npm on first
    use)."""
    d = os.environ.get("NNFUSE_PUPPETEER_DIR") or "/tmp/nnfuse-puppeteer"
    mod = os.path.join(d, "node_modules", "puppeteer-core")
    os.makedirs(d, exist_ok=True)
    # Tests run in parallel: one installs while the others wait.
    with open(os.path.join(d, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.isfile(os.path.join(mod, "package.json")):
            print("installing puppeteer-core@%s with npm into %s" % (PUPPETEER_VERSION, d),
                  file=sys.stderr)
            # The browser is the system's chromium; puppeteer must not download its own.
            env = dict(os.environ, PUPPETEER_SKIP_DOWNLOAD="1")
            try:
                r = subprocess.run(["npm", "install", "--prefix", d, "--no-audit", "--no-fund",
                                    "puppeteer-core@" + PUPPETEER_VERSION], env=env,
                                   capture_output=True, text=True)
            except FileNotFoundError:
                raise SystemExit("report_browser: npm not found (scripts/install_deps.sh "
                                 "installs it)")
            if r.returncode != 0 or not os.path.isfile(os.path.join(mod, "package.json")):
                # npm's own error lines, without the stack frames it prints among them.
                lines = [l for l in (r.stderr or r.stdout).splitlines()
                         if l.strip() and not l.strip().startswith(("at ", "npm error     at "))]
                tail = "\n".join(lines[:12])
                raise SystemExit("report_browser: `npm install puppeteer-core@%s` into %s failed "
                                 "(exit %d); the browser check needs it (npm must reach its "
                                 "registry, or set NNFUSE_PUPPETEER_DIR to a directory with "
                                 "node_modules/puppeteer-core):\n%s"
                                 % (PUPPETEER_VERSION, d, r.returncode, tail))
    return d


def check_model(a, name, env):
    """Writes and checks one model's report; returns (ok, summary text)."""
    try:
        model = ensure_model(a.zoo, name)
    except (subprocess.CalledProcessError, RuntimeError) as e:
        return False, "export failed: %s" % e
    html = os.path.join(a.out_dir, name + "_report.html")
    png = os.path.join(a.out_dir, name + "_report.png")
    for stale in (html, png):
        if os.path.exists(stale):
            os.remove(stale)

    cmd = [a.nnfuse, "report", model, "-o", html, "--measure", "--runs", str(a.runs),
           "--threads", str(a.threads)]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.stdout.strip():
        print(r.stdout.rstrip())
    if r.returncode != 0:
        print(r.stderr.rstrip(), file=sys.stderr)
        return False, "nnfuse report failed (exit %d): %s" % (
            r.returncode, (r.stderr.strip().splitlines() or ["no stderr"])[-1])
    if not os.path.isfile(html):
        return False, "nnfuse report exited 0 but wrote no %s" % html

    # --measure draws a bar per timed kernel.
    cmd = ["node", CHECKER, html, "--screenshot", png, "--min-bars", "1"]
    print("$ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.stdout.strip():
        print(r.stdout.rstrip())
    if r.stderr.strip():
        print(r.stderr.rstrip(), file=sys.stderr)
    if r.returncode != 0:
        problems = r.stderr.strip().splitlines()
        return False, "browser check failed (%d problem%s)" % (
            len(problems), "" if len(problems) == 1 else "s")
    return True, r.stdout.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("nnfuse", help="the nnfuse binary")
    ap.add_argument("zoo", help="directory of exported models (MODEL.onnx)")
    ap.add_argument("out_dir", help="where the reports and screenshots go")
    ap.add_argument("--models", nargs="+", default=["resnet50", "bert_base"])
    ap.add_argument("--runs", type=int, default=3, help="timed runs for --measure")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--update-docs", action="store_true",
                    help="copy ResNet-50's screenshot to docs/report_resnet50.png")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # in order with the tools' output
    if a.update_docs and "resnet50" not in a.models:
        ap.error("--update-docs needs resnet50 among --models")
    if not os.access(a.nnfuse, os.X_OK):
        ap.error("%s is not an executable" % a.nnfuse)
    chromium = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    if not os.access(chromium, os.X_OK):
        raise SystemExit("report_browser: no browser at %s (Debian package chromium; "
                         "scripts/install_deps.sh installs it, or set CHROMIUM)" % chromium)
    os.makedirs(a.out_dir, exist_ok=True)
    env = dict(os.environ, NNFUSE_PUPPETEER_DIR=ensure_puppeteer())

    results = [(name,) + check_model(a, name, env) for name in a.models]

    ok = all(r[1] for r in results)
    if a.update_docs:
        passed = dict((n, good) for n, good, _ in results)
        if passed.get("resnet50"):
            dest = os.path.join(ROOT, "docs", "report_resnet50.png")
            shutil.copyfile(os.path.join(a.out_dir, "resnet50_report.png"), dest)
            print("updated %s" % dest)
        else:
            print("docs/report_resnet50.png not updated: resnet50's report failed",
                  file=sys.stderr)
    print()
    for name, good, text in results:
        print("%-12s %s  %s" % (name, "PASS" if good else "FAIL", text))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
