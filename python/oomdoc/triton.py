"""Prune Triton autotune configs whose shared memory does not fit, before compiling them.

>>> @triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
...                  prune_configs_by={"early_config_prune": oomdoc.triton.pruner()})
... @triton.jit
... def matmul_kernel(...): ...

The model is ``oomdoc plan triton --configs`` (crates/plan/src/triton.rs): the tutorial
matmul's ``metadata.shared`` by Triton version and target. Importing this module does not
import triton or torch.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _core

__all__ = ["pruner", "judge", "current_arch"]

_DTYPES = {
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "bfloat16": "bf16", "bf16": "bf16",
    "float32": "fp32", "fp32": "fp32", "tf32": "fp32",
    "float8_e4m3fn": "fp8e4nv", "fp8e4nv": "fp8e4nv",
    "float8_e5m2": "fp8e5", "fp8e5": "fp8e5",
}


def _dtype(d: Any) -> str:
    s = getattr(d, "name", None) or str(d)
    s = s.rsplit(".", 1)[-1]  # torch.float16 → float16
    return _DTYPES.get(s.lower(), s)


def current_arch() -> str:
    """``sm_XY`` of the current CUDA device, from torch or triton if already imported."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                major, minor = torch.cuda.get_device_capability()
                return f"sm_{major}{minor}"
        except Exception:
            pass
    triton = sys.modules.get("triton")
    if triton is not None:
        try:
            target = triton.runtime.driver.active.get_current_target()
            if getattr(target, "backend", "cuda") == "cuda":
                return f"sm_{int(target.arch)}"
        except Exception:
            pass
    raise ValueError("arch=None needs a CUDA device visible to an imported torch or triton; pass arch= (sm_80, sm_86, sm_90, …)")


def _triton_version() -> str:
    triton = sys.modules.get("triton")
    v = getattr(triton, "__version__", None) if triton is not None else None
    if isinstance(v, str):
        parts = v.split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return f"{parts[0]}.{parts[1]}"
    return "3.9"


def _as_dict(cfg: Any, keys: Sequence[str]) -> Dict[str, Any]:
    kw = getattr(cfg, "kwargs", None)
    if kw is None and isinstance(cfg, dict):
        kw = cfg.get("kwargs", cfg)
    if kw is None:
        raise ValueError(f"config {cfg!r} has no kwargs")
    canon = {}
    for want, key in zip(("BLOCK_M", "BLOCK_N", "BLOCK_K"), keys):
        if key not in kw:
            raise ValueError(f"config {cfg!r} has no {key!r} (pass block_m=/block_n=/block_k= to name the kernel's tile parameters)")
        canon[want] = int(kw[key])
    get = (lambda k, d: cfg.get(k, d)) if isinstance(cfg, dict) else (lambda k, d: getattr(cfg, k, d))
    ns, nw = get("num_stages", None), get("num_warps", None)
    return {"kwargs": canon, "num_stages": int(ns) if ns is not None else 3, "num_warps": int(nw) if nw is not None else 4}


def judge(configs: Sequence[Any], *, block_m: str = "BLOCK_M", block_n: str = "BLOCK_N", block_k: str = "BLOCK_K",
          dtype: Any = "fp16", arch: Optional[str] = None, triton_version: Optional[str] = None) -> List[Dict[str, Any]]:
    """Each config's verdict (``config``, ``shared_bytes``, ``exact``, ``fits``, ``reason``), in order."""
    cl = list(configs)
    data = [_as_dict(c, (block_m, block_n, block_k)) for c in cl]
    a = arch if arch is not None else current_arch()
    return json.loads(_core.judge_triton_configs(a, json.dumps(data), _dtype(dtype), triton_version or _triton_version()))


def pruner(*, block_m: str = "BLOCK_M", block_n: str = "BLOCK_N", block_k: str = "BLOCK_K", dtype: Any = "fp16",
           arch: Optional[str] = None, triton_version: Optional[str] = None) -> Callable[..., List[Any]]:
    """An ``early_config_prune`` function: keeps the configs whose predicted shared memory fits
    the arch's opt-in limit, in their order; when none fits, keeps the smallest with a warning
    (never an empty list). ``arch=None`` reads the current device when pruning."""

    def prune(configs: Sequence[Any], named_args: Any = None, **kwargs: Any) -> List[Any]:
        cl = list(configs)
        if not cl:
            return cl
        verdicts = judge(cl, block_m=block_m, block_n=block_n, block_k=block_k, dtype=dtype, arch=arch, triton_version=triton_version)
        kept = [c for c, v in zip(cl, verdicts) if v["fits"]]
        if kept:
            return kept
        sized = [(v["shared_bytes"], i) for i, v in enumerate(verdicts) if v["shared_bytes"] is not None]
        best = min(sized)[1] if sized else 0
        v = verdicts[best]
        warnings.warn(
            f"oomdoc: none of the {len(cl)} Triton configs fits shared memory ({v.get('reason')}); keeping the smallest",
            RuntimeWarning,
            stacklevel=2,
        )
        return [cl[best]]

    prune.__name__ = "oomdoc_early_config_prune"
    return prune
