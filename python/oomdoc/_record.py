"""Record a PyTorch CUDA memory snapshot when the job runs out of memory.

``oomdoc.install(record=True)`` (or :func:`record`) turns on PyTorch's allocation history
with a bounded number of entries and attaches an out-of-memory observer that dumps the
snapshot (``torch.cuda.memory._dump_snapshot``) the moment the allocator fails: after it
released its cache and before the exception unwinds the step, so the snapshot holds what
was live at the failure. The hook's diagnosis then names the call sites live at the OOM
and the snapshot's path. Off by default: recording costs time per allocation and host
memory for the history (not measured here: it needs a GPU; see python/README.md).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

_lock = threading.Lock()
_state: Dict[str, Any] = {}


def record(max_entries: int = 100_000, directory: Optional[str] = None) -> None:
    """Record allocation history (at most ``max_entries`` events, oldest dropped) and dump
    a snapshot to ``directory`` (default: ``$OOMDOC_SNAPSHOT_DIR`` or the working
    directory) at the first out-of-memory error of each device. Needs PyTorch with CUDA."""
    if max_entries <= 0:
        raise ValueError("max_entries must be positive (PyTorch's default is unbounded: oomdoc always bounds it)")
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("oomdoc: record=True needs PyTorch (import torch failed)") from e
    if not torch.cuda.is_available():
        raise RuntimeError("oomdoc: record=True needs a CUDA device (torch.cuda.is_available() is False)")
    with _lock:
        _state["directory"] = directory or os.environ.get("OOMDOC_SNAPSHOT_DIR") or os.getcwd()
        if _state.get("recording"):
            return
        torch.cuda.memory._record_memory_history(max_entries=max_entries)
        torch._C._cuda_attach_out_of_memory_observer(_on_oom)
        _state["recording"] = True


def _on_oom(device: int, alloc: int, device_allocated: int, device_free: int) -> None:
    # Called by the allocator with its lock released, before OutOfMemoryError is raised.
    try:
        import torch

        path = os.path.join(_state.get("directory") or os.getcwd(), f"oomdoc-snapshot-{os.getpid()}-gpu{device}.pickle")
        with _lock:
            if path in _state.setdefault("dumped", set()):
                return
            _state["dumped"].add(path)
        torch.cuda.memory._dump_snapshot(path)
        _state["last"] = path
    except Exception:  # an observer must never turn the OOM into another error
        pass


def last_snapshot() -> Optional[str]:
    """The path of the snapshot dumped at the last out-of-memory error, if any."""
    path = _state.get("last")
    return path if path and os.path.isfile(path) else None


def recording() -> bool:
    """Whether :func:`record` is active."""
    return bool(_state.get("recording"))
