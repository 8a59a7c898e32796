"""Time oomdoc's memory viewer against XProf's converter on the same module, in one run.

    python3 -m venv /tmp/memvenv && /tmp/memvenv/bin/pip install "jax[cpu]==0.10.2" "xprof==2.24.2"
    cargo build --release -p oomdoc
    /tmp/memvenv/bin/python crates/memory/fixtures-gen/compare_xprof.py DUMP_DIR [ROUNDS] [XPLANE]

DUMP_DIR holds one module's text dump (`*-buffer-assignment.txt`, values, live range)
and its `*.hlo.pb`, e.g. `gen.py OUT unrolled48_train_step` (OUT/<program>/xla_dump) or
`OOMDOC_BENCH_DIR=DIR cargo bench -p oomdoc-memory --bench million_values`. The script
wraps the `.hlo.pb` into an XSpace the way `jax.profiler` stores it (an event metadata of
the `/host:metadata` plane with an `Hlo Proto` stat), then, for each round, times
`oomdoc memory --format json` from the text files, the `.hlo.pb` and the `.xplane.pb`,
and XProf's `xspace_to_tool_names` + `xspace_to_tool_data(..., "memory_viewer")` on a
fresh copy of the XSpace (a fresh process each; wall time and peak RSS from
`/usr/bin/time`). With XPLANE (a real `jax.profiler` `<host>.xplane.pb` of the same run,
trace events and all), that file is used instead of the wrapped one. oomdoc's wall time includes process start and writing its JSON;
XProf's is timed around its two calls (Python start-up excluded), its RSS is the whole
process's. It prints one Markdown row per input and checks that every oomdoc input
gives XProf's peak.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OOMDOC = os.path.join(ROOT, "target", "release", "oomdoc")


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number, payload):
    """A length-delimited field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def int_field(number, value):
    return varint(number << 3) + varint(value)


def xspace_with(hlo_proto, module_name, program_id):
    """XSpace { planes: [XPlane { name: "/host:metadata", event_metadata: {program_id:
    XEventMetadata { id, name, stats: [XStat { metadata_id: 1, bytes_value }] }},
    stat_metadata: {1: XStatMetadata { id: 1, name: "Hlo Proto" }} }] }"""
    stat = int_field(1, 1) + field(6, hlo_proto)
    event_md = int_field(1, program_id) + field(2, module_name.encode()) + field(5, stat)
    stat_md = int_field(1, 1) + field(2, b"Hlo Proto")
    plane = (int_field(1, 1) + field(2, b"/host:metadata")
             + field(4, int_field(1, program_id) + field(2, event_md))
             + field(5, int_field(1, 1) + field(2, stat_md)))
    return field(1, plane)


def timed(cmd, env=None):
    """(wall seconds, peak RSS bytes) of a command, from GNU time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
        subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name] + cmd, check=True,
                       stdout=subprocess.DEVNULL, env=env)
        wall, kib = t.read().split()[-2:]
        return float(wall), int(kib) * 1024


XPROF_CHILD = r"""
import json, sys, time
from xprof.convert import raw_to_tool_data as r
path, module = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
r.xspace_to_tool_names([path])
t1 = time.perf_counter()
data, _ = r.xspace_to_tool_data([path], "memory_viewer", {"module_name": module, "memory_space": "0"})
t2 = time.perf_counter()
j = json.loads(data)
print(json.dumps({"extract": t1 - t0, "convert": t2 - t1, "peak_mib": j["peakHeapMib"], "json_bytes": len(data)}))
"""


def main():
    dump = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    pbs = glob.glob(os.path.join(dump, "*.hlo.pb"))
    if len(pbs) != 1:
        sys.exit(f"{dump}: expected one *.hlo.pb, found {len(pbs)}")
    pb = pbs[0]
    base = os.path.basename(pb)[: -len(".hlo.pb")]
    # module_0028.jit_train.cpu_after_optimizations -> (28, jit_train)
    number, rest = base.split(".", 1)
    module = rest.split(".")[0]
    program_id = int(number.split("_")[1])
    work = tempfile.mkdtemp(prefix="oomdoc-compare-")
    text_dir = os.path.join(work, "text")
    os.makedirs(text_dir)
    for f in glob.glob(os.path.join(dump, base + "*")):
        if not f.endswith(".pb"):
            os.symlink(os.path.abspath(f), os.path.join(text_dir, os.path.basename(f)))
    with open(pb, "rb") as f:
        hlo = f.read()
    if len(sys.argv) > 3:
        xspace = os.path.join(work, "host.xplane.pb")
        shutil.copy(sys.argv[3], xspace)
    else:
        xspace = os.path.join(work, "host.xplane.pb")
        with open(xspace, "wb") as f:
            f.write(xspace_with(hlo, module, program_id))
    inputs = {"text dump": (text_dir, "text"), ".hlo.pb": (pb, "proto"), ".xplane.pb": (xspace, "proto")}
    rows = {k: [] for k in list(inputs) + ["XProf"]}
    peaks = {}
    out = os.path.join(work, "report.json")
    for _ in range(rounds):
        for name, (path, source) in inputs.items():
            rows[name].append(timed([OOMDOC, "memory", path, "--module", str(program_id), "--source", source, "-f", "json", "-o", out]))
            with open(out) as f:
                peaks[name] = json.load(f)["modules"][0]["peak_bytes"]
            os.remove(out)
        copy = os.path.join(work, "fresh.xplane.pb")
        shutil.copy(xspace, copy)
        with tempfile.NamedTemporaryFile("r", suffix=".time") as t:
            res = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", t.name, sys.executable, "-c", XPROF_CHILD, copy, f"{module}({program_id})"],
                                 check=True, capture_output=True, text=True)
            kib = int(t.read().split()[-1])
        x = json.loads(res.stdout.strip().splitlines()[-1])
        rows["XProf"].append((x["extract"] + x["convert"], kib * 1024, x))
        os.remove(copy)
    xprof_peak = round(rows["XProf"][0][2]["peak_mib"] * 2**20)
    print(f"module {module} ({program_id}), {len(hlo):,} byte .hlo.pb, {os.path.getsize(xspace):,} byte .xplane.pb, {rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    print("| input | wall (median, range) | peak RSS | peak bytes |")
    print("| --- | --- | --- | --- |")
    for name, runs in rows.items():
        walls = [r[0] for r in runs]
        rss = max(r[1] for r in runs)
        peak = peaks.get(name, xprof_peak)
        extra = ""
        if name == "XProf":
            x = runs[0][2]
            extra = f" (extraction {statistics.median(r[2]['extract'] for r in runs):.2f} s + converter {statistics.median(r[2]['convert'] for r in runs):.2f} s; {x['json_bytes']:,} B of JSON)"
        print(f"| {name} | {statistics.median(walls):.2f} s ({min(walls):.2f}–{max(walls):.2f}){extra} | {rss / 2**20:,.0f} MiB | {peak:,} |")
    for name, peak in peaks.items():
        # XProf's peakHeapMib is a double of MiB: equal to the byte after rounding.
        if abs(peak - xprof_peak) > 1:
            sys.exit(f"{name}: peak {peak} differs from XProf's {xprof_peak}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
