"""The results file every benchmark writes with --json OUT, which bench/perf_docs.py turns into
docs/performance.md: what ran (the command line), where (the CPU and its ISA extensions of
note), when, on which commit, with which settings, and the rows it measured.

    {"benchmark": "sweep", "command": "/usr/bin/python3 bench/sweep.py --models ...",
     "date": "2026-12-07T10:00:00Z", "commit": "6a6ba86636",
     "machine": {"cpu": "AMD EPYC", "vendor": "AuthenticAMD", "family": 23, "model": 1,
                 "cores": 2, "logical_cpus": 2, "isa": ["avx2", "fma"]},
     "settings": {"threads": 2, ...}, "rows": [{...}, ...], "summary": {...}}
"""
import datetime
import json
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The extensions that decide which kernels run (and so what a figure means), in this order.
ISA_OF_NOTE = ["avx2", "fma", "avx_vnni", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16",
               "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"]


def _cpuinfo():
    """The first processor's fields of /proc/cpuinfo, else lscpu's (name: value)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    if "model name" not in fields:
        try:
            out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                k, _, v = line.partition(":")
                fields.setdefault({"Model name": "model name", "Flags": "flags",
                                   "Vendor ID": "vendor_id", "CPU family": "cpu family",
                                   "Model": "model"}.get(k.strip(), k.strip()), v.strip())
        except (OSError, subprocess.CalledProcessError):
            pass
    return fields


def _physical_cores():
    try:
        out = subprocess.run(["lscpu", "-p=CORE,SOCKET"], capture_output=True, text=True,
                             check=True).stdout
        return len({l for l in out.splitlines() if l and not l.startswith("#")}) or None
    except (OSError, subprocess.CalledProcessError):
        return None


def machine():
    """The CPU this process runs on."""
    f = _cpuinfo()
    flags = set(f.get("flags", "").split())

    def num(key):
        try:
            return int(f[key])
        except (KeyError, ValueError):
            return None

    return {"cpu": f.get("model name", "unknown"), "vendor": f.get("vendor_id"),
            "family": num("cpu family"), "model": num("model"), "cores": _physical_cores(),
            "logical_cpus": os.cpu_count(), "isa": [x for x in ISA_OF_NOTE if x in flags]}


def command_line():
    """This process's command line as it can be run again from the repository root."""
    script = os.path.abspath(sys.argv[0])
    if script.startswith(ROOT + os.sep):
        script = os.path.relpath(script, ROOT)
    return shlex.join(["/usr/bin/python3", script] + sys.argv[1:])


def commit():
    """The checkout's commit (with -dirty when files differ from it), or None."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=10", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def write(path, benchmark, settings, rows, summary=None):
    """Writes the results file of `benchmark` (a name bench/perf_docs.py knows) to `path`."""
    doc = {"benchmark": benchmark, "command": command_line(),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": commit(), "machine": machine(), "settings": settings, "rows": rows}
    if summary is not None:
        doc["summary"] = summary
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)
    print("results written to %s" % path, file=sys.stderr)


if __name__ == "__main__":
    json.dump(machine(), sys.stdout, indent=1)
    print()
