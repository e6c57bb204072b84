#!/usr/bin/env python3
"""Draws the mutation run's sample (conformance/README.md, "Does the gate bite?").

Reads `cargo mutants --list` output (the population, one mutant a line), draws a simple random sample of
N without replacement with Python's `random.Random(SEED)`, and writes into OUT_DIR:

- `sample.txt`: population index and name of each sampled mutant, in draw order;
- `sample.re`: one anchored regex per sampled mutant, for `cargo mutants -F`;
- `sample.diff`: a diff touching exactly the sampled lines, for `cargo mutants --in-diff`. cargo-mutants
  27.1.0 applies `-F`/`-E` to every mutant except struct-field deletions ("delete field ... from struct"),
  so `-F` alone also runs those; `--in-diff` limits them to the sampled lines.

Usage: mutation-sample.py LIST SEED N OUT_DIR   (run from the workspace root: the diff reads the sources)
"""

import os
import random
import sys
from collections import defaultdict

# Characters with a meaning in Rust's `regex` syntax.
META = set("\\.+*?()|[]{}^$")


def main() -> None:
    list_path, seed, n, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    population = [line.rstrip("\n") for line in open(list_path) if line.strip()]
    picked = random.Random(seed).sample(range(len(population)), n)
    os.makedirs(out, exist_ok=True)
    names = [population[i] for i in picked]
    with open(os.path.join(out, "sample.txt"), "w") as f:
        f.writelines(f"{i}\t{population[i]}\n" for i in picked)
    with open(os.path.join(out, "sample.re"), "w") as f:
        f.writelines("^" + "".join("\\" + c if c in META else c for c in m) + "$\n" for m in names)
    lines = defaultdict(set)
    for m in names:
        path, line = m.split(":")[:2]
        lines[path].add(int(line))
    # Each hunk claims the line was changed from a copy with a trailing space: `--in-diff` checks that
    # the new side matches the source.
    with open(os.path.join(out, "sample.diff"), "w") as f:
        for path in sorted(lines):
            src = open(path).read().split("\n")
            f.write(f"--- a/{path}\n+++ b/{path}\n")
            for k in sorted(lines[path]):
                f.write(f"@@ -{k},1 +{k},1 @@\n-{src[k - 1]} \n+{src[k - 1]}\n")
    print(f"{n} of {len(population)} mutants, seed {seed}, in {out}")


if __name__ == "__main__":
    main()
