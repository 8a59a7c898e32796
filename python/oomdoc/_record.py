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
from typing import Optional

from . import _arm

# The state the observer writes (shared with `oomdoc run --record-snapshot`'s sitecustomize,
# which is the same file, oomdoc/_arm.py).
_state = _arm._state


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
    _arm.arm(torch, max_entries, directory or os.environ.get("OOMDOC_SNAPSHOT_DIR") or os.getcwd())


_on_oom = _arm._on_oom


def last_snapshot() -> Optional[str]:
    """The path of the snapshot dumped at the last out-of-memory error, if any."""
    path = _state.get("last")
    return path if path and os.path.isfile(path) else None


def recording() -> bool:
    """Whether :func:`record` is active."""
    return bool(_state.get("recording"))
