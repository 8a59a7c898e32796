"""oomdoc.diagnose / explain: the CLI's JSON contracts, exactly; the oomdoc command on PATH."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import oomdoc
from conftest import EXAMPLE_LOG, cli_json, run_cli

# Real message: https://github.com/pytorch/pytorch/issues/16417 (tests/corpus/dev.jsonl).
TORCH_OOM = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"


def test_diagnose_path_equals_cli_json():
    assert oomdoc.diagnose(str(EXAMPLE_LOG)) == cli_json("diagnose", str(EXAMPLE_LOG))
    assert oomdoc.diagnose(EXAMPLE_LOG) == cli_json("diagnose", str(EXAMPLE_LOG))


def test_diagnose_text_equals_cli_json():
    text = EXAMPLE_LOG.read_text()
    assert oomdoc.diagnose(text) == cli_json("diagnose", "-", input=text)
    assert oomdoc.diagnose(text.encode()) == oomdoc.diagnose(text)


def test_diagnose_numbers_and_zh():
    r = oomdoc.diagnose(TORCH_OOM)
    f = r["findings"][0]
    assert f["id"] == "pytorch.cuda-oom"
    assert f["sizes"]["requested"] == 22 << 20
    assert oomdoc.diagnose(TORCH_OOM, lang="zh") == cli_json("diagnose", "-", "--lang", "zh", input=TORCH_OOM)
    assert "pytorch.cuda-oom" in oomdoc.diagnose_text(TORCH_OOM)
    assert oomdoc.diagnose_text(TORCH_OOM, format="markdown") == run_cli("diagnose", "-", "--format", "markdown", input=TORCH_OOM).stdout


def test_diagnose_bad_input():
    with pytest.raises(TypeError):
        oomdoc.diagnose(42)
    with pytest.raises(ValueError):
        oomdoc.diagnose("x", lang="fr")
    with pytest.raises(OSError):
        oomdoc.diagnose(pathlib.Path("/nonexistent/log.txt"))
    assert oomdoc.diagnose("")["findings"] == []
    assert oomdoc.diagnose("no such file and no memory error")["findings"] == []


def test_a_missing_log_path_is_an_error_not_text(tmp_path):
    # The newcomer's case: a typo in the file name used to be diagnosed as the text "train.log".
    for name in ["train.log", "runs/train.log.gz", "logs/"]:
        with pytest.raises(FileNotFoundError):
            oomdoc.diagnose(f"{tmp_path}/{name}")
        with pytest.raises(FileNotFoundError):
            oomdoc.diagnose(name)
    # A one-line message is still text.
    assert oomdoc.diagnose("RuntimeError: see train.log")["findings"] == []


def test_a_directory_is_diagnosed_as_the_cli_does(tmp_path):
    (tmp_path / "host1.log").write_text(TORCH_OOM + "\n")
    (tmp_path / "host2.log").write_text("step 1\n")
    r = oomdoc.diagnose(str(tmp_path))
    assert r == cli_json("diagnose", str(tmp_path))
    assert r["findings"][0]["id"] == "pytorch.cuda-oom"
    assert oomdoc.diagnose(tmp_path) == r


def test_explain_equals_cli_json():
    e = oomdoc.explain("E1001")
    assert e["id"] == "tpu.scoped-vmem"
    assert e == cli_json("explain", "E1001")
    assert oomdoc.explain("tpu.scoped-vmem") == e
    with pytest.raises(ValueError, match="no knowledge-base entry"):
        oomdoc.explain("no.such-entry")
    rows = oomdoc.explain_list()
    assert rows == cli_json("explain", "--list")
    assert any(r["id"] == "pytorch.cuda-oom" for r in rows)


def test_oomdoc_command_on_path():
    p = run_cli("--version")
    assert p.returncode == 0 and p.stdout.startswith("oomdoc "), p
    p = run_cli("explain", "no.such-entry")
    assert p.returncode == 2 and "no knowledge-base entry" in p.stderr
    p = run_cli("diagnose", str(EXAMPLE_LOG))
    assert p.returncode == 0 and "error[" in p.stdout
    p = subprocess.run([sys.executable, "-m", "oomdoc", "chips"], capture_output=True, text=True)
    assert p.returncode == 0 and "v5e" in p.stdout


def test_import_does_not_import_frameworks():
    code = "import sys, oomdoc, oomdoc.pallas, oomdoc.triton, oomdoc.auto; bad = [m for m in ('jax', 'torch', 'tensorflow', 'triton', 'numpy') if m in sys.modules]; assert not bad, bad; print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_typed_package():
    pkg = pathlib.Path(oomdoc.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()
