#!/usr/bin/env python3
"""Rewrite README.md's headline example from the real output of
`oomdoc diagnose examples/train.log` (crates/oomdoc/tests/readme.rs checks it):

    python3 scripts/readme_example.py [OOMDOC]     # default: cargo run -q -p oomdoc --

The first lines of each finding are kept, long lines cut at a word with ` …`, and `  …`
stands for the lines left out."""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
cmd = sys.argv[1:] or ["cargo", "run", "-q", "-p", "oomdoc", "--"]
out = subprocess.run(cmd + ["diagnose", "examples/train.log", "--color", "never"], cwd=root, check=True, capture_output=True, text=True).stdout.split("\n")


def cut(line: str, width: int = 105) -> str:
    if len(line) <= width:
        return line
    head = line[:width]
    return head[: head.rstrip().rfind(" ")].rstrip(" ,;(") + " …"


heads = [i for i, l in enumerate(out) if l.startswith(("error", "warning", "note"))]
lines = ["$ oomdoc diagnose examples/train.log"]
first, second, third = heads[0], heads[1], heads[2]
lines += [cut(out[first + i]) for i in range(6)] + ["  …"]
lines += [cut(out[second]), cut(out[second + 1]), "  …"]
lines += [cut(out[third + i]) for i in range(7)] + ["  …"]
block = "```\n" + "\n".join(lines) + "\n```\n"
readme = root / "README.md"
text = readme.read_text()
start = text.index("```\n$ oomdoc diagnose examples/train.log")
end = text.index("```\n", start + 4) + 4
readme.write_text(text[:start] + block + text[end:])
print(block, end="")
