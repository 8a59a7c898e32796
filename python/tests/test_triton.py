"""oomdoc.triton.pruner against `oomdoc plan triton --configs` on the same configs.

Real Triton check: runs only when triton is importable (it is not installed in the test venv:
without a GPU it cannot compile or autotune); the pruner is tested on objects shaped like
triton.Config (kwargs, num_warps, num_stages), which is all early_config_prune receives."""

import json
import warnings

import pytest

import oomdoc.triton as ot
from conftest import cli_json


class Config:
    """Shaped like triton.Config."""

    def __init__(self, kwargs, num_warps=4, num_stages=3):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages

    def __repr__(self):
        return f"Config({self.kwargs}, num_warps={self.num_warps}, num_stages={self.num_stages})"


def C(bm, bn, bk, stages, warps):
    return Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}, num_warps=warps, num_stages=stages)


# The autotune list of Triton's matmul tutorial (fp16 and fp8 configs), BLOCK_SIZE_* keys.
CONFIGS = [
    C(128, 256, 64, 3, 8), C(64, 256, 32, 4, 4), C(128, 128, 32, 4, 4), C(128, 64, 32, 4, 4),
    C(64, 128, 32, 4, 4), C(128, 32, 32, 4, 4), C(64, 32, 32, 5, 2), C(32, 64, 32, 5, 2),
    C(128, 256, 128, 3, 8), C(256, 128, 128, 3, 8), C(256, 64, 128, 4, 4), C(64, 256, 128, 4, 4),
    C(128, 128, 128, 4, 4), C(128, 64, 64, 4, 4), C(64, 128, 64, 4, 4), C(128, 32, 64, 4, 4),
]
KEYS = dict(block_m="BLOCK_SIZE_M", block_n="BLOCK_SIZE_N", block_k="BLOCK_SIZE_K")


def _cli_fitting(arch, dtype, configs, tmp_path):
    f = tmp_path / "configs.json"
    f.write_text(json.dumps([{"kwargs": c.kwargs, "num_stages": c.num_stages, "num_warps": c.num_warps} for c in configs]))
    return cli_json("plan", "triton", "--arch", arch, "--dtype", dtype, "--configs", str(f))


@pytest.mark.parametrize("arch", ["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_pruner_keeps_what_the_cli_keeps(arch, dtype, tmp_path):
    kept = ot.pruner(arch=arch, dtype=dtype, **KEYS)(CONFIGS, {})
    cli = _cli_fitting(arch, dtype, CONFIGS, tmp_path)
    want = [(f["config"]["BLOCK_M"], f["config"]["BLOCK_N"], f["config"]["BLOCK_K"], f["config"]["num_stages"], f["config"]["num_warps"]) for f in cli["fitting"]]
    got = [(c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_stages, c.num_warps) for c in kept]
    if want:
        assert got == want
        assert all(k is c for k, c in zip(kept, [c for c in CONFIGS if (c.kwargs["BLOCK_SIZE_M"], c.kwargs["BLOCK_SIZE_N"], c.kwargs["BLOCK_SIZE_K"], c.num_stages, c.num_warps) in want]))
    else:
        assert len(kept) == 1
    # the same objects come back, in their order
    assert all(any(k is c for c in CONFIGS) for k in kept)


def test_sm86_drops_the_big_tiles(tmp_path):
    verdicts = ot.judge(CONFIGS, arch="sm_86", **KEYS)
    big = verdicts[8]  # 128x256x128, 3 stages, fp16
    assert big["fits"] is False and big["shared_bytes"] > 101376
    assert len(ot.pruner(arch="sm_86", **KEYS)(CONFIGS, {})) < len(CONFIGS)


def test_never_empty_keeps_the_smallest_with_a_warning():
    too_big = [C(256, 256, 128, 5, 8), C(256, 256, 64, 4, 8), C(256, 128, 128, 5, 8)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        kept = ot.pruner(arch="sm_86", **KEYS)(too_big, {})
    assert kept == [too_big[1]]
    assert w and "none of the 3 Triton configs fits" in str(w[0].message)
    assert ot.pruner(arch="sm_86", **KEYS)([], {}) == []


def test_dicts_default_keys_and_errors():
    cfgs = [{"kwargs": {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, "num_stages": 3, "num_warps": 4}]
    assert ot.pruner(arch="sm_80", dtype="float16")(cfgs, {}) == cfgs
    with pytest.raises(ValueError, match="BLOCK_M"):
        ot.pruner(arch="sm_80")(CONFIGS, {})
    with pytest.raises(ValueError, match="unknown GPU arch"):
        ot.pruner(arch="sm_999", **KEYS)(CONFIGS, {})
    with pytest.raises(ValueError, match="arch="):
        ot.pruner(**KEYS)(CONFIGS, {})  # no GPU visible and no arch


def test_real_triton_config():
    triton = pytest.importorskip("triton", reason="real triton.Config check skipped: Triton is not installed (no GPU on this machine)")
    cfgs = [triton.Config(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages) for c in CONFIGS]
    kept = ot.pruner(arch="sm_86", **KEYS)(cfgs, {})
    assert 0 < len(kept) < len(cfgs)
