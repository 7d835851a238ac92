#!/usr/bin/env python3
"""Counts the places that test an op's name as a string, outside src/ops/ (where each op nnfuse
defines has its one definition), the ONNX importer and the exporter.

An op's identity is its definition (src/ops/) or its pattern (src/pattern/); code that compares
op names as strings joins files that should not know each other. Counted, in the non-test C++
sources of src/ and tools/:

  compare  an op name literal on one side of == or != ("Conv" == ..., ... != "FusedConv")
  op_type  op_type() on one side of == or != (whatever the other side: a variable, a constant)
  member   op_type() tested against a set of names: .count(...op_type()), std::find over names,
           a prefix test (rfind("Reduce", 0))
  helper   an op name literal handed to a helper that compares it (producer_of(v, "Conv"))

An op name is a name of an ONNX operator (every domain ONNX defines) or of an op of nnfuse's
domain (the reference kernel tables' and src/ops/'s names). Activation names compared as
attribute values ("Relu" == activation) count too: they are op names in strings.

  /usr/bin/python3 scripts/op_name_compares.py [--list] [--max N] [ROOT]

--list prints every place; --max fails (exit 1) when the count is above N.
"""
import argparse
import os
import re
import sys

EXCLUDED = ("src/ops/", "src/onnx/importer.", "src/onnx/exporter.")
HELPERS = ("producer_of", "consumer_of", "is_op", "single_consumer_of", "has_op")


def op_names(root):
    names = set()
    try:
        import onnx.defs
        names |= {s.name for s in onnx.defs.get_all_schemas_with_history()}
    except ImportError:
        sys.exit("op_name_compares: needs the onnx Python package (python3-onnx)")
    # nnfuse's own ops: registered reference kernels and op definitions.
    reg = re.compile(r'\{\s*"([A-Z][A-Za-z0-9]+)"\s*,')
    defn = re.compile(r'\.name\s*=\s*"([A-Z][A-Za-z0-9]+)"')
    for sub in ("src/kernels/ref", "src/ops"):
        d = os.path.join(root, sub)
        if not os.path.isdir(d):
            continue
        for f in os.listdir(d):
            if f.endswith(".cc") and not f.endswith("_test.cc"):
                text = open(os.path.join(d, f), encoding="utf-8").read()
                names |= set(reg.findall(text)) | set(defn.findall(text))
    # The epilogue activations' names (attribute values the fused kernels read).
    names |= {"SiLU", "GeluTanh", "Swish", "Gelu"}
    return names


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sources(root):
    for top in ("src", "tools"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".cc", ".h")) or f.endswith("_test.cc"):
                    continue
                if f.endswith("_test_util.h") or f in ("test_util.h", "test_support.h"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                if rel.startswith(EXCLUDED) or "/testing/" in rel:
                    continue
                yield rel, path


def find(text, names):
    lit = r'"([A-Z][A-Za-z0-9]*)"'
    hits = []
    for m in re.finditer(r"(==|!=)\s*" + lit + "|" + lit + r"\s*(==|!=)", text):
        name = m.group(2) or m.group(3)
        if name in names:
            hits.append(("compare", m.start()))
    for m in re.finditer(r"op_type\(\)\s*(==|!=)|(==|!=)\s*[\w.>\-]*op_type\(\)", text):
        before = text[max(0, m.start() - 60):m.end() + 40]
        if not re.search(r"(==|!=)\s*" + lit, before[before.find("op_type()"):]):
            hits.append(("op_type", m.start()))
    for m in re.finditer(r"\.count\([^()]*op_type\(\)\)|std::find\([^;]*op_type\(\)\)|"
                         r"op_type\(\)\.(rfind|starts_with|find)\(", text):
        hits.append(("member", m.start()))
    for m in re.finditer(r"\b(" + "|".join(HELPERS) + r")\([^()]*?," + r"\s*" + lit, text):
        if m.group(2) in names:
            hits.append(("helper", m.start()))
    return hits


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--list", action="store_true", help="print every place counted")
    ap.add_argument("--max", type=int, help="exit 1 when more than this many are found")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    names = op_names(root)
    total, kinds, per_file = 0, {}, {}
    for rel, path in sources(root):
        raw = open(path, encoding="utf-8").read()
        text = strip_comments(raw)
        for kind, pos in find(text, names):
            line = text.count("\n", 0, pos) + 1
            total += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            per_file[rel] = per_file.get(rel, 0) + 1
            if a.list:
                print("%s:%d: %s: %s" % (rel, line, kind, raw.splitlines()[line - 1].strip()))
    if a.list:
        print()
        for f, n in sorted(per_file.items(), key=lambda kv: -kv[1]):
            print("%5d %s" % (n, f))
    print("op name string comparisons outside src/ops/, the importer and the exporter: %d (%s)" %
          (total, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
    if a.max is not None and total > a.max:
        print("op_name_compares: %d is more than the allowed %d" % (total, a.max), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
