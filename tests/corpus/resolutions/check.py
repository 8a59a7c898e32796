#!/usr/bin/env python3
"""Validate the resolution corpus (tests/corpus/resolutions/*.jsonl).

Checks: every line is a JSON object; required fields are present and typed;
`category`, `also_ok` and `misleading` use the fix-category ids of the
contract (issue 20); ids are unique across all files; `error_text` has at most
60 lines and is not empty; `source_url` and `resolution_quote` are not empty.
Run: python3 tests/corpus/resolutions/check.py [FILE...]
"""
import glob
import json
import os
import sys

CATEGORIES = {
    "smaller-working-set", "release-other-memory", "allocator-setting", "raise-limit",
    "engine-setting", "distribute-or-offload", "kernel-config", "upgrade-or-downgrade",
    "bigger-device", "fix-code-or-data", "not-a-memory-problem", "investigate",
}
SOURCE_TYPES = {"issue", "pull-request", "discussion", "forum", "docs-sample"}
RESOLUTION_BY = {"maintainer", "reporter", "commenter-confirmed"}
PLATFORMS = {"cuda", "rocm", "mps", "tpu", "cpu", "xpu", "npu", "metal", "vulkan", "other"}
REQUIRED_STR = ["id", "family", "source_url", "source_type", "error_text", "framework",
                "platform", "resolution", "resolution_by", "resolution_quote", "category"]
OPTIONAL_STR = ["repo", "hardware", "os", "workload", "text_notes", "expected_id", "from_corpus"]
MAX_LINES = 60


def check_record(rec, where, errors):
    if not isinstance(rec, dict):
        errors.append(f"{where}: not a JSON object")
        return
    for key in REQUIRED_STR:
        value = rec.get(key)
        if not isinstance(value, str) or not value.strip():
            errors.append(f"{where}: `{key}` missing or empty")
    for key in OPTIONAL_STR:
        if rec.get(key) is not None and not isinstance(rec[key], str):
            errors.append(f"{where}: `{key}` must be a string or null")
    if not isinstance(rec.get("versions", {}), dict):
        errors.append(f"{where}: `versions` must be an object")
    if rec.get("category") not in CATEGORIES:
        errors.append(f"{where}: unknown category {rec.get('category')!r}")
    for key in ("also_ok", "misleading"):
        values = rec.get(key, [])
        if not isinstance(values, list):
            errors.append(f"{where}: `{key}` must be a list")
            continue
        for value in values:
            if value not in CATEGORIES:
                errors.append(f"{where}: unknown category {value!r} in `{key}`")
    if rec.get("category") in rec.get("misleading", []):
        errors.append(f"{where}: the winning category is also listed as misleading")
    if rec.get("source_type") not in SOURCE_TYPES:
        errors.append(f"{where}: unknown source_type {rec.get('source_type')!r}")
    if rec.get("resolution_by") not in RESOLUTION_BY:
        errors.append(f"{where}: unknown resolution_by {rec.get('resolution_by')!r}")
    if rec.get("platform") not in PLATFORMS:
        errors.append(f"{where}: unknown platform {rec.get('platform')!r}")
    url = rec.get("source_url") or ""
    if not url.startswith("http"):
        errors.append(f"{where}: source_url is not a link")
    text = rec.get("error_text") or ""
    if len(text.split("\n")) > MAX_LINES:
        errors.append(f"{where}: error_text has more than {MAX_LINES} lines")


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    files = argv[1:] or sorted(glob.glob(os.path.join(here, "*.jsonl")))
    errors, seen, counts = [], {}, {}
    for path in files:
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                where = f"{name}:{number}"
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError as err:
                    errors.append(f"{where}: invalid JSON ({err})")
                    continue
                check_record(rec, where, errors)
                rid = rec.get("id") if isinstance(rec, dict) else None
                if rid in seen:
                    errors.append(f"{where}: duplicate id {rid!r} (first at {seen[rid]})")
                elif rid:
                    seen[rid] = where
                counts[name] = counts.get(name, 0) + 1
    for error in errors:
        print(error)
    summary = ", ".join(f"{name} {n}" for name, n in sorted(counts.items()))
    print(f"{sum(counts.values())} records ({summary}), {'OK' if not errors else f'{len(errors)} errors'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
