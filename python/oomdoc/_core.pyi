"""Type stubs of the Rust extension (python/src/lib.rs). Structured values are JSON strings."""

from os import PathLike
from typing import List, Optional, Tuple, Union

__version__: str

def diagnose_text(
    text: str, lang: str = "en", facts: Optional[str] = None, color: bool = False, snapshot: Optional[Union[str, PathLike[str]]] = None
) -> Tuple[str, str, str]:
    """(JSON report, text rendering, Markdown rendering) of a log held in memory; with
    ``snapshot`` (a PyTorch memory snapshot), PyTorch findings get its call sites live at the OOM."""

def diagnose_file(path: Union[str, PathLike[str]], lang: str = "en", facts: Optional[str] = None, color: bool = False) -> Tuple[str, str, str]:
    """Same for a log file, streamed. Raises OSError when unreadable."""

def explain(key: str) -> str: ...
def explain_list(lang_s: str = "en") -> str: ...
def plan_pallas(spec_json: str) -> Tuple[str, str]:
    """(JSON plan, text rendering) of an `oomdoc plan pallas` spec. Raises ValueError on bad input."""

def tpu_chip_name(kind: str) -> Optional[str]: ...
def plan_triton_configs(arch: str, configs_json: str, dtype: str = "fp16", triton_version: str = "3.9") -> str: ...
def judge_triton_configs(arch: str, configs_json: str, dtype: str = "fp16", triton_version: str = "3.9") -> str: ...
def cli_main(argv: List[str]) -> int: ...
