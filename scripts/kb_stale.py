#!/usr/bin/env python3
"""List knowledge-base entries whose behaviour records were checked against an older
release than the newest one on the package registries.

Each entry's `checked_against = { vllm = "0.33.0", ... }` names, per project, the newest
release its `[[behaviours]]` were read against (or the commit, when no release was pinned:
such entries are listed as stale until someone checks them at a release). `kb/projects.toml` says where each project's
newest release is published: PyPI (https://pypi.org/pypi/<package>/json), crates.io (the
sparse index, https://index.crates.io/...), or nowhere a script can read (llama.cpp, Ollama,
TGI: their `lookup` is printed and the entry is reported as skipped).

Run by hand; it needs the network and is not part of the tests:

    python3 scripts/kb_stale.py            # stale entries, then skipped ones
    python3 scripts/kb_stale.py --all      # every (entry, project) pair with its status
    python3 scripts/kb_stale.py --json     # one JSON object per pair

Exit status: 0 when nothing is stale, 1 when some entry is behind, 2 on bad input.
"""
import argparse
import glob
import json
import os
import re
import sys
import urllib.error
import urllib.request

try:
    import tomllib
except ImportError:  # Python < 3.11
    try:
        import tomli as tomllib
    except ImportError:
        sys.exit("kb_stale.py needs Python >= 3.11 (tomllib) or the tomli package")

try:
    from packaging.version import InvalidVersion, Version
except ImportError:
    Version = None
    InvalidVersion = ValueError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
USER_AGENT = "oomdoc-kb-stale (https://github.com/oomdoc; run by hand)"


def simple_key(v):
    """A sortable key for a release string without `packaging`: numbers compare as numbers,
    and a pre-release (dev, a, b, rc) sorts before the release it leads to."""
    parts = []
    for num, tag in re.findall(r"(\d+)|([A-Za-z]+)", v.strip().lstrip("vV")):
        if num:
            parts.append((2, int(num)))
        else:
            parts.append((3, 0) if tag.lower() == "post" else (1, {"dev": 0, "a": 1, "alpha": 1, "b": 2, "beta": 2, "rc": 3}.get(tag.lower(), 1)))
    parts.append((1.5, 0))  # the end of a release: after its pre-releases, before 1.2.post1 / 1.2.1
    return parts


def older(a, b):
    """Whether release a is older than release b (PEP 440 via `packaging` when both parse)."""
    if Version is not None:
        try:
            return Version(a.strip().lstrip("vV")) < Version(b.strip().lstrip("vV"))
        except InvalidVersion:
            pass
    return simple_key(a) < simple_key(b)


def fetch_json(url):
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT, "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def fetch_text(url):
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read().decode("utf-8")


def newest_pypi(package):
    return fetch_json(f"https://pypi.org/pypi/{package}/json")["info"]["version"]


def crates_index_path(name):
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


def newest_crate(name):
    """Newest non-yanked, non-pre-release version in the crates.io sparse index."""
    best = None
    for line in fetch_text(f"https://index.crates.io/{crates_index_path(name)}").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        v = rec["vers"]
        if rec.get("yanked") or "-" in v:
            continue
        if best is None or older(best, v):
            best = v
    return best


def newest_release(project, cache):
    if project["name"] in cache:
        return cache[project["name"]]
    try:
        if project["registry"] == "pypi":
            v = newest_pypi(project["package"])
        elif project["registry"] == "crates":
            v = newest_crate(project["package"])
        else:
            v = None
        result = (v, None)
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        result = (None, f"lookup failed: {e}")
    cache[project["name"]] = result
    return result


def load_projects():
    with open(os.path.join(ROOT, "kb", "projects.toml"), "rb") as f:
        return {p["name"]: p for p in tomllib.load(f)["projects"]}


def load_entries():
    for path in sorted(glob.glob(os.path.join(ROOT, "kb", "*", "*.toml"))):
        with open(path, "rb") as f:
            data = tomllib.load(f)
        yield os.path.relpath(path, ROOT), data


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="also list entries that are current or skipped")
    ap.add_argument("--json", action="store_true", help="one JSON object per (entry, project)")
    args = ap.parse_args()

    projects = load_projects()
    cache = {}
    rows = []
    unchecked = []
    for path, e in load_entries():
        checked = e.get("checked_against", {})
        if not checked:
            unchecked.append((path, e.get("id", "?")))
        for name, release in sorted(checked.items()):
            p = projects.get(name)
            if p is None:
                print(f"{path}: checked_against names `{name}`, which kb/projects.toml does not list", file=sys.stderr)
                return 2
            newest, error = newest_release(p, cache)
            if error:
                status, note = "error", error
            elif re.fullmatch(r"[0-9a-f]{7,40}", release) and newest is not None:
                status, note = "stale", f"checked at commit {release[:12]}, not at a release; newest on {p['registry']} is {newest}"
            elif newest is None:
                status, note = "skipped", f"no registry: {p.get('lookup', 'look it up by hand')}"
            elif older(release, newest):
                status, note = "stale", f"newest on {p['registry']} is {newest}"
            else:
                status, note = "current", f"newest on {p['registry']} is {newest}"
            rows.append({"file": path, "id": e.get("id"), "project": name, "checked": release, "newest": newest, "status": status, "note": note})

    if args.json:
        for r in rows:
            print(json.dumps(r))
        return 1 if any(r["status"] == "stale" for r in rows) else 0

    order = ["stale", "error", "skipped", "current"]
    shown = [r for r in rows if args.all or r["status"] in ("stale", "error", "skipped")]
    shown.sort(key=lambda r: (order.index(r["status"]), r["project"], r["id"] or ""))
    for r in shown:
        print(f"{r['status']:8} {r['id']:<32} {r['project']:<12} checked {r['checked']:<12} {r['note']}")
    counts = {s: sum(1 for r in rows if r["status"] == s) for s in order}
    print(
        f"\n{len(rows)} (entry, project) pairs: {counts['stale']} stale, {counts['current']} current, "
        f"{counts['skipped']} skipped (no registry), {counts['error']} lookup errors; "
        f"{len(unchecked)} entries have no checked_against yet"
    )
    return 1 if counts["stale"] else 0


if __name__ == "__main__":
    sys.exit(main())
