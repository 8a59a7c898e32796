"""Plan a Pallas TPU kernel's VMEM/SMEM from the objects you pass to ``pl.pallas_call``.

:func:`plan` returns the ``oomdoc plan pallas --format json`` contract (docs/plan.md), computed
by the same Rust model, plus **coverage**: each operand's ``index_map`` is evaluated over the
grid with plain ints, and ``coverage`` is the fraction of the array's elements some grid step
reads (inputs) or writes (outputs). Below 1.0 a note names the dimension and the share never
touched — e.g. a contraction tiled to 128 whose index maps never move along K.

Duck-typed: ``pl.BlockSpec`` (``block_shape``, ``index_map``, ``memory_space``,
``pipeline_mode=pl.Buffered(n)``), ``pltpu`` scratch shapes (``pltpu.VMEM(shape, dtype)``,
semaphores), ``PrefetchScalarGridSpec``, ``jax.ShapeDtypeStruct`` or arrays. Importing this
module does not import jax.
"""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _core

__all__ = ["plan", "EXACT_GRID_LIMIT"]

#: Grids with at most this many steps are evaluated step by step (exact coverage); larger
#: grids are swept along each axis at the grid's corners (coverage then assumes each array
#: dimension's block index depends on the grid axes separably, and says so).
EXACT_GRID_LIMIT = 1 << 18
_SWEEP_AXIS_LIMIT = 1 << 16


def _seq(x: Any) -> List[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    if isinstance(x, dict):
        return list(x.values())
    return [x]


def _dtype_name(dt: Any) -> str:
    name = getattr(dt, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(dt, type):
        return dt.__name__
    return str(dt)


def _space(ms: Any) -> Optional[str]:
    if ms is None:
        return None
    v = getattr(ms, "value", ms)
    s = str(v).lower().rsplit(".", 1)[-1]
    for key in ("semaphore", "smem", "vmem", "any", "hbm"):
        if key in s:
            return {"hbm": "any"}.get(key, key)
    return s


def _block_dims(spec: Any, shape: Sequence[int]) -> Tuple[Optional[List[Any]], List[Optional[int]], bool]:
    """(spec block for the Rust model, block size per dim (None: squeezed → 1), element-indexed?)"""
    bs = getattr(spec, "block_shape", None) if spec is not None else None
    if bs is None:
        return None, [int(d) for d in shape], False
    raw: List[Any] = []
    sizes: List[Optional[int]] = []
    element = False
    for d in bs:
        tname = type(d).__name__
        if d is None or tname == "Squeezed":
            raw.append("squeezed")
            sizes.append(None)
        elif isinstance(d, int):
            raw.append(int(d))
            sizes.append(int(d))
        elif hasattr(d, "block_size"):  # pl.Element / pl.Blocked / pl.BoundedSlice
            raw.append(int(d.block_size))
            sizes.append(int(d.block_size))
            if tname in ("Element", "BoundedSlice"):
                element = True
        else:
            raw.append(int(d))
            sizes.append(int(d))
    return raw, sizes, element


def _grid_points(grid: Sequence[int]) -> Tuple[Any, int, bool]:
    """Grid steps to evaluate: (iterable, count, exact)."""
    total = 1
    for g in grid:
        total *= g
    if total <= EXACT_GRID_LIMIT:
        return itertools.product(*(range(g) for g in grid)), total, True
    pts = set()
    corners = list(itertools.product(*({0, g - 1} for g in grid)))
    for c in corners:
        pts.add(c)
        for a, g in enumerate(grid):
            for v in range(min(g, _SWEEP_AXIS_LIMIT)):
                p = list(c)
                p[a] = v
                pts.add(tuple(p))
            for v in range(max(0, g - 16), g):  # the far edge of axes longer than the sweep
                p = list(c)
                p[a] = v
                pts.add(tuple(p))
    return sorted(pts), len(pts), False


def _coverage(name: str, kind: str, spec: Any, shape: Sequence[int], grid: Sequence[int], prefetch: Sequence[Any]) -> Dict[str, Any]:
    """Evaluate ``spec.index_map`` over the grid and measure which elements are touched."""
    shape = [int(d) for d in shape]
    _, sizes, element = _block_dims(spec, shape)
    index_map = getattr(spec, "index_map", None) if spec is not None else None
    out: Dict[str, Any] = {"coverage": None, "coverage_exact": None, "grid_steps_evaluated": 0, "note": None}
    if spec is None or getattr(spec, "block_shape", None) is None:
        out.update(coverage=1.0, coverage_exact=True)  # the whole array
        return out
    if element:
        out["note"] = f"{kind} {name}: element-indexed block dims (pl.Element): coverage not computed"
        return out
    blocks = [b if b is not None else 1 for b in sizes]
    nblocks = [-(-s // b) for s, b in zip(shape, blocks)]
    points, count, exact = _grid_points(grid)
    visited = set()
    try:
        if index_map is None:
            visited.add(tuple(0 for _ in shape))
            count = 1
        else:
            for p in points:
                idx = index_map(*p, *prefetch)
                if not isinstance(idx, (tuple, list)):
                    idx = (idx,)
                visited.add(tuple(int(i) for i in idx))
    except Exception as e:  # an index map that needs traced values, or prefetch refs we lack
        out["note"] = f"{kind} {name}: index_map could not be evaluated with plain ints ({type(e).__name__}: {e}); coverage not computed"
        return out
    out["grid_steps_evaluated"] = count
    if any(len(v) != len(shape) for v in visited):
        out["note"] = f"{kind} {name}: index_map returns {len(next(iter(visited)))} indices for a rank-{len(shape)} array; coverage not computed"
        return out

    def span(d: int, i: int) -> int:
        lo = i * blocks[d]
        return max(0, min(lo + blocks[d], shape[d]) - max(lo, 0)) if 0 <= i < nblocks[d] else 0

    per_dim = [sorted({v[d] for v in visited}) for d in range(len(shape))]
    dim_frac = [sum(span(d, i) for i in per_dim[d]) / shape[d] if shape[d] else 1.0 for d in range(len(shape))]
    total = 1
    for s in shape:
        total *= s
    if exact:
        covered = 0
        for v in visited:
            n = 1
            for d, i in enumerate(v):
                n *= span(d, i)
            covered += n
        cov = covered / total if total else 1.0
    else:
        cov = 1.0
        for f in dim_frac:
            cov *= f
    out["coverage"] = cov
    out["coverage_exact"] = exact
    out["dims"] = [
        {"dim": d, "size": shape[d], "block": blocks[d], "blocks": nblocks[d], "blocks_touched": len([i for i in per_dim[d] if 0 <= i < nblocks[d]]), "fraction": dim_frac[d]}
        for d in range(len(shape))
    ]
    if cov < 1.0:
        verb = "read" if kind == "input" else "written"
        worst = min(range(len(shape)), key=lambda d: dim_frac[d])
        dd = out["dims"][worst]
        shape_s = "×".join(str(s) for s in shape)
        note = (
            f"{kind} {name} ({shape_s}): grid steps {'read' if kind == 'input' else 'write'} {cov:.4g} of it ({1 - cov:.1%} never {verb}); "
            f"along dim {worst} (size {dd['size']}, block {dd['block']}) the index_map touches {dd['blocks_touched']} of {dd['blocks']} blocks, "
            f"so {1 - dim_frac[worst]:.1%} of that dimension is never {verb}"
        )
        if kind == "input":
            note += " — a kernel that reduces over it (a matmul's K) sums only part of it; check index_map"
        if not exact:
            note += f" (grid of {_prod(grid)} steps: {count} steps sampled along each axis at the grid's corners)"
        out["note"] = note
    elif not exact:
        out["note"] = f"{kind} {name}: grid of {_prod(grid)} steps: coverage from {count} steps sampled along each axis at the grid's corners"
    return out


def _prod(xs: Sequence[int]) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _current_chip() -> str:
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            d = jax.devices()[0]
            if d.platform == "tpu":
                return d.device_kind
        except Exception:
            pass
    raise ValueError("chip=None needs a TPU visible to an imported jax; pass chip= (v4, v5e, v5p, v6e, v7x, or a device_kind like 'TPU v5 lite')")


def _vmem_limit(cp: Any) -> Optional[int]:
    if cp is None:
        return None
    if isinstance(cp, dict):
        if "vmem_limit_bytes" in cp:
            return cp["vmem_limit_bytes"]
        for v in cp.values():
            r = _vmem_limit(v)
            if r is not None:
                return r
        return None
    v = getattr(cp, "vmem_limit_bytes", None)
    return int(v) if v is not None else None


def plan(
    *,
    out_shape: Any,
    grid: Any = (),
    in_specs: Any = None,
    out_specs: Any = None,
    scratch_shapes: Any = (),
    compiler_params: Any = None,
    args: Any,
    chip: Optional[str] = None,
    grid_spec: Any = None,
    names: Optional[Sequence[str]] = None,
) -> Dict[str, Any]:
    """VMEM/SMEM of one ``pl.pallas_call(kernel, out_shape=…, grid=…, in_specs=…, out_specs=…,
    scratch_shapes=…, compiler_params=…)(*args)`` on ``chip`` (None: the current TPU).

    ``grid_spec`` takes a ``pltpu.PrefetchScalarGridSpec`` (its grid, specs and scratch shapes
    win; the first ``num_scalar_prefetch`` args go to SMEM and are passed to the index maps).
    ``names`` names the inputs (default ``in0, in1, …``). Raises ``ValueError`` on bad input.
    """
    nsp = 0
    if grid_spec is not None:
        grid = getattr(grid_spec, "grid", grid)
        in_specs = getattr(grid_spec, "in_specs", in_specs)
        out_specs = getattr(grid_spec, "out_specs", out_specs)
        scratch_shapes = getattr(grid_spec, "scratch_shapes", scratch_shapes)
        nsp = int(getattr(grid_spec, "num_scalar_prefetch", 0) or 0)
    if isinstance(grid, int):
        grid = (grid,)
    grid = tuple(int(g) for g in (grid or ()))
    args_l = _seq(args)
    prefetch, tensors = args_l[:nsp], args_l[nsp:]
    outs = _seq(out_shape)
    ins = _seq(in_specs) if in_specs is not None else [None] * len(tensors)
    outsp = _seq(out_specs) if out_specs is not None else [None] * len(outs)
    if len(ins) != len(tensors):
        raise ValueError(f"in_specs: {len(ins)} specs for {len(tensors)} array args")
    if len(outsp) != len(outs):
        raise ValueError(f"out_specs: {len(outsp)} specs for {len(outs)} outputs")
    chip_s = chip if chip is not None else _current_chip()
    names = list(names) if names is not None else [f"in{i}" for i in range(len(tensors))]

    spec: Dict[str, Any] = {"chip": chip_s, "inputs": [], "outputs": [], "scratch": [], "scalar_prefetch": []}
    if grid:
        spec["grid"] = list(grid)
    vl = _vmem_limit(compiler_params)
    if vl is not None:
        spec["vmem_limit_bytes"] = vl
    cover: List[Tuple[str, Dict[str, Any]]] = []

    def operand(name: str, kind: str, s: Any, arr: Any) -> Dict[str, Any]:
        shape = [int(d) for d in arr.shape]
        raw, _, _ = _block_dims(s, shape)
        o: Dict[str, Any] = {"name": name, "shape": shape, "dtype": _dtype_name(arr.dtype)}
        if raw is not None:
            o["block"] = raw
        sp = _space(getattr(s, "memory_space", None)) if s is not None else None
        if sp is not None:
            o["space"] = sp
        pm = getattr(s, "pipeline_mode", None) if s is not None else None
        bc = getattr(pm, "buffer_count", None)
        if bc is not None:
            o["buffers"] = int(bc)
        c = _coverage(name, kind, s, shape, grid, prefetch)
        if c["coverage"] is not None and all(d["blocks_touched"] <= 1 for d in c.get("dims", [])):
            o["index"] = "constant"
        cover.append((name, c))
        return o

    for i, (s, a) in enumerate(zip(ins, tensors)):
        spec["inputs"].append(operand(names[i] if i < len(names) else f"in{i}", "input", s, a))
    for i, (s, a) in enumerate(zip(outsp, outs)):
        spec["outputs"].append(operand(f"out{i}" if len(outs) > 1 else "out", "output", s, a))
    for i, sc in enumerate(_seq(scratch_shapes)):
        sp = _space(getattr(sc, "memory_space", None)) or ("semaphore" if "semaphore" in type(sc).__name__.lower() else "vmem")
        dt = getattr(sc, "dtype", None)
        shape = getattr(sc, "shape", ())
        item: Dict[str, Any] = {"name": f"scratch{i}", "shape": [int(d) for d in shape] or [1], "space": sp}
        if sp != "semaphore" and dt is not None:
            item["dtype"] = _dtype_name(dt)
        spec["scratch"].append(item)
    for i, a in enumerate(prefetch):
        spec["scalar_prefetch"].append({"name": f"prefetch{i}", "shape": [int(d) for d in getattr(a, "shape", ())] or [1], "dtype": _dtype_name(getattr(a, "dtype", "int32"))})

    text, _ = _core.plan_pallas(json.dumps(spec))
    result = json.loads(text)
    by_name = dict(cover)
    for item in result.get("items", []):
        c = by_name.get(item.get("name"))
        if c is not None and item.get("kind") in ("input", "output"):
            item["coverage"] = c["coverage"]
            item["coverage_exact"] = c["coverage_exact"]
    result["coverage"] = [
        {"name": n, "coverage": c["coverage"], "exact": c["coverage_exact"], "grid_steps_evaluated": c["grid_steps_evaluated"], "dims": c.get("dims", [])}
        for n, c in cover
    ]
    result["notes"] = list(result.get("notes", [])) + [c["note"] for _, c in cover if c["note"]]
    result["spec"] = spec
    return result
