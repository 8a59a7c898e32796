#!/usr/bin/env python3
"""Validate the resolution corpus: python3 tests/corpus/resolutions/check.py"""
import glob, json, os, re, sys

CATEGORIES = {"smaller-working-set", "release-other-memory", "allocator-setting", "raise-limit",
              "engine-setting", "distribute-or-offload", "kernel-config", "upgrade-or-downgrade",
              "bigger-device", "fix-code-or-data", "not-a-memory-problem", "investigate"}
REQUIRED = ["id", "family", "source_url", "repo", "source_type", "error_text", "framework", "platform",
            "resolution", "resolution_by", "resolution_quote", "category", "also_ok", "misleading"]
SOURCE_TYPES = {"issue", "pull-request", "discussion", "forum"}
RESOLVED_BY = {"maintainer", "reporter", "commenter-confirmed"}
PLATFORMS = {"cuda", "rocm", "mps", "tpu", "cpu", "xpu", "npu", "metal", "other", None}
URL = re.compile(r"^https://\S+$")

def problems(rec):
    for key in REQUIRED:
        if key not in rec:
            yield f"missing {key}"
    for key in ("error_text", "resolution", "resolution_quote", "family", "framework"):
        if not (isinstance(rec.get(key), str) and rec[key].strip()):
            yield f"{key} empty"
    if len(str(rec.get("error_text", "")).splitlines()) > 60: yield "error_text over 60 lines"
    if not URL.match(str(rec.get("source_url", ""))):
        yield "source_url is not a URL"
    if rec.get("source_type") not in SOURCE_TYPES:
        yield f"source_type {rec.get('source_type')!r}"
    if rec.get("resolution_by") not in RESOLVED_BY:
        yield f"resolution_by {rec.get('resolution_by')!r}"
    if rec.get("platform") not in PLATFORMS:
        yield f"platform {rec.get('platform')!r}"
    for key in ("also_ok", "misleading"):
        if not isinstance(rec.get(key), list) or not set(rec[key]) <= CATEGORIES:
            yield f"{key} has unknown categories"
    if rec.get("category") not in CATEGORIES:
        yield f"category {rec.get('category')!r}"
    elif rec["category"] in rec.get("misleading", []):
        yield "category is also listed as misleading"

def main():
    here = os.path.dirname(os.path.abspath(__file__))
    seen, count, bad = {}, 0, 0
    for path in sorted(glob.glob(os.path.join(here, "*.jsonl"))):
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            where = f"{os.path.basename(path)}:{n}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                print(f"{where}: invalid JSON: {err}"); bad += 1; continue
            count += 1
            found = list(problems(rec))
            if rec.get("id") in seen:
                found.append(f"duplicate id (first at {seen[rec['id']]})")
            seen.setdefault(rec.get("id"), where)
            print(*(f"{where} {rec.get('id')}: {p}" for p in found), sep="\n", end="\n" if found else "")
            bad += bool(found)
    print(f"{count} records, {bad} with problems")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
