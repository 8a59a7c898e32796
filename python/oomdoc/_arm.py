"""Arm PyTorch's CUDA allocation recording and dump a snapshot at each device's first OOM.

One file, two uses (standard library only, so the second works without oomdoc installed):

- imported as ``oomdoc._arm`` by :mod:`oomdoc._record` (``oomdoc.install(record=True)``);
- written as ``sitecustomize.py`` by ``oomdoc run --record-snapshot`` (the CLI embeds this
  very file), where it arms recording when the program imports ``torch``, if
  ``OOMDOC_RECORD_SNAPSHOT_DIR`` is set, and runs the user's own ``sitecustomize`` too.

As ``sitecustomize`` it never raises into the program: without torch or CUDA it does
nothing, and says why in one stderr line only when ``OOMDOC_RECORD_VERBOSE`` is set.
"""

import os
import sys
import threading

_lock = threading.Lock()
_state = {}


def arm(torch, max_entries, directory):
    """Record allocation history (at most ``max_entries`` events, oldest dropped) and attach
    an out-of-memory observer that dumps ``oomdoc-snapshot-<pid>-gpu<N>.pickle`` into
    ``directory`` at the first OOM of each device. A second call only moves the directory."""
    with _lock:
        _state["directory"] = directory
        if _state.get("recording"):
            return
        torch.cuda.memory._record_memory_history(max_entries=max_entries)
        torch._C._cuda_attach_out_of_memory_observer(_on_oom)
        _state["recording"] = True


def _on_oom(device, alloc, device_allocated, device_free):
    # Called by the allocator with its lock released, after it released its cache and
    # before OutOfMemoryError is raised: the snapshot holds what was live at the failure.
    try:
        import torch

        name = "oomdoc-snapshot-%d-gpu%d.pickle" % (os.getpid(), device)
        path = os.path.join(_state.get("directory") or os.getcwd(), name)
        with _lock:
            dumped = _state.setdefault("dumped", set())
            if path in dumped:
                return
            dumped.add(path)
        torch.cuda.memory._dump_snapshot(path)
        _state["last"] = path
    except Exception:  # an observer must never turn the OOM into another error
        pass


def _say(text):
    if os.environ.get("OOMDOC_RECORD_VERBOSE"):
        try:
            sys.stderr.write("oomdoc: %s\n" % text)
        except Exception:
            pass


def _arm_from_env(torch):
    """Arm from ``OOMDOC_RECORD_SNAPSHOT_DIR`` and ``OOMDOC_RECORD_MAX_ENTRIES``; never raises."""
    try:
        directory = os.environ.get("OOMDOC_RECORD_SNAPSHOT_DIR")
        max_entries = int(os.environ.get("OOMDOC_RECORD_MAX_ENTRIES") or 100000)
        if max_entries <= 0:
            raise ValueError("OOMDOC_RECORD_MAX_ENTRIES must be positive")
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        arm(torch, max_entries, directory)
        _say("recording CUDA memory history (max_entries=%d) into %s" % (max_entries, directory))
    except Exception as e:
        _say("not recording CUDA memory: %s" % (e,))


class _ArmWhenTorchLoads:
    """A meta-path finder that lets the real finders load ``torch``, then arms recording."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            import importlib.util

            spec = importlib.util.find_spec("torch")
            if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
                return spec
            run_module = spec.loader.exec_module

            def exec_and_arm(module):
                run_module(module)
                _arm_from_env(module)

            spec.loader.exec_module = exec_and_arm
            return spec
        except Exception as e:
            _say("not recording CUDA memory: %s" % (e,))
            return None


def _chain_user_sitecustomize():
    # Python imports only the first sitecustomize on sys.path (this one): run the user's
    # own, further down the path, as Python would have without oomdoc. Its errors are its
    # own and reach site.py as they would have.
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _site_main():
    if os.environ.get("OOMDOC_RECORD_SNAPSHOT_DIR"):
        if "torch" in sys.modules:
            _arm_from_env(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, _ArmWhenTorchLoads())
    _chain_user_sitecustomize()


if __name__ == "sitecustomize":
    _site_main()
