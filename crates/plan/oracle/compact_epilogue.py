"""Turn epilogue_grid.py output into crates/plan/data/triton3.9_epilogue.csv, the table the
Rust model embeds. operand_bytes is what the probe kernel itself keeps in shared memory
(A+B, or the larger of A and B for fp8 on mma-v2 at num_stages = 1); a shared_bytes above it
is the epilogue scratch exactly, otherwise the epilogue is at most shared_bytes.
Usage: python3 compact_epilogue.py epilogue_grid.csv > crates/plan/data/triton3.9_epilogue.csv"""
import csv, sys
w = csv.writer(sys.stdout, lineterminator="\n")
w.writerow(["target", "dtype", "BLOCK_M", "BLOCK_N", "num_warps", "shared_bytes", "operand_bytes"])
for r in csv.DictReader(open(sys.argv[1])):
    if r["error"] or not r["shared_bytes"]:
        continue
    a, b = int(r["a_bytes"]), int(r["b_bytes"])
    mma_v2 = "versionMajor = 2" in r["mma_layout"]
    operands = max(a, b) if (r["dtype"].startswith("fp8") and mma_v2) else a + b
    w.writerow([r["target"], r["dtype"], r["BLOCK_M"], r["BLOCK_N"], r["num_warps"], r["shared_bytes"], operands])
