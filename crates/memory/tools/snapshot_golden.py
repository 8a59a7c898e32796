#!/usr/bin/env python3
"""Golden numbers for `oomdoc memory SNAPSHOT.pickle`, computed with PyTorch's own code.

For every PyTorch memory snapshot given, writes `<name>.golden.json` (numbers only) with,
per device:

* reserved_bytes, allocated_bytes, requested_bytes: with torch.cuda._memory_viz's own
  helpers, as its `segsum` (the `stats` command) counts them: the sum of `total_size`,
  `calc_active(seg)` (rounded sizes of active_allocated blocks) and `_block_extra(b)`'s
  requested size of active_allocated blocks. `segsum_ok` says whether segsum's own
  accounting assertion held on the device's segments.
* active_bytes: sizes of active_allocated + active_pending_free blocks (no torch helper).
* peak_bytes: the peak of PyTorch's memory viewer ("Active Memory Timeline"): a
  line-by-line Python port of `process_alloc_data` (torch/utils/viz/process_alloc_data.js
  at pytorch/pytorch a8f30ff8, its default tab, include_private_inactive=false) and of
  `annotate_snapshot`'s block addresses (MemoryViz.js), taking max(max_size,
  max(max_at_time)) as the file's header says ("use max_at_time for the true peak").
* oom: the first `oom` trace entry's `size` and `device_free` (null when none).

The pickles are read with an unpickler whose find_class refuses every global: never
with the stock one. torch is not imported (its CUDA wheel needs the NVIDIA libraries):
`_memory_viz.py`, which is pure Python, is loaded from the installed package's files.

    python3 -m venv target/venv && target/venv/bin/pip install --no-deps torch
    target/venv/bin/python crates/memory/tools/snapshot_golden.py \
        --out crates/memory/tests/fixtures/pytorch_snapshots ../shared/fixtures/pytorch-snapshots/*.p*
"""

import argparse
import importlib.util
import json
import os
import pickle
import re
import sys


class RefuseGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def load(path):
    with open(path, "rb") as f:
        return RefuseGlobals(f).load()


def memory_viz():
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed in this environment (pip install --no-deps torch)")
    root = list(spec.submodule_search_locations)[0]
    path = os.path.join(root, "cuda", "_memory_viz.py")
    mod_spec = importlib.util.spec_from_file_location("torch_memory_viz", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    with open(os.path.join(root, "version.py")) as f:
        found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", f.read(), re.M)
    return mod, found.group(1) if found else "?"


def annotate_blocks(snapshot):
    """MemoryViz.js annotate_snapshot: block addresses and legacy requested sizes."""
    for seg in snapshot["segments"]:
        addr = seg["address"]
        for b in seg["blocks"]:
            b["addr"] = addr
            if "frames" not in b:
                if "history" in b:
                    b["requested_size"] = b.get("requested_size") or b["history"][0]["real_size"]
                else:
                    b["requested_size"] = b.get("requested_size") or b["size"]
            addr += b["size"]


def viewer_peak(snapshot, device):
    """process_alloc_data(snapshot, device, plot_segments=false, max_entries=inf)."""
    elements = []
    initially_allocated = []
    actions = []
    addr_to_alloc = {}
    traces = snapshot.get("device_traces", [])
    trace = traces[device] if device < len(traces) else []
    # annotate_snapshot merges a free_requested directly followed by its free_completed
    # into one 'free'; process_alloc_data treats 'free' and 'free_completed' alike.
    for e in trace:
        action = e["action"]
        if action == "alloc":
            elements.append(e["size"])
            addr_to_alloc[e["addr"]] = len(elements) - 1
            actions.append(len(elements) - 1)
        elif action == "free_completed":
            if e["addr"] in addr_to_alloc:
                actions.append(addr_to_alloc.pop(e["addr"]))
            else:
                elements.append(e["size"])
                initially_allocated.append(len(elements) - 1)
                actions.append(len(elements) - 1)
    for seg in snapshot["segments"]:
        if seg["device"] != device:
            continue
        for b in seg["blocks"]:
            if b["state"] == "active_allocated" and b["addr"] not in addr_to_alloc:
                elements.append(b["requested_size"])
                initially_allocated.append(len(elements) - 1)
    initially_allocated.reverse()
    if not actions and initially_allocated:
        actions.append(initially_allocated.pop())
    # Phase 3 with every element drawn (the detail limit moves elements between the
    # drawn stack and the summarized band; the totals are the same).
    current = []
    total_mem = 0
    max_size = 0
    max_at_time = []
    for elem in initially_allocated:
        current.append(elem)
        total_mem += elements[elem]
    for elem in actions:
        size = elements[elem]
        if elem not in current:
            current.append(elem)
            total_mem += size
            max_at_time.append(total_mem)  # advance(1) after add_allocation
        else:
            max_at_time.append(total_mem)  # advance(1) before the removal
            idx = len(current) - 1 - current[::-1].index(elem)
            del current[idx]
            if idx < len(current):
                max_at_time.extend([total_mem] * 3)
            total_mem -= size
        max_size = max(total_mem, max_size)
    return max(max_size, max(max_at_time, default=0))


def golden(path, mv):
    data = load(path)
    if isinstance(data, list):  # torch.cuda.memory_snapshot(): as _memory_viz wraps it
        data = {"segments": data, "device_traces": []}
    annotate_blocks(data)
    devices = sorted({s["device"] for s in data["segments"]} | {i for i, t in enumerate(data.get("device_traces", [])) if t})
    out = []
    for d in devices:
        segs = [s for s in data["segments"] if s["device"] == d]
        try:
            mv.segsum({"segments": segs})
            segsum_ok = True
        except AssertionError:
            segsum_ok = False
        blocks = [b for s in segs for b in s["blocks"]]
        trace = data["device_traces"][d] if d < len(data.get("device_traces", [])) else []
        oom = next((e for e in trace if e["action"] == "oom"), None)
        out.append(
            {
                "device": d,
                "segments": len(segs),
                "reserved_bytes": sum(s["total_size"] for s in segs),
                "allocated_bytes": sum(mv.calc_active(s) for s in segs),
                "requested_bytes": sum(mv._block_extra(b)[1] for b in blocks if b["state"] == "active_allocated"),
                "active_bytes": sum(b["size"] for b in blocks if b["state"] in ("active_allocated", "active_pending_free")),
                "segsum_ok": segsum_ok,
                "trace_entries": len(trace),
                "peak_bytes": viewer_peak(data, d),
                "oom": None if oom is None else {"requested_bytes": oom["size"], "device_free_bytes": oom.get("device_free")},
            }
        )
    return {"devices": out}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="directory for <name>.golden.json")
    ap.add_argument("snapshots", nargs="+")
    args = ap.parse_args()
    mv, version = memory_viz()
    os.makedirs(args.out, exist_ok=True)
    for path in args.snapshots:
        g = golden(path, mv)
        g["torch"] = version
        name = os.path.basename(path)
        with open(os.path.join(args.out, name + ".golden.json"), "w") as f:
            json.dump(g, f, indent=1, sort_keys=True)
            f.write("\n")
        print(name, json.dumps([(d["device"], d["reserved_bytes"], d["allocated_bytes"], d["peak_bytes"], d["oom"]) for d in g["devices"]]))


if __name__ == "__main__":
    main()
