#!/usr/bin/env python3
"""The progress line is drawn on a terminal and nowhere else. `nnfuse bench MODEL` long enough
to draw it (about 1.5 s of timed runs, sized from a short bench first):
  - on a pseudo-terminal, NNFUSE_PROGRESS unset: "bench: run i/N" lines rewritten with '\\r',
    and the line cleared (spaces between two '\\r') before the results;
  - with stdout and stderr pipes: no '\\r' and no "bench: run";
  - on the pseudo-terminal with --quiet, or with NNFUSE_PROGRESS=0: neither;
  - with pipes and NNFUSE_PROGRESS=1 (forced on): the line again.

Usage: /usr/bin/python3 progress_tty.py NNFUSE MODEL
"""
import json, math, os, pty, re, select, subprocess, sys, termios, time

TIMEOUT_S = 300


def env_with(progress):
    env = dict(os.environ)
    env.pop("NNFUSE_PROGRESS", None)
    if progress is not None:
        env["NNFUSE_PROGRESS"] = progress
    return env


def on_pty(cmd, env):
    """Runs CMD with stdin, stdout and stderr on a new pseudo-terminal (output post-processing
    off, so that '\\n' is not written as '\\r\\n'); returns (exit code, all it wrote)."""
    master, slave = pty.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
    os.close(slave)
    out, deadline = b"", time.time() + TIMEOUT_S
    while time.time() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if p.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every process holding the terminal is gone
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    if p.poll() is None:
        p.kill()
    return p.wait(), out.decode(errors="replace")


def piped(cmd, env):
    """Runs CMD with stdout and stderr pipes; returns (exit code, stdout, stderr), each '\r' kept."""
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=TIMEOUT_S)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    nnfuse, model = sys.argv[1:3]
    bench = [nnfuse, "bench", model, "--threads", "1"]
    failures = []

    def check(ok, what, text):
        if not ok:
            failures.append("%s; output: %r" % (what, text[-2000:]))

    # Enough timed runs for about 1.5 s, well past the line's 0.3 s delay.
    code, out, err = piped(bench + ["--runs", "3", "--warmup", "1", "--json"], env_with(None))
    if code != 0:
        print("bench failed (%d): %s" % (code, err))
        return 1
    median_ms = max(json.loads(out.splitlines()[-1])["median_ms"], 0.01)
    runs = min(100000, max(20, math.ceil(1500 / median_ms)))
    cmd = bench + ["--runs", str(runs)]
    line = re.compile(r"\rbench: run \d+/%d  \d+\.\d s" % runs)

    t0 = time.time()
    code, text = on_pty(cmd, env_with(None))
    took = time.time() - t0
    check(code == 0, "pty: exit %d" % code, text)
    check(line.search(text), "pty: no 'bench: run i/%d' line after %.1f s" % (runs, took), text)
    check(re.search(r"\r {10,}\r", text), "pty: the line is not cleared", text)
    check("median" in text, "pty: no results", text)

    code, out, err = piped(cmd, env_with(None))
    check(code == 0, "pipe: exit %d" % code, err)
    check("\r" not in err and "bench: run" not in err, "pipe: a progress line in stderr", err)
    check("\r" not in out, "pipe: '\\r' in stdout", out)

    code, text = on_pty(cmd + ["--quiet"], env_with(None))
    check(code == 0, "pty --quiet: exit %d" % code, text)
    check("\r" not in text and "bench: run" not in text, "pty --quiet: a progress line", text)

    code, text = on_pty(cmd, env_with("0"))
    check(code == 0, "pty NNFUSE_PROGRESS=0: exit %d" % code, text)
    check("\r" not in text and "bench: run" not in text, "pty NNFUSE_PROGRESS=0: a progress line",
          text)

    code, out, err = piped(cmd, env_with("1"))
    check(code == 0, "pipe NNFUSE_PROGRESS=1: exit %d" % code, err)
    check(line.search(err), "pipe NNFUSE_PROGRESS=1: no progress line", err)

    for f in failures:
        print("FAIL:", f)
    print("%d runs of %.2f ms; %d failure(s)" % (runs, median_ms, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
