"""Measure a random sample of the sweep grid (same grid and columns as the shared
sweep.py) that is NOT in the shipped development half, to check the Rust model on configs it
was not developed against. Not part of `cargo test`; needs triton==3.9.0.
Usage, from the repository root:
    N=200 SEED=1 NPROC=2 $TRITON_VENV/bin/python crates/plan/oracle/sample_sweep.py \
        crates/plan/tests/data/shared_mem_sweep_triton3.9.0.dev.csv > crates/plan/tests/data/sample_sweep_triton3.9.0.csv
"""
import csv, itertools, os, random, sys, multiprocessing as mp

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.environ.get("TRI_ORACLE_DIR", os.path.join(HERE, "..", "..", "..", "..", "shared", "fixtures", "triton-oracle"))
sys.path.insert(0, ORACLE)
import sweep  # noqa: E402  (the shared sweep's grid and worker)

if __name__ == "__main__":
    seen = {tuple(r[k] for k in ("target", "dtype", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps"))
            for r in csv.DictReader(open(sys.argv[1]))}
    grid = list(itertools.product([80, 90], sweep.DTYPES, sweep.BLOCKS, sweep.BLOCKS, sweep.BLOCKS, sweep.STAGES, sweep.WARPS))
    todo = [j for j in grid if (f"sm_{j[0]}", j[1], *map(str, j[2:])) not in seen]
    random.Random(int(os.environ.get("SEED", "1"))).shuffle(todo)
    todo = todo[: int(os.environ.get("N", "200"))]
    fields = ["target", "dtype", "BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps",
              "shared_bytes", "ttgir_buffers", "mma", "error", "secs"]
    w = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    with mp.get_context("spawn").Pool(int(os.environ.get("NPROC", "2")), maxtasksperchild=50) as pool:
        for row in pool.imap_unordered(sweep.work, todo, chunksize=2):
            w.writerow(row)
            sys.stdout.flush()
