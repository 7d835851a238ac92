#!/usr/bin/env python3
"""Writes the libFuzzer targets' seed corpora into OUT/<target>/.

fuzz_model:    the ONNX node tests' models (libonnx-testdata) and the bundled models;
fuzz_tensor:   the node tests' input .pb files and the bundled .npy files, each behind the
               byte that picks its reader (fuzz_tensor.cc);
fuzz_switches: fuzz/corpus/switches (one file of each switch-file form);
fuzz_graph:    empty (its bytes are choices; the fuzzer finds its own).

usage: seed_corpus.py OUT [--max-files N]
"""
import argparse
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--max-files", type=int, default=0,
                    help="at most this many seeds per target (0: all)")
    args = ap.parse_args()
    cap = args.max_files or None

    def put(target, files, prefix=b""):
        d = os.path.join(args.out, target)
        os.makedirs(d, exist_ok=True)
        n = 0
        for f in sorted(files)[:cap]:
            with open(f, "rb") as src:
                data = src.read()
            if len(data) > 1 << 20:
                continue
            name = f.replace("/", "_").lstrip("_")
            with open(os.path.join(d, name), "wb") as dst:
                dst.write(prefix + data)
            n += 1
        return n

    if not os.path.isdir(NODE_TESTS):
        sys.exit(f"seed_corpus: {NODE_TESTS} is missing (apt-get install libonnx-testdata)")
    models = glob.glob(f"{NODE_TESTS}/*/model.onnx") + glob.glob(f"{ROOT}/models/*.onnx")
    counts = {"fuzz_model": put("fuzz_model", models)}
    counts["fuzz_tensor"] = put("fuzz_tensor", glob.glob(f"{NODE_TESTS}/*/test_data_set_0/input_0.pb"),
                                b"\x00")
    counts["fuzz_tensor"] += put("fuzz_tensor", glob.glob(f"{ROOT}/models/*.npy"), b"\x01")
    counts["fuzz_switches"] = put("fuzz_switches", glob.glob(f"{ROOT}/fuzz/corpus/switches/*"))
    os.makedirs(os.path.join(args.out, "fuzz_graph"), exist_ok=True)
    counts["fuzz_graph"] = 0
    for t, n in counts.items():
        print(f"seed_corpus: {t}: {n} seeds")


if __name__ == "__main__":
    main()
