#!/usr/bin/env python3
"""Keeps Bazel visibility explicit: every package private by default, each target (and each source file
read from another package) visible to exactly the packages that use it, as `bazel query --output=xml //...`
finds them. Lists it wrote before (package entries only) are recomputed; any other visibility is kept.
proto/ (the schemas every floor uses) and bazel/ (Bazel's own stand-ins) stay public.

Usage, from the workspace root, after adding a dependency across packages:
  python3 tools/update_visibility.py && bazel build --nobuild //...
"""
import collections
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

root = os.getcwd()
xml = subprocess.check_output(["bazel", "query", "--output=xml", "//..."], stderr=subprocess.DEVNULL)
tree = ET.fromstring(xml)

rules = {}          # label -> (package, BUILD line)
refs = collections.defaultdict(set)  # label -> referencing packages


def pkg_of(label):
    return label[2:].split(":")[0]


for rule in tree.iter("rule"):
    label = rule.get("name")
    loc = rule.get("location")  # /path/BUILD:LINE:COL
    path, line, _ = loc.rsplit(":", 2)
    rules[label] = (pkg_of(label), int(line), path)
    for lst in rule.iter("list"):
        for item in lst.iter("label"):
            target = item.get("value")
            if target and target.startswith("//"):
                refs[target].add(pkg_of(label))
    for item in rule.findall("label"):
        target = item.get("value")
        if target and target.startswith("//"):
            refs[target].add(pkg_of(label))

# Group the rules by their BUILD file and stanza start line.
by_file = collections.defaultdict(lambda: collections.defaultdict(set))
for label, (pkg, line, path) in rules.items():
    if not path.startswith(root) or "/bazel/" in path:
        continue  # other repositories, and Bazel's own stand-ins (bazel/), which must stay public
    outside = {p for p in refs.get(label, ()) if p != pkg}
    by_file[path][line] |= outside
    by_file[path].setdefault(line, set())


def vis_text(pkgs, indent):
    if not pkgs:
        return None
    items = sorted("//%s:__pkg__" % p for p in pkgs)
    if len(items) == 1:
        return '%svisibility = ["%s"],\n' % (indent, items[0])
    return "%svisibility = [\n%s%s],\n" % (indent, "".join('%s    "%s",\n' % (indent, i) for i in items), indent)


# Source files that other packages read: exported to exactly those packages.
source_files = collections.defaultdict(lambda: collections.defaultdict(set))  # BUILD path -> file -> pkgs
for target, pkgs in refs.items():
    if target in rules:
        continue
    pkg, name = pkg_of(target), target.split(":", 1)[1] if ":" in target else None
    build = os.path.join(root, pkg, "BUILD")
    if name is None or not os.path.exists(os.path.join(root, pkg, name)) or not os.path.exists(build):
        continue
    outside = {p for p in pkgs if p != pkg}
    if outside:
        source_files[build][name] |= outside

for path, lines in sorted(by_file.items()):
    if "/proto/BUILD" in path:
        continue  # generated schemas every floor uses: the package stays public
    text = open(path).read().split("\n")
    # Stanzas: a top-level call starting at the recorded line (1-based); insert before its closing ')'.
    inserts = []
    for line, pkgs in lines.items():
        start = line - 1
        depth, end = 0, None
        for k in range(start, len(text)):
            depth += text[k].count("(") - text[k].count(")") + text[k].count("[") - text[k].count("]")
            if depth <= 0 and k > start or (depth <= 0 and k == start and text[k].rstrip().endswith(")")):
                end = k
                break
        if end is None:
            continue
        body = "\n".join(text[start:end + 1])
        # A visibility this script wrote before (only package entries) is recomputed; any other is kept.
        vis_lines = [k for k in range(start, end + 1) if text[k].strip().startswith("visibility = [")]
        if vis_lines:
            k0 = vis_lines[0]
            k1 = k0
            while "]" not in text[k1]:
                k1 += 1
            entries = re.findall(r'"([^"]+)"', "\n".join(text[k0:k1 + 1]))
            if not entries or not all(e.endswith(":__pkg__") for e in entries):
                continue
            for k in range(k0, k1 + 1):
                text[k] = None  # removed below
            vis = vis_text(pkgs, "    ")
            if vis is not None:
                text[k0] = vis.rstrip("\n")
            continue
        vis = vis_text(pkgs, "    ")
        if vis is None:
            continue
        # The closing line: ')' for a call, ') for ...' for a comprehension: insert before it.
        close = end
        while close > start and not text[close].lstrip().startswith(")"):
            close -= 1
        if close == start:
            continue  # one-line call: leave it
        inserts.append((close, vis.rstrip("\n")))
    for close, vis in sorted(inserts, reverse=True):
        text.insert(close, vis)
    s = "\n".join(t for t in text if t is not None)
    s = s.replace('package(default_visibility = ["//visibility:public"])',
                  'package(default_visibility = ["//visibility:private"])')
    files = source_files.get(path, {})
    marker = "# Source files other packages read."
    if marker in s:  # drop the block written before (up to its closing parenthesis); keep what follows
        i = s.index(marker)
        j = s.index("\n)\n", i) + 3
        s = s[:i].rstrip("\n") + "\n" + s[j:]
    if files and "exports_files(" not in s:
        s = s.rstrip("\n") + "\n"
        pkgs = set()
        for f in files.values():
            pkgs |= f
        names = "".join('        "%s",\n' % n for n in sorted(files))
        s = s.rstrip("\n") + "\n\n%s\nexports_files(\n    [\n%s    ],\n%s)\n" % (
            marker, names, vis_text(pkgs, "    "))
    open(path, "w").write(s)
print("done")
