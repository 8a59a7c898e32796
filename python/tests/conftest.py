import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository
EXAMPLE_LOG = ROOT / "examples" / "train.log"


def oomdoc_cmd():
    """The `oomdoc` console script that `pip install ./python` put next to this Python."""
    exe = Path(sys.executable).parent / "oomdoc"
    found = str(exe) if exe.exists() else shutil.which("oomdoc")
    assert found, "pip install ./python must put the oomdoc command on PATH"
    return found


def run_cli(*args, input=None):
    p = subprocess.run([oomdoc_cmd(), *args], capture_output=True, text=True, input=input, timeout=120)
    return p


def cli_json(*args, input=None):
    p = run_cli(*args, "--format", "json", input=input)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def cli():
    return cli_json
