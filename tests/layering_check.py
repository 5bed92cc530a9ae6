#!/usr/bin/env python3
"""Checks the floors of docs/ARCHITECTURE.md: no #include runs from a lower floor to a higher one, and the
packages of one floor include each other without a circle (tests and benchmarks, which nothing builds on,
are left out of the circle check). Usage: layering_check.py WORKSPACE_ROOT.
Prints each violation with the file and line; exit status 1 if there is any."""
import os
import re
import sys

# Lowest first. proto/ is generated code that every floor may use.
LEVEL = {"util": 0, "proto": 0, "traces": 1, "presets": 1, "config": 2, "policies": 3, "cost_models": 4,
         "kernels": 5, "sim": 6, "tools": 7, "tests": 8, "fuzz": 8}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def floor_of(path):
    top = path.split("/", 1)[0]
    return top if top in LEVEL else None


def package_of(path, root):
    """The Bazel package of a workspace-relative path: the nearest folder above it with a BUILD file."""
    d = os.path.dirname(path)
    while d and not os.path.exists(os.path.join(root, d, "BUILD")):
        d = os.path.dirname(d)
    return d


def main(root):
    problems = []
    edges = {}  # package -> {package: (file, line)} within one floor
    for top in LEVEL:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = [d for d in dirnames if not d.startswith((".", "bazel-"))]
            for name in filenames:
                if not name.endswith((".h", ".cc", ".cu", ".cuh")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                src_floor = floor_of(rel)
                src_pkg = package_of(rel, root)
                with open(full, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        dst_floor = floor_of(target)
                        if dst_floor is None or not os.path.exists(os.path.join(root, target)):
                            continue  # system, generated (*.pb.h) or third-party headers
                        if LEVEL[dst_floor] > LEVEL[src_floor]:
                            problems.append("%s:%d: includes %s: floor %s is above %s" %
                                            (rel, number, target, dst_floor, src_floor))
                        dst_pkg = package_of(target, root)
                        # A test or benchmark is a leaf: nothing builds on it, so its includes make no circle.
                        leaf = name.endswith(("_test.cc", "_benchmark.cc"))
                        if dst_pkg != src_pkg and LEVEL[dst_floor] == LEVEL[src_floor] and not leaf:
                            edges.setdefault(src_pkg, {}).setdefault(dst_pkg, (rel, number))
    # Circles among the packages of a floor (depth-first search, reporting one path per circle).
    state = {}
    stack = []

    def visit(pkg):
        state[pkg] = 1
        stack.append(pkg)
        for nxt, where in sorted(edges.get(pkg, {}).items()):
            if state.get(nxt) == 1:
                circle = stack[stack.index(nxt):] + [nxt]
                problems.append("package circle %s (%s:%d)" % (" -> ".join(circle), where[0], where[1]))
            elif state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[pkg] = 2

    for pkg in sorted(edges):
        if state.get(pkg) is None:
            visit(pkg)
    for p in problems:
        print(p)
    print("%d layering problem(s)" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
