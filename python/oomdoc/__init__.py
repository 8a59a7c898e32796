"""oomdoc: why your accelerator ran out of memory, and exactly what to change.

A thin Python layer over the Rust core (``oomdoc._core``): every report is the same JSON
contract as the ``oomdoc`` command line, parsed into plain dicts.

- :func:`diagnose` — a log (text or path) → the ``oomdoc diagnose --format json`` report;
- :func:`explain` — a knowledge-base entry by id or code;
- :func:`install` / :func:`uninstall` / :func:`watch` / ``import oomdoc.auto`` — diagnose
  uncaught memory errors on the spot; :func:`diagnose_exception` for a caught one;
- :mod:`oomdoc.pallas` and :mod:`oomdoc.triton` — kernel memory planners on the objects you
  pass to ``pl.pallas_call`` and ``triton.autotune``.

Importing oomdoc never imports jax, torch, tensorflow or triton.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Union

from . import _core
from ._hook import diagnose_exception, install, installed, live_facts, uninstall, watch

__version__: str = _core.__version__

__all__ = [
    "__version__",
    "diagnose",
    "diagnose_text",
    "explain",
    "explain_list",
    "diagnose_exception",
    "live_facts",
    "install",
    "installed",
    "uninstall",
    "watch",
    "pallas",
    "triton",
]

# A string this long, or with a line break, is a log, never a path.
_MAX_PATH = 4096


# Endings of log files (also compressed): a one-word str ending so names a file.
_LOG_SUFFIXES = (".log", ".txt", ".out", ".err", ".jsonl", ".gz", ".zst", ".xz", ".bz2")


def _is_path(x: Any) -> bool:
    """Whether ``x`` names a file or directory rather than holding log text. A str that
    looks like a path (one word ending in a log file's suffix, or in ``/``) but names
    nothing raises ``FileNotFoundError``, rather than being diagnosed as a one-line log."""
    if isinstance(x, os.PathLike):
        return True
    if isinstance(x, str) and x and "\n" not in x and len(x) < _MAX_PATH:
        try:
            if os.path.exists(x):
                return True
        except (OSError, ValueError):
            return False
        looks_like_path = not any(c.isspace() for c in x) and (x.lower().endswith(_LOG_SUFFIXES) or x.endswith(("/", os.sep)))
        if looks_like_path:
            import errno

            raise FileNotFoundError(errno.ENOENT, "no such file or directory (to diagnose text, pass the log's text itself)", x)
    return False


def diagnose(text_or_path: Union[str, bytes, "os.PathLike[str]"], *, lang: str = "en") -> Dict[str, Any]:
    """Diagnose a log: the ``oomdoc diagnose --format json`` report as a dict.

    ``text_or_path`` is the log text (``str`` or ``bytes``) or the path of a log file or a
    directory of logs (a ``PathLike``, or a one-line ``str`` naming one); files are streamed,
    any size, and a directory is read as ``oomdoc diagnose DIR`` reads it (one merged report).
    A one-word ``str`` that looks like a log's path (``train.log``) but names nothing raises
    ``FileNotFoundError``.
    """
    return json.loads(_run(text_or_path, lang=lang)[0])


def diagnose_text(text_or_path: Union[str, bytes, "os.PathLike[str]"], *, lang: str = "en", color: bool = False, format: str = "text") -> str:
    """The diagnosis rendered as ``oomdoc diagnose`` prints it (``format`` text or markdown)."""
    j, text, md = _run(text_or_path, lang=lang, color=color)
    if format == "text":
        return text
    if format == "markdown":
        return md
    if format == "json":
        return j
    raise ValueError(f"format: {format!r} is not one of text, markdown, json")


def _run(x: Any, *, lang: str = "en", color: bool = False, facts: Union[str, None] = None):
    if isinstance(x, (bytes, bytearray, memoryview)):
        x = bytes(x).decode("utf-8", errors="replace")
    if _is_path(x):
        return _core.diagnose_file(os.fspath(x), lang, facts, color)
    if not isinstance(x, str):
        raise TypeError(f"diagnose() takes log text (str/bytes) or a path, not {type(x).__name__}")
    return _core.diagnose_text(x, lang, facts, color)


def explain(id_or_code: str) -> Dict[str, Any]:
    """A knowledge-base entry (``oomdoc explain KEY --format json``) by id (``tpu.scoped-vmem``),
    vendor code (``E1001``) or code name. Raises ``ValueError`` when there is none."""
    return json.loads(_core.explain(id_or_code))


def explain_list(*, lang: str = "en") -> List[Dict[str, Any]]:
    """Every knowledge-base entry's id, code, kind, platform and title."""
    return json.loads(_core.explain_list(lang))


def __getattr__(name: str) -> Any:
    # The planners load on first use.
    if name in ("pallas", "triton"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'oomdoc' has no attribute {name!r}")
