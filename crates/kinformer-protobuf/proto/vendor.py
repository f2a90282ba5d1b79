#!/usr/bin/env python3
"""Vendors Kubernetes' generated.proto files and derives the zero-omission table.

Usage: vendor.py API_CHECKOUT APIMACHINERY_CHECKOUT OUT_DIR

API_CHECKOUT is a checkout of k8s.io/api, APIMACHINERY_CHECKOUT one of k8s.io/apimachinery.
The .proto files are copied under OUT_DIR/k8s.io/... with their comments removed (the licence
header is kept); the wire format is unchanged.

`inline.txt` lists, per message, the field numbers of embedded structs whose JSON is inlined
into the parent object (an embedded struct without a JSON name, e.g. `Probe.handler`, `Volume.volumeSource`).

`omitempty.txt` lists, per message, the field numbers whose Go field is a value (not a pointer)
tagged `omitempty`: Go's protobuf marshaller always writes such a field, even when it holds its
zero value, while Go's JSON encoder leaves it out. The decoder uses the table to drop zero
scalars exactly where the JSON form has none.
"""
import os
import re
import sys

api, machinery, out = sys.argv[1:4]

APIMACHINERY_PKGS = [
    "pkg/api/resource",
    "pkg/apis/meta/v1",
    "pkg/runtime",
    "pkg/runtime/schema",
    "pkg/util/intstr",
]


def strip(text):
    lines, header_done = [], False
    for line in text.splitlines():
        if not header_done:
            lines.append(line)
            if line.strip() == "*/":
                header_done = True
            continue
        if line.strip().startswith("//"):
            continue
        lines.append(line)
    body = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", body) + "\n"


def packages():
    for root, _, files in os.walk(api):
        if "generated.proto" in files:
            rel = os.path.relpath(root, api)
            yield os.path.join(root), "k8s.io/api/" + rel, "k8s.io.api." + rel.replace("/", ".")
    for p in APIMACHINERY_PKGS:
        yield os.path.join(machinery, p), "k8s.io/apimachinery/" + p, "k8s.io.apimachinery." + p.replace("/", ".")


FIELD = re.compile(r"^\t(\w+)\s+([^\s`]+)\s+`([^`]*)`")
EMBEDDED = re.compile(r"^\t([\w.]+)\s+`([^`]*)`")
STRUCT = re.compile(r"^type (\w+) struct \{")
table = []
inline = []
for src, path, package in sorted(packages()):
    dst = os.path.join(out, path, "generated.proto")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    with open(os.path.join(src, "generated.proto")) as f:
        text = f.read()
    with open(dst, "w") as f:
        f.write(strip(text))
    for name in sorted(os.listdir(src)):
        if not name.endswith(".go") or name.endswith("_test.go") or name.startswith("generated") or name.startswith("zz_"):
            continue
        current = None
        with open(os.path.join(src, name)) as f:
            for line in f:
                m = STRUCT.match(line)
                if m:
                    current = (m.group(1), [], [])
                    continue
                if current is None:
                    continue
                if line.startswith("}"):
                    if current[1]:
                        table.append((package + "." + current[0], current[1]))
                    if current[2]:
                        inline.append((package + "." + current[0], current[2]))
                    current = None
                    continue
                m = EMBEDDED.match(line)
                if m:
                    pm = re.search(r'protobuf:"[a-z0-9]+,(\d+),', m.group(2))
                    jm = re.search(r'json:"([^"]*)"', m.group(2))
                    if pm and (not jm or jm.group(1).split(",")[0] == ""):
                        current[2].append(int(pm.group(1)))
                    continue
                m = FIELD.match(line)
                if not m:
                    continue
                gotype, tag = m.group(2), m.group(3)
                pm = re.search(r'protobuf:"[a-z0-9]+,(\d+),', tag)
                jm = re.search(r'json:"([^"]*)"', tag)
                if not pm or not jm:
                    continue
                if gotype.startswith("*") or gotype.startswith("map[") or (gotype.startswith("[]") and gotype != "[]byte"):
                    continue
                if "omitempty" in jm.group(1).split(",")[1:]:
                    current[1].append(int(pm.group(1)))

with open(os.path.join(out, "omitempty.txt"), "w") as f:
    f.write("# message, then the numbers of its value fields tagged omitempty (see vendor.py)\n")
    for msg, nums in sorted(table):
        f.write(msg + " " + " ".join(str(n) for n in nums) + "\n")

with open(os.path.join(out, "inline.txt"), "w") as f:
    f.write("# message, then the numbers of its fields inlined in JSON (see vendor.py)\n")
    for msg, nums in sorted(inline):
        f.write(msg + " " + " ".join(str(n) for n in nums) + "\n")
