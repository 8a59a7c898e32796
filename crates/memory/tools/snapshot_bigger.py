#!/usr/bin/env python3
"""Writes a large PyTorch memory snapshot by repeating a real one's trace (for benchmarks).

    python3 crates/memory/tools/snapshot_bigger.py REAL.pickle OUT.pickle --mib 1024

Every device trace is repeated until the file reaches about --mib MiB. Each repetition's
entries are new dicts (as PyTorch writes them: one dict per event), their `time_us`
shifted past the previous repetition, their frame lists new lists of the original's frame
dicts, as the real files have them (lists per event, frame dicts shared through the memo); segments are kept once. The input is read with an unpickler
that refuses every global. The output is data for a benchmark, not a fixture: do not
commit it.
"""

import argparse
import os
import pickle


class RefuseGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("real")
    ap.add_argument("out")
    ap.add_argument("--mib", type=int, default=1024)
    args = ap.parse_args()
    with open(args.real, "rb") as f:
        snap = RefuseGlobals(f).load()
    one_rep = len(pickle.dumps({"device_traces": snap["device_traces"]}, protocol=4))
    reps = max(1, (args.mib << 20) // max(one_rep, 1))
    traces = []
    for trace in snap["device_traces"]:
        times = [e["time_us"] for e in trace if "time_us" in e]
        span = (max(times) - min(times) + 1) if times else 0
        out = []
        for r in range(reps):
            for e in trace:
                e2 = dict(e)
                if "frames" in e2:
                    # A new list of the same frame dicts, as PyTorch writes each event's stack.
                    e2["frames"] = list(e["frames"])
                if "time_us" in e2:
                    e2["time_us"] = e["time_us"] + r * span
                out.append(e2)
        traces.append(out)
    snap["device_traces"] = traces
    with open(args.out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    print(f"{args.out}: {os.path.getsize(args.out)} bytes, {reps} repetitions, {sum(map(len, traces))} trace entries")


if __name__ == "__main__":
    main()
