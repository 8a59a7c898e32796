"""oomdoc.pallas.plan on real pl.BlockSpec objects: the Keras custom-kernel guide's fused matmul,
its keras-io PR 2284 variant (K tiled to 128, index maps never move along K), run in Pallas
interpret mode on CPU next to the coverage note."""

import copy
import json

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402

import oomdoc  # noqa: E402
import oomdoc.pallas  # noqa: E402
from conftest import cli_json  # noqa: E402


def matmul_relu_kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.maximum(jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32), 0.0).astype(o_ref.dtype)


def guide_specs(m, n, k, bm=128, bn=128):
    """The guide's specs: a row panel of A and a column panel of B, whole K, per output tile."""
    return dict(
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, k), lambda i, j: (i, 0)), pl.BlockSpec((k, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
    )


def pr2284_specs(m, n, k, bm=128, bn=128, bk=128):
    """The mistake: K tiled to bk, but the index maps never move along K."""
    return dict(
        grid=(m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j: (i, 0)), pl.BlockSpec((bk, bn), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j: (i, j)),
    )


def _strip(r):
    r = copy.deepcopy(r)
    for key in ("coverage", "spec"):
        r.pop(key)
    for it in r["items"]:
        it.pop("coverage", None)
        it.pop("coverage_exact", None)
    r["notes"] = [n for n in r["notes"] if not n.startswith(("input ", "output "))]
    return r


def _plan(specs, m, n, k, dtype=jnp.float32, **kw):
    a = jax.ShapeDtypeStruct((m, k), dtype)
    b = jax.ShapeDtypeStruct((k, n), dtype)
    return oomdoc.pallas.plan(out_shape=jax.ShapeDtypeStruct((m, n), dtype), args=(a, b), **specs, **kw)


def test_keras_guide_fused_matmul_numbers(tmp_path):
    r = _plan(guide_specs(8192, 8192, 8192), 8192, 8192, 8192, chip="v5e")
    assert r["total_bytes"] == 16_908_288
    assert r["limit_bytes"] == 16_777_216 and r["fits"] is False
    assert r["suggested_vmem_limit_bytes"] == 18_874_368
    assert [c["coverage"] for c in r["coverage"]] == [1.0, 1.0, 1.0]
    r6 = _plan(guide_specs(8192, 8192, 8192), 8192, 8192, 8192, chip="v6e")
    assert r6["fits"] is True and r6["limit_bytes"] == 33_554_432
    # The same numbers as `oomdoc plan pallas` on the spec the objects describe.
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(r["spec"]))
    assert _strip(r) == cli_json("plan", "pallas", str(spec))


def test_pr2284_variant_coverage_note_and_wrong_result():
    r = _plan(pr2284_specs(8192, 8192, 8192), 8192, 8192, 8192, chip="v5e")
    cov = {c["name"]: c for c in r["coverage"]}
    assert cov["in0"]["coverage"] == pytest.approx(1 / 64) and cov["in0"]["exact"]
    assert cov["in1"]["coverage"] == pytest.approx(1 / 64)
    assert cov["out"]["coverage"] == 1.0
    notes = [n for n in r["notes"] if n.startswith("input ")]
    assert len(notes) == 2
    assert "along dim 1" in notes[0] and "1 of 64 blocks" in notes[0] and "98.4%" in notes[0]
    assert "along dim 0" in notes[1]
    assert r["items"][0]["coverage"] == pytest.approx(1 / 64)

    # Both kernels in Pallas interpret mode on CPU, small: the variant's answer is wrong.
    m, n, k = 256, 256, 1024
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (m, k), jnp.float32)
    b = jax.random.normal(kb, (k, n), jnp.float32)
    want = np.maximum(np.asarray(a) @ np.asarray(b), 0)

    def run(specs):
        return np.asarray(pl.pallas_call(matmul_relu_kernel, out_shape=jax.ShapeDtypeStruct((m, n), jnp.float32), interpret=True, **specs)(a, b))

    good = run(guide_specs(m, n, k))
    bad = run(pr2284_specs(m, n, k))
    np.testing.assert_allclose(good, want, rtol=1e-3, atol=1e-2)
    rel = np.abs(bad - want).max() / np.abs(want).max()
    assert rel > 0.5, rel
    small = _plan(pr2284_specs(m, n, k), m, n, k, chip="v5e")
    assert [c["coverage"] for c in small["coverage"]] == [pytest.approx(1 / 8), pytest.approx(1 / 8), 1.0]
    print(f"\nPR 2284 variant: max error {rel:.0%} of the result; oomdoc: {small['notes'][-2]}")


def test_huge_grid_is_sampled_not_enumerated():
    m = n = 1 << 20
    specs = dict(
        grid=(m // 128, n // 128, 64),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j, kk: (i, kk)), pl.BlockSpec((128, 128), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, kk: (i, j)),
    )
    # Bounded by sampling, which the notes state (no wall-clock bound: the machine may be busy).
    r = _plan(specs, m, n, 8192, dtype=jnp.bfloat16, chip="v5e")
    cov = r["coverage"]
    assert all(c["exact"] is False for c in cov)
    assert [c["coverage"] for c in cov] == [1.0, 1.0, 1.0]
    assert any("sampled along each axis" in n for n in r["notes"])


def test_buffered_scratch_and_prefetch_objects():
    from jax.experimental.pallas import tpu as pltpu

    m, k = 1024, 512
    ids = jnp.arange(8, dtype=jnp.int32)[::-1]
    gs = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(8,),
        in_specs=[pl.BlockSpec((128, k), lambda i, ids_ref: (ids_ref[i], 0), pipeline_mode=pl.Buffered(1))],
        out_specs=pl.BlockSpec((128, k), lambda i, ids_ref: (i, 0)),
        scratch_shapes=[pltpu.VMEM((128, k), jnp.float32), pltpu.SemaphoreType.DMA((2,))],
    )
    x = jax.ShapeDtypeStruct((m, k), jnp.float32)
    r = oomdoc.pallas.plan(out_shape=x, grid_spec=gs, args=(ids, x), chip="TPU v5 lite",
                           compiler_params=pltpu.CompilerParams(vmem_limit_bytes=64 << 20))
    items = {i["name"]: i for i in r["items"]}
    assert items["in0"]["buffers"] == 1 and items["out"]["buffers"] == 2
    assert items["scratch0"]["bytes"] == 128 * k * 4
    assert r["limit_bytes"] == 64 << 20
    assert r["smem"]["total_bytes"] >= 32
    assert r["coverage"][0]["coverage"] == 1.0  # the prefetched ids visit every block


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError, match="chip"):
        _plan(guide_specs(1024, 1024, 1024), 1024, 1024, 1024)  # no TPU here: asks for chip=
    with pytest.raises(ValueError, match="in_specs"):
        oomdoc.pallas.plan(out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32), in_specs=[], args=(jnp.zeros((8, 128)),), chip="v5e")
    with pytest.raises(ValueError, match="block"):
        _plan(dict(grid=(8,), in_specs=[pl.BlockSpec((100, 100), lambda i: (i, 0)), pl.BlockSpec((128, 128), lambda i: (0, 0))],
                   out_specs=pl.BlockSpec((128, 128), lambda i: (i, 0))), 1024, 128, 128, chip="v5e")
