#!/usr/bin/env python3
"""How long the fusion rules are: every rule of src/passes/fusions (a function returning a Rule,
from its signature to its closing brace: pattern, guards and rewrite together), every fusion
pass not yet written as a rule (its Pass class), the average of each, and every fusion source
file's length, with those over 400 lines marked.

Usage: /usr/bin/python3 scripts/rule_stats.py [--json] [--check]
With --check, exits 1 when the average rule is over 25 lines, a fusion pass is not a rule or a
fusion source file is over 400 lines.
"""
import glob, json, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUSIONS = os.path.join(ROOT, "src", "passes", "fusions")
MAX_FILE = 400
MAX_RULE_AVERAGE = 25


def blocks(lines, start_re):
    """(name, first line, line count) of every top-level block whose first line matches."""
    out = []
    for i, line in enumerate(lines):
        m = re.match(start_re, line)
        if not m:
            continue
        depth, j = 0, i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth == 0 and "}" in lines[j]:
                break
            j += 1
        out.append((m.group(1), i + 1, j - i + 1))
    return out


def main():
    rules, passes, files = [], [], []
    for path in sorted(glob.glob(os.path.join(FUSIONS, "*.cc"))):
        if path.endswith("_test.cc") or os.path.basename(path) == "rule.cc":
            continue
        lines = open(path).read().splitlines()
        name = os.path.basename(path)
        files.append((name, len(lines)))
        rules += [(name, n, c) for n, _, c in blocks(lines, r"^Rule (\w+)\(")]
        passes += [(name, n, c) for n, _, c in blocks(lines, r"^class (\w+) : public Pass")]
    avg = lambda xs: sum(c for _, _, c in xs) / len(xs) if xs else 0.0
    report = {"rules": len(rules), "rule_lines_average": avg(rules),
              "passes_not_rules": len(passes), "pass_lines_average": avg(passes),
              "files_over_%d" % MAX_FILE: [f for f, n in files if n > MAX_FILE]}
    if "--json" in sys.argv:
        print(json.dumps(report))
        return 0
    print("rules (pattern, guards and rewrite):")
    for f, n, c in rules:
        print("  %-24s %-22s %4d lines" % (n, f, c))
    print("fusion passes not yet written as rules:")
    for f, n, c in passes:
        print("  %-24s %-22s %4d lines" % (n, f, c))
    print("fusion source files:")
    for f, n in files:
        print("  %-26s %4d lines%s" % (f, n, "  (over %d)" % MAX_FILE if n > MAX_FILE else ""))
    print("%d rules, %.1f lines on average; %d passes not rules, %.1f lines on average; "
          "%d files over %d lines" % (len(rules), avg(rules), len(passes), avg(passes),
                                      len(report["files_over_%d" % MAX_FILE]), MAX_FILE))
    if "--check" in sys.argv:
        problems = []
        if avg(rules) > MAX_RULE_AVERAGE:
            problems.append("the average rule is %.1f lines, over %d" % (avg(rules), MAX_RULE_AVERAGE))
        if passes:
            problems.append("%d fusion passes are not rules" % len(passes))
        if report["files_over_%d" % MAX_FILE]:
            problems.append("files over %d lines: %s" % (MAX_FILE, ", ".join(report["files_over_%d" % MAX_FILE])))
        for p in problems:
            print("rule_stats: " + p, file=sys.stderr)
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
