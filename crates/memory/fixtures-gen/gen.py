"""Generate oomdoc-memory fixtures: XLA dumps of the programs in programs.py (JAX on CPU),
`memory_analysis()` of every compiled module, and XProf's own Memory Viewer output.

    python3 -m venv /tmp/jaxenv && /tmp/jaxenv/bin/pip install "jax[cpu]==0.10.2" xprof
    /tmp/jaxenv/bin/python crates/memory/fixtures-gen/gen.py OUT_DIR [program ...]

Writes OUT_DIR/<program>/ with the dump files oomdoc reads (buffer assignment, values,
live range, optimized HLO text, .hlo.pb) and OUT_DIR/<program>/golden/ with, per module,
`memory_analysis.<module>.json` and `xprof_memory_viewer.<module>.json`. Copy small
results into crates/memory/tests/fixtures/. Each program runs in its own process because
XLA_FLAGS must be set before jax is imported."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# The jitted modules each program compiles; only these are dumped.
MODULES = {
    "scan_train_step": ["jit_scan_train_step"],
    "remat_train_step": ["jit_remat_train_step"],
    "multi_module": ["jit_multi_encode", "jit_multi_decode"],
    "unrolled_train_step": ["jit_unrolled_train_step"],
    "cnn_train_step": ["jit_cnn_train_step"],
    "spmd_train_step": ["jit_spmd_train_step"],
    "remat_policy_train_step": ["jit_remat_policy_train_step"],
    "while_tuple_step": ["jit_while_tuple_step"],
    "shardmap_step": ["jit_shardmap_step"],
    "scan_remat_step": ["jit_scan_remat_step"],
    "unrolled48_train_step": ["jit_unrolled_train_step"],
    "kv_decode_step": ["jit_kv_decode_step"],
    "batchnorm_cnn_step": ["jit_batchnorm_cnn_step"],
}
# Extra XLA flags per program (SPMD over fake CPU devices).
EXTRA_FLAGS = {"spmd_train_step": "--xla_force_host_platform_device_count=8",
               "shardmap_step": "--xla_force_host_platform_device_count=8"}
KEEP = ("-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt",
        "_after_optimizations.txt", "_after_optimizations.hlo.pb")


def child(out, name):
    dump = os.path.join(out, "xla_dump")
    os.environ["XLA_FLAGS"] = (f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_as_proto "
                               f"--xla_dump_hlo_module_re=^({'|'.join(MODULES[name])})$ {EXTRA_FLAGS.get(name, '')}")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, HERE)
    import jax
    import programs
    prof = os.path.join(out, "prof")
    jax.profiler.start_trace(prof)
    records = []
    try:
        for fn, args in programs.PROGRAMS[name]():
            compiled = fn.lower(*args).compile()
            jax.block_until_ready(compiled(*args))
            ma = compiled.memory_analysis()
            rec = {k: getattr(ma, k) for k in dir(ma) if k.endswith("_in_bytes") and isinstance(getattr(ma, k), int)}
            rec["module"] = compiled.as_text().split("\n", 1)[0].split(",")[0].split()[-1]
            records.append(rec)
    finally:
        jax.profiler.stop_trace()
    with open(os.path.join(out, "memory_analysis_list.json"), "w") as f:
        json.dump({"jax": jax.__version__, "modules": records}, f, indent=1)


def collect(out, name):
    """Keep the files oomdoc reads; pair each module with memory_analysis and XProf's output."""
    from xprof.convert import raw_to_tool_data as r
    dest = os.path.join(out, "fixture")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "golden"))
    for f in sorted(os.listdir(os.path.join(out, "xla_dump"))):
        if f.endswith(KEEP) and "after_optimizations" in f:
            shutil.copy(os.path.join(out, "xla_dump", f), dest)
    records = json.load(open(os.path.join(out, "memory_analysis_list.json")))["modules"]
    prefixes = sorted({m.group(0) for f in os.listdir(dest)
                       for m in [re.match(r"module_\d+\.[^.]+", f)] if m})
    # memory_analysis() records are in compile order = module id order, per module name.
    for prefix in prefixes:
        module = prefix.split(".", 1)[1]
        ma = next(r for r in records if r["module"] == module)
        records.remove(ma)
        with open(os.path.join(dest, "golden", f"memory_analysis.{prefix}.json"), "w") as fh:
            json.dump(ma, fh, indent=1, sort_keys=True)
    xplanes = glob.glob(os.path.join(out, "prof", "plugins", "profile", "*", "*.xplane.pb"))
    r.xspace_to_tool_names(xplanes)  # extracts <module>(<id>).hlo_proto.pb, which memory_viewer reads
    for prefix in prefixes:
        pid = int(prefix.split(".")[0][len("module_"):])
        module = prefix.split(".", 1)[1]
        data, _ = r.xspace_to_tool_data(xplanes, "memory_viewer",
                                        {"module_name": f"{module}({pid})", "memory_space": "0"})
        if data:
            with open(os.path.join(dest, "golden", f"xprof_memory_viewer.{prefix}.json"), "wb") as fh:
                fh.write(data if isinstance(data, bytes) else data.encode())
        else:
            print(f"{name}: xprof returned nothing for {module}({pid})", file=sys.stderr)
    print(dest)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        root = os.path.abspath(sys.argv[1])
        names = sys.argv[2:] or ["scan_train_step", "remat_train_step", "multi_module"]
        for name in names:
            out = os.path.join(root, name)
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            subprocess.run([sys.executable, __file__, "--child", out, name], check=True)
            collect(out, name)
