#!/usr/bin/env python3
"""Builds a trace set of N ranks from the public Kineto samples, for the cluster-scale benchmark.

    python3 scripts/make_trace_set.py --ranks 64 --out DIR [--samples tests/data/kineto]

Rank i is a copy of sample i mod 3 of TEMPLATES (the HTA samples: one rank of a 2-rank job with
AllReduce/Broadcast kernels, 9.8 MB of JSON, and two ranks of a 128-rank job with SendRecv
kernels, 1.7 MB each; tests/data/NOTICE.md), written as DIR/rank_<i>.json.gz (gzip level 1)
with its `distributedInfo` "rank" set to i and "world_size" to N. Nothing else is changed:
kernel args naming peers or group ranks ("Src Rank", "Process Group Ranks") keep the values of
the job the sample came from. Prints {"ranks", "files", "json_bytes", "gz_bytes"} as JSON
(json_bytes: the decompressed size of all files, the analyzers' input).

As a module: `make_trace_set(samples_dir, n, out_dir) -> dict` (the same figures).
"""
import argparse
import gzip
import json
import os
import re
import sys

TEMPLATES = ["hta-nccl_data.json.gz", "hta-sampled_rank-0.json.gz", "hta-sampled_rank-1.json.gz"]
_DIST = re.compile(rb'"distributedInfo"\s*:\s*\{[^{}]*')


def _split(text, name):
    """(before, distributedInfo head with the rank and world size as {}, after), or an error."""
    m = _DIST.search(text)
    if m is None:
        raise SystemExit(f"make_trace_set: {name}: no \"distributedInfo\" object; expected a Kineto trace with one")
    head = m.group(0)
    for key in (rb'"rank"', rb'"world_size"'):
        if not re.search(key + rb'\s*:\s*\d+', head):
            raise SystemExit(f"make_trace_set: {name}: distributedInfo has no {key.decode()}: <integer>")
    head = re.sub(rb'("rank"\s*:\s*)\d+', rb'\g<1>%(rank)d', head.replace(b"%", b"%%"), count=1)
    head = re.sub(rb'("world_size"\s*:\s*)\d+', rb'\g<1>%(world)d', head, count=1)
    return text[:m.start()], head, text[m.end():]


def make_trace_set(samples_dir, n, out_dir):
    if n < 1:
        raise SystemExit(f"make_trace_set: --ranks {n}: expected at least 1")
    parts = []
    for name in TEMPLATES:
        with gzip.open(os.path.join(samples_dir, name), "rb") as f:
            parts.append(_split(f.read(), name))
    os.makedirs(out_dir, exist_ok=True)
    json_bytes = gz_bytes = 0
    for i in range(n):
        before, head, after = parts[i % len(parts)]
        text = before + head % {b"rank": i, b"world": n} + after
        path = os.path.join(out_dir, f"rank_{i:04d}.json.gz")
        with gzip.open(path, "wb", compresslevel=1) as f:
            f.write(text)
        json_bytes += len(text)
        gz_bytes += os.path.getsize(path)
    return {"ranks": n, "files": n, "json_bytes": json_bytes, "gz_bytes": gz_bytes}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", default=os.path.join(here, "..", "tests", "data", "kineto"))
    args = ap.parse_args()
    print(json.dumps(make_trace_set(args.samples, args.ranks, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
