"""Diagnose exceptions: live facts from the frameworks already imported, the uncaught-exception
hooks (``sys``, ``threading``, IPython) and ``watch()``."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import traceback
from typing import Any, Dict, List, Optional

from . import _core, _record

# Exception classes that are memory errors by name, whatever their text says.
_MEMORY_TYPES = {
    "MemoryError",  # builtins
    "OutOfMemoryError",  # torch.OutOfMemoryError, torch.cuda.OutOfMemoryError
    "ResourceExhaustedError",  # tensorflow.errors.ResourceExhaustedError
    "OutOfResources",  # triton.runtime.errors.OutOfResources
}
_ENV_EXACT = (
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "XLA_FLAGS",
    "LIBTPU_INIT_ARGS",
    "TF_GPU_ALLOCATOR",
    "TF_FORCE_GPU_ALLOW_GROWTH",
)
_ENV_PREFIXES = ("XLA_PYTHON_CLIENT_",)


def _chain(exc: BaseException) -> List[BaseException]:
    """The exception and its causes/contexts, outermost last as Python prints them."""
    out: List[BaseException] = []
    seen = set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        out.append(e)
        e = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)
    return out[::-1]


def _qualname(e: BaseException) -> str:
    t = type(e)
    mod = t.__module__
    return t.__qualname__ if mod in ("builtins", "__main__") else f"{mod}.{t.__qualname__}"


def _is_memory_type(exc: BaseException) -> bool:
    for e in _chain(exc):
        for t in type(e).__mro__:
            if t.__name__ in _MEMORY_TYPES:
                return True
        if "RESOURCE_EXHAUSTED" in str(e):  # jaxlib XlaRuntimeError and gRPC status text
            return True
    return False


def _env() -> Dict[str, str]:
    return {k: v for k, v in sorted(os.environ.items()) if k in _ENV_EXACT or k.startswith(_ENV_PREFIXES)}


def live_facts() -> Dict[str, Any]:
    """Facts read now from the frameworks already imported (none is imported here)."""
    facts: Dict[str, Any] = {"python": sys.version.split()[0], "env": _env(), "frameworks": {}}
    fw = facts["frameworks"]
    torch = sys.modules.get("torch")
    if torch is not None:
        t: Dict[str, Any] = {"version": getattr(torch, "__version__", None)}
        with contextlib.suppress(Exception):
            cuda = torch.cuda
            # Never initialize CUDA from an exception hook: only read a device already in use.
            if cuda.is_available() and cuda.is_initialized():
                dev = cuda.current_device()
                t["device"] = dev
                t["device_name"] = cuda.get_device_name(dev)
                t["capability"] = list(cuda.get_device_capability(dev))
                free, total = cuda.mem_get_info(dev)
                t["free_bytes"], t["total_bytes"] = int(free), int(total)
                st = cuda.memory_stats(dev)
                for k, name in (
                    ("allocated_bytes.all.current", "allocated_bytes"),
                    ("reserved_bytes.all.current", "reserved_bytes"),
                    ("inactive_split_bytes.all.current", "inactive_split_bytes"),
                    ("allocated_bytes.all.peak", "peak_allocated_bytes"),
                    ("num_alloc_retries", "num_alloc_retries"),
                    ("num_ooms", "num_ooms"),
                ):
                    if k in st:
                        t[name] = int(st[k])
                if getattr(torch.version, "hip", None):
                    t["hip"] = torch.version.hip
                elif getattr(torch.version, "cuda", None):
                    t["cuda"] = torch.version.cuda
        fw["torch"] = t
    jax = sys.modules.get("jax")
    if jax is not None:
        j: Dict[str, Any] = {"version": getattr(jax, "__version__", None)}
        jaxlib = sys.modules.get("jaxlib")
        if jaxlib is not None:
            j["jaxlib"] = getattr(jaxlib, "__version__", None)
        with contextlib.suppress(Exception):
            j["backend"] = jax.default_backend()
            d = jax.devices()[0]
            j["platform"] = d.platform
            j["device_kind"] = d.device_kind
            j["device_count"] = jax.device_count()
            ms = d.memory_stats()
            if ms:
                j["memory_stats"] = {k: int(v) for k, v in ms.items() if isinstance(v, int)}
        fw["jax"] = j
    for name in ("tensorflow", "triton", "vllm", "transformers"):
        m = sys.modules.get(name)
        if m is not None:
            fw[name] = {"version": getattr(m, "__version__", None)}
    return facts


def _core_facts(f: Dict[str, Any]) -> str:
    """The part of the facts the Rust diagnoser uses (``oomdoc_diagnose::live::LiveFacts``)."""
    out: Dict[str, Any] = {"env": f.get("env", {})}
    t = f.get("frameworks", {}).get("torch", {})
    j = f.get("frameworks", {}).get("jax", {})
    if j.get("platform") == "tpu" and j.get("device_kind"):
        out["tpu_device_kind"] = j["device_kind"]
    total = t.get("total_bytes") or j.get("memory_stats", {}).get("bytes_limit")
    if total:
        out["device_total_bytes"] = int(total)
    return json.dumps(out)


def _exception_text(exc: BaseException) -> str:
    """What the diagnoser reads: each exception of the chain as Python prints its last line(s)."""
    parts = []
    for e in _chain(exc):
        parts.append("".join(traceback.format_exception_only(type(e), e)))
    return "\n".join(parts)


def _diagnose(exc: BaseException, *, lang: str = "en", color: bool = False):
    facts = live_facts()
    snapshot = _record.last_snapshot()
    try:
        j, text, md = _core.diagnose_text(_exception_text(exc), lang, _core_facts(facts), color, snapshot)
    except (OSError, ValueError):
        # An unreadable snapshot never costs the diagnosis of the message itself.
        snapshot = None
        j, text, md = _core.diagnose_text(_exception_text(exc), lang, _core_facts(facts), color)
    if snapshot:
        text += f"  snapshot: {snapshot} (oomdoc memory {snapshot})\n"
    report = json.loads(j)
    if snapshot:
        report["snapshot"] = snapshot
    report["exception"] = {
        "type": _qualname(exc),
        "message": str(exc),
        "chain": [{"type": _qualname(e), "message": str(e)} for e in _chain(exc)],
        "memory_error": _is_memory_type(exc),
    }
    report["facts"] = facts
    return report, text, md


def diagnose_exception(exc: BaseException, *, lang: str = "en") -> Dict[str, Any]:
    """Diagnose a caught exception: the diagnose report, plus ``exception`` (type, message,
    chained causes) and ``facts`` (live facts from the frameworks already imported)."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"diagnose_exception() takes an exception, not {type(exc).__name__}")
    return _diagnose(exc, lang=lang)[0]


def _color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    try:
        return bool(stream.isatty())
    except Exception:
        return False


def _has_oom(report: Dict[str, Any]) -> bool:
    return any(f.get("kind") == "oom" for f in report.get("findings", []))


def _report_exception(exc: Optional[BaseException], stream: Any = None) -> None:
    """Print the diagnosis of ``exc`` after its traceback, when it is a memory error."""
    if exc is None or getattr(exc, "_oomdoc_reported", False):
        return
    stream = stream if stream is not None else sys.stderr
    try:
        report, text, _ = _diagnose(exc, color=_color(stream))
        memory = report["exception"]["memory_error"]
        if not (_has_oom(report) or memory):
            return
        with contextlib.suppress(Exception):
            exc._oomdoc_reported = True  # type: ignore[attr-defined]
        stream.write("\n" + (text if report.get("findings") else _no_finding_text(report)))
        stream.flush()
    except Exception as e:  # the hook must never hide the original error
        with contextlib.suppress(Exception):
            stream.write(f"\noomdoc: could not diagnose this exception: {e}\n")


def _no_finding_text(report: Dict[str, Any]) -> str:
    ex = report["exception"]
    lines = [f"oomdoc: {ex['type']} is a memory error, but no knowledge-base family recognizes its message yet."]
    t = report["facts"]["frameworks"].get("torch", {})
    if "total_bytes" in t:
        lines.append(f"  device {t.get('device_name')}: {t['free_bytes']} of {t['total_bytes']} bytes free; "
                     f"PyTorch allocated {t.get('allocated_bytes')}, reserved {t.get('reserved_bytes')}")
    j = report["facts"]["frameworks"].get("jax", {})
    if j:
        ms = j.get("memory_stats") or {}
        mem = f", {ms['bytes_in_use']} of {ms['bytes_limit']} bytes in use" if "bytes_limit" in ms and "bytes_in_use" in ms else ""
        lines.append(f"  JAX {j.get('version')}: backend {j.get('backend')}, device {j.get('device_kind')}{mem}")
    lines.append(f"  message: {ex['message'].splitlines()[0][:300] if ex['message'] else '(empty)'}")
    lines.append("  run `oomdoc explain --list` for the failure families")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- hooks ---

_state: Dict[str, Any] = {}
_lock = threading.Lock()


def _excepthook(etype, value, tb):  # type: ignore[no-untyped-def]
    prev = _state.get("sys", sys.__excepthook__)
    prev(etype, value, tb)
    _report_exception(value)


def _threading_hook(args):  # type: ignore[no-untyped-def]
    prev = _state.get("threading", threading.__excepthook__)
    prev(args)
    if args.exc_type is not SystemExit:
        _report_exception(args.exc_value)


def _ipython_handler(shell, etype, evalue, tb, tb_offset=None):  # type: ignore[no-untyped-def]
    shell.showtraceback((etype, evalue, tb), tb_offset=tb_offset)
    try:
        report, text, md = _diagnose(evalue)
    except Exception:
        return None
    if not (_has_oom(report) or report["exception"]["memory_error"]):
        return None
    body = md if report.get("findings") else _no_finding_text(report)
    try:
        from IPython.display import display

        import html

        display({"text/plain": text if report.get("findings") else body, "text/markdown": body,
                 "text/html": "<div class='oomdoc'><pre style='white-space:pre-wrap'>" + html.escape(text if report.get("findings") else body) + "</pre></div>"},
                raw=True)
    except Exception:
        sys.stderr.write("\n" + text)
    return None


def _ipython_shell():  # type: ignore[no-untyped-def]
    if "IPython" not in sys.modules:
        return None
    with contextlib.suppress(Exception):
        from IPython import get_ipython

        return get_ipython()
    return None


def install(*, record: bool = False, max_entries: int = 100_000, snapshot_dir: Optional[str] = None) -> None:
    """Diagnose uncaught memory errors: after Python's traceback, the diagnosis on stderr
    (colour on a terminal, ``NO_COLOR`` respected); exit status unchanged. Hooks
    ``sys.excepthook``, ``threading.excepthook`` and, under IPython, the shell's custom
    exception handler. Calling it again does nothing.

    ``record=True`` (off by default; needs PyTorch with CUDA) also records PyTorch's
    allocation history (at most ``max_entries`` events) and dumps a memory snapshot to
    ``snapshot_dir`` when a device runs out of memory; the diagnosis then lists the call
    sites that held the memory at the failure (:mod:`oomdoc._record`)."""
    if record:
        _record.record(max_entries=max_entries, directory=snapshot_dir)
    with _lock:
        if _state.get("installed"):
            return
        _state["sys"] = sys.excepthook
        sys.excepthook = _excepthook
        _state["threading"] = threading.excepthook
        threading.excepthook = _threading_hook
        shell = _ipython_shell()
        if shell is not None:
            _state["ipython"] = (shell, getattr(shell, "custom_exceptions", ()), getattr(shell, "CustomTB", None))
            shell.set_custom_exc((BaseException,), _ipython_handler)
        _state["installed"] = True


def uninstall() -> None:
    """Undo :func:`install` (the hooks found at install time come back)."""
    with _lock:
        if not _state.get("installed"):
            return
        if sys.excepthook is _excepthook:
            sys.excepthook = _state["sys"]
        if threading.excepthook is _threading_hook:
            threading.excepthook = _state["threading"]
        ip = _state.pop("ipython", None)
        if ip is not None:
            shell, excs, custom = ip
            shell.custom_exceptions = excs
            if custom is not None:
                shell.CustomTB = custom
        _state.clear()


def installed() -> bool:
    """Whether the hook is installed."""
    return bool(_state.get("installed"))


class watch(contextlib.ContextDecorator):
    """Context manager and decorator: a memory error raised inside is diagnosed on stderr
    (or passed to ``callback(report)``) and re-raised unchanged.

    >>> with oomdoc.watch():
    ...     step()
    """

    def __init__(self, callback: Any = None, *, stream: Any = None) -> None:
        self.callback = callback
        self.stream = stream

    def __enter__(self) -> "watch":
        return self

    def __exit__(self, etype, exc, tb) -> bool:  # type: ignore[no-untyped-def]
        if exc is None or isinstance(exc, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            return False
        if self.callback is not None:
            with contextlib.suppress(Exception):
                report = diagnose_exception(exc)
                if _has_oom(report) or report["exception"]["memory_error"]:
                    self.callback(report)
        else:
            _report_exception(exc, self.stream)
        return False  # re-raise
