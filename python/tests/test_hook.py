"""install() / watch() / diagnose_exception(): real JAX out-of-memory on CPU, live facts."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import types

import pytest

import oomdoc
from oomdoc import _hook
from test_api import TORCH_OOM

JAX_OOM_SCRIPT = textwrap.dedent(
    """
    import resource, sys
    # Cap the address space so the CPU allocator fails the way it does when RAM runs out.
    limit = 6 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if sys.argv[1] == "hook":
        import oomdoc
        oomdoc.install()
        oomdoc.install()  # idempotent
    elif sys.argv[1] == "auto":
        import oomdoc.auto
    import jax.numpy as jnp
    x = jnp.ones((1 << 38,), jnp.float32)  # 1 TiB
    print(float(x.sum()))
    """
)


def _run_jax_oom(mode, tmp_path):
    script = tmp_path / "oom.py"
    script.write_text(JAX_OOM_SCRIPT)
    env = dict(os.environ, JAX_PLATFORMS="cpu", NO_COLOR="1")
    return subprocess.run([sys.executable, str(script), mode], capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("mode", ["hook", "auto"])
def test_real_jax_oom_on_cpu_is_diagnosed_after_the_traceback(mode, tmp_path):
    plain = _run_jax_oom("plain", tmp_path)
    hooked = _run_jax_oom(mode, tmp_path)
    assert "RESOURCE_EXHAUSTED" in plain.stderr, plain.stderr[-2000:]
    # The exit status is what Python gives without the hook.
    assert hooked.returncode == plain.returncode == 1
    err = hooked.stderr
    tb = err.index("Traceback (most recent call last)")
    exc = err.index("RESOURCE_EXHAUSTED: Out of memory allocating 1099511627776 bytes.")
    # The normal traceback comes first, unchanged ...
    assert err.startswith(plain.stderr.rstrip("\n")[: exc + 10]) or err[:tb] == plain.stderr[:tb]
    # ... then the diagnosis.
    diag = err[exc:]
    ids = {r["id"] for r in oomdoc.explain_list()}
    if "host.xla-cpu" in ids:  # the XLA:CPU family of the knowledge base
        assert "host.xla-cpu" in diag and "1.00 TiB" in diag, diag
    else:
        assert "oomdoc: jax.errors.JaxRuntimeError is a memory error" in diag or "error" in diag, diag
        assert "backend cpu" in diag, diag


def test_diagnose_exception_of_a_real_jax_error_has_live_facts(tmp_path):
    jax = pytest.importorskip("jax")
    script = tmp_path / "facts.py"
    script.write_text(textwrap.dedent(
        """
        import json, resource
        resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
        import jax.numpy as jnp, oomdoc
        try:
            jnp.ones((1 << 38,), jnp.float32)
        except Exception as e:  # a real JaxRuntimeError: RESOURCE_EXHAUSTED
            print(json.dumps(oomdoc.diagnose_exception(e)))
        """
    ))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ, JAX_PLATFORMS="cpu"), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads(p.stdout)
    assert report["exception"]["memory_error"] is True
    assert "RESOURCE_EXHAUSTED" in report["exception"]["message"]
    j = report["facts"]["frameworks"]["jax"]
    assert j["backend"] == "cpu" and j["version"] == jax.__version__ and j["device_kind"]
    assert "torch" not in report["facts"]["frameworks"]


def test_chained_causes():
    try:
        try:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 1099511627776 bytes.")
        except RuntimeError as inner:
            raise ValueError("training step failed") from inner
    except ValueError as e:
        r = oomdoc.diagnose_exception(e)
    assert [c["type"] for c in r["exception"]["chain"]] == ["RuntimeError", "ValueError"]
    assert r["exception"]["type"] == "ValueError"
    assert r["exception"]["memory_error"] is True
    with pytest.raises(TypeError):
        oomdoc.diagnose_exception("not an exception")


def test_install_idempotent_and_uninstall():
    before_sys, before_thr = sys.excepthook, threading.excepthook
    oomdoc.install()
    hook = sys.excepthook
    oomdoc.install()
    assert sys.excepthook is hook and oomdoc.installed()
    assert threading.excepthook is _hook._threading_hook
    oomdoc.uninstall()
    oomdoc.uninstall()
    assert sys.excepthook is before_sys and threading.excepthook is before_thr and not oomdoc.installed()


def test_uncaught_in_thread_and_not_memory_errors(tmp_path):
    script = tmp_path / "t.py"
    script.write_text(textwrap.dedent(
        f"""
        import threading, oomdoc
        oomdoc.install()
        def work():
            raise RuntimeError({TORCH_OOM!r})
        t = threading.Thread(target=work); t.start(); t.join()
        raise KeyError("not a memory error")
        """
    ))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    assert p.returncode == 1
    err = p.stderr
    assert err.index("Exception in thread") < err.index("pytorch.cuda-oom") < err.index("KeyError")
    assert err.count("pytorch.cuda-oom") == 1  # the KeyError gets no diagnosis


def test_memoryerror_without_text(tmp_path):
    script = tmp_path / "m.py"
    script.write_text("import oomdoc\noomdoc.install()\nraise MemoryError()\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert p.returncode == 1
    # A bare MemoryError is a message the engine knows (host.python-memoryerror): the
    # traceback comes first, then the diagnosis.
    assert p.stderr.index("MemoryError") < p.stderr.index("host.python-memoryerror")


def test_watch_context_manager_and_decorator(capsys):
    with pytest.raises(RuntimeError):
        with oomdoc.watch():
            raise RuntimeError(TORCH_OOM)
    assert "pytorch.cuda-oom" in capsys.readouterr().err

    seen = []

    @oomdoc.watch(seen.append)
    def step():
        raise RuntimeError(TORCH_OOM)

    with pytest.raises(RuntimeError):
        step()
    assert seen and seen[0]["findings"][0]["id"] == "pytorch.cuda-oom"
    with pytest.raises(KeyError):
        with oomdoc.watch(seen.append):
            raise KeyError("x")
    assert len(seen) == 1


class _FakeCuda:
    """Shaped like torch.cuda (the functions live_facts reads), for a machine without PyTorch."""

    def is_available(self): return True
    def is_initialized(self): return True
    def current_device(self): return 0
    def get_device_name(self, d): return "NVIDIA GeForce RTX 3090"
    def get_device_capability(self, d): return (8, 6)
    def mem_get_info(self, d): return (11597594, 25393692672)
    def memory_stats(self, d):
        return {"allocated_bytes.all.current": 24588427264, "reserved_bytes.all.current": 24792760320, "inactive_split_bytes.all.current": 204333056}


def test_torch_adapter_and_allocator_setting_not_suggested_again(monkeypatch):
    """Real PyTorch check skipped (torch is not installed in the test venv: no GPU); the adapter
    runs on an object shaped like torch and the real OOM text PyTorch prints."""
    fake = types.SimpleNamespace(__version__="2.4.0", cuda=_FakeCuda(), version=types.SimpleNamespace(cuda="12.1", hip=None))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.delenv("PYTORCH_CUDA_ALLOC_CONF", raising=False)
    plain = oomdoc.diagnose_exception(RuntimeError(TORCH_OOM))
    t = plain["facts"]["frameworks"]["torch"]
    assert t["device_name"] == "NVIDIA GeForce RTX 3090" and t["capability"] == [8, 6]
    assert t["total_bytes"] == 25393692672 and t["inactive_split_bytes"] == 204333056
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    already = oomdoc.diagnose_exception(RuntimeError(TORCH_OOM))
    assert already["facts"]["env"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    mentions = lambda r: json.dumps(r["findings"][0]["fixes"]).count("expandable_segments:True")
    assert mentions(plain) > 0 and mentions(already) < mentions(plain)


def test_tpu_chip_enters_the_diagnosis():
    # Real message: https://github.com/vllm-project/tpu-inference/pull/3407 (tests/corpus/dev.jsonl).
    text = "CompileTimeScopedVmemOom: Ran out of memory in memory space vmem ... for\n%flash_attention.1 = bf16[1,16,25344,80] ... Scoped allocation with size\n37.22M and limit 32.00M exceeded scoped vmem limit by 5.22M."
    from oomdoc import _core

    def dead_ends(kind):
        r = json.loads(_core.diagnose_text(text, "en", json.dumps({"tpu_device_kind": kind}))[0])
        return [d["id"] for d in r["findings"][0]["dead_ends"]]

    # 38 MiB fits under v6e's 128 MiB of VMEM, not under v4's 16 MiB.
    assert "limit-above-physical" in dead_ends("TPU v4")
    assert "limit-above-physical" not in dead_ends("TPU v6 lite")


def test_ipython_handler_registration():
    """Real IPython check skipped (IPython is not installed in the test venv); a shell shaped
    like IPython's InteractiveShell receives the handler and gets its state back."""
    calls = []

    class Shell:
        custom_exceptions = ()
        CustomTB = None

        def set_custom_exc(self, excs, handler):
            self.custom_exceptions = excs
            self.handler = handler

        def showtraceback(self, exc_tuple, tb_offset=None):
            calls.append(exc_tuple[0])

    shell = Shell()
    ip = types.ModuleType("IPython")
    ip.get_ipython = lambda: shell
    sys.modules["IPython"] = ip
    try:
        oomdoc.install()
        assert shell.custom_exceptions == (BaseException,)
        shell.handler(shell, RuntimeError, RuntimeError(TORCH_OOM), None)
        assert calls == [RuntimeError]
        oomdoc.uninstall()
        assert shell.custom_exceptions == ()
    finally:
        del sys.modules["IPython"]
        oomdoc.uninstall()


SNAPSHOTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "fixtures", "pytorch-snapshots")


def test_record_needs_pytorch_with_cuda():
    # No GPU here (and usually no torch): a clear error, nothing installed half-way.
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if has_cuda:
        pytest.skip("a CUDA device is present: recording would really start")
    with pytest.raises(RuntimeError, match="record=True needs"):
        oomdoc.install(record=True)
    assert not oomdoc.installed()
    with pytest.raises(ValueError):
        oomdoc._record.record(max_entries=0)


def test_a_dumped_snapshot_names_the_call_sites_in_the_diagnosis(monkeypatch):
    snap = os.path.abspath(os.path.join(SNAPSHOTS, "g4-compile-context-expandable-3gpu-OOM.pickle"))
    assert os.path.isfile(snap), f"{snap} is missing (the shared/ fixtures)"
    # What the OOM observer leaves behind: the path of the snapshot it dumped.
    monkeypatch.setitem(oomdoc._record._state, "last", snap)
    exc = RuntimeError("CUDA out of memory. Tried to allocate 4.94 GiB. GPU 1 has a total capacity of 79.25 GiB of which 91.25 MiB is free.")
    report, text, _ = _hook._diagnose(exc)
    assert report["snapshot"] == snap
    memory = report["findings"][0]["memory"]
    assert memory["live_at"] == "oom" and memory["device"] == 1
    assert memory["top_call_sites"][0]["call_site"].endswith("models.py:174:update_nodes")
    assert "x12 live at the OOM: train/models.py:174:update_nodes" in text
    assert f"snapshot: {snap}" in text
    # An unreadable snapshot: the message's diagnosis alone, never an error.
    monkeypatch.setitem(oomdoc._record._state, "last", __file__)
    report, _, _ = _hook._diagnose(exc)
    assert "snapshot" not in report and report["findings"]


def test_record_arms_through_the_shared_arm_module(monkeypatch, tmp_path):
    # A stand-in torch (no GPU here): install(record=True) and `oomdoc run --record-snapshot`'s
    # sitecustomize share oomdoc/_arm.py; this checks the calls and the observer's dump.
    calls = []
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True,
        memory=types.SimpleNamespace(
            _record_memory_history=lambda **kw: calls.append(("record", kw)),
            _dump_snapshot=lambda path: (calls.append(("dump", path)), open(path, "wb").close()),
        ),
    )
    torch._C = types.SimpleNamespace(_cuda_attach_out_of_memory_observer=lambda fn: calls.append(("observer", fn)))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(oomdoc._arm, "_state", {})
    monkeypatch.setattr(oomdoc._record, "_state", oomdoc._arm._state)
    oomdoc._record.record(max_entries=123, directory=str(tmp_path))
    assert calls[0] == ("record", {"max_entries": 123})
    assert calls[1] == ("observer", oomdoc._arm._on_oom)
    assert oomdoc._record.recording()
    oomdoc._arm._on_oom(2, 1 << 30, 0, 0)
    oomdoc._arm._on_oom(2, 1 << 30, 0, 0)  # once per device
    expected = str(tmp_path / f"oomdoc-snapshot-{os.getpid()}-gpu2.pickle")
    assert [c for c in calls if c[0] == "dump"] == [("dump", expected)]
    assert oomdoc._record.last_snapshot() == expected
