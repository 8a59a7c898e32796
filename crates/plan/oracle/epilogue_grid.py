"""Measure the epilogue (accumulator -> store layout conversion) scratch of the tutorial
matmul for every (target, dtype, BLOCK_M, BLOCK_N, num_warps), with num_stages = 1 and the
smallest legal BLOCK_K, so that shared = max(operand tiles, epilogue).

Not part of `cargo test`. Needs triton==3.9.0 (CPU only) and the shared oracle module
`tri_oracle.py` (default: ../shared/fixtures/triton-oracle from the repository root, or set
TRI_ORACLE_DIR). Usage, from the repository root:
    NPROC=2 $TRITON_VENV/bin/python crates/plan/oracle/epilogue_grid.py > crates/plan/tests/data/epilogue_grid_triton3.9.0.csv
The Rust model (crates/plan/src/triton.rs) reads nothing from here at run time; the CSV is
what its tests compare against.
"""
import csv, itertools, os, re, sys, multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.environ.get("TRI_ORACLE_DIR", os.path.join(HERE, "..", "..", "..", "..", "shared", "fixtures", "triton-oracle"))
sys.path.insert(0, ORACLE)

CAPS = [int(x) for x in os.environ.get("CAPS", "80,90").split(",")]
DTYPES = os.environ.get("DTYPES", "fp16,bf16,fp32,fp8e5,fp8e4nv").split(",")
BLOCKS = [int(x) for x in os.environ.get("BLOCKS", "16,32,64,128,256").split(",")]
WARPS = [int(x) for x in os.environ.get("WARPS", "2,4,8,16").split(",")]
MIN_K = {"fp16": 16, "bf16": 16, "fp32": 8, "fp8e5": 32, "fp8e4nv": 32}
SIZE = {"fp16": 2, "bf16": 2, "fp32": 4, "fp8e5": 1, "fp8e4nv": 1}
MMA_RE = re.compile(r"^#mma\d* = (.*)$", re.M)
BLOCKED_RE = re.compile(r"^#blocked\d* = (.*)$", re.M)


def work(job):
    cap, dt, bm, bn, nw = job
    import tri_oracle
    bk = MIN_K[dt]
    try:
        shared, ttgir = tri_oracle.shared_bytes_fast(cap, dt, bm, bn, bk, 1, nw)
        mma = ";".join(m.split("<")[0] + "<" + m.split("<", 1)[1][:120] for m in MMA_RE.findall(ttgir))
        blocked = " | ".join(BLOCKED_RE.findall(ttgir))
        err = ""
    except Exception as e:  # noqa: BLE001 - record any compiler failure
        shared, mma, blocked = "", "", ""
        err = (type(e).__name__ + ": " + (str(e).strip().splitlines() or [""])[-1])[:160]
    return [f"sm_{cap}", dt, bm, bn, bk, nw, shared, bm * bk * SIZE[dt], bk * bn * SIZE[dt], mma, blocked, err]


if __name__ == "__main__":
    jobs = list(itertools.product(CAPS, DTYPES, BLOCKS, BLOCKS, WARPS))
    w = csv.writer(sys.stdout)
    w.writerow(["target", "dtype", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "shared_bytes",
                "a_bytes", "b_bytes", "mma_layout", "blocked_layouts", "error"])
    with mp.get_context("spawn").Pool(int(os.environ.get("NPROC", "2")), maxtasksperchild=50) as pool:
        for row in pool.imap(work, jobs, chunksize=4):
            w.writerow(row)
            sys.stdout.flush()
