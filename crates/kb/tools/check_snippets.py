#!/usr/bin/env python3
"""Check the knowledge base's Python snippets as Python itself reads them.

Reads a JSON list of snippets on stdin, each {"where": str, "code": str, "fragment": bool}
(placeholders already filled with dummy values), and prints one JSON object per problem:

- every snippet must compile;
- a snippet that is not a fragment must define or import every name it uses: names that
  `symtable` reports as referenced globals (at module level or from a function) that are
  neither assigned, imported, nor built in. A fragment is pasted into the user's program,
  whose names it may use.

Run by `cargo test -p oomdoc-kb --test code_blocks`; by hand:
    python3 crates/kb/tools/check_snippets.py < snippets.json
"""
import builtins
import json
import symtable
import sys

BUILTINS = set(dir(builtins)) | {"__file__", "__name__", "__builtins__"}


def module_bindings(table):
    """Names the module itself binds (assigned, imported, defined)."""
    return {
        s.get_name()
        for s in table.get_symbols()
        if s.is_assigned() or s.is_imported() or s.is_namespace() or s.is_parameter()
    }


def used_globals(table):
    """Global names referenced anywhere: at module level, and free globals of nested scopes."""
    out = set()
    if table.get_type() == "module":
        for s in table.get_symbols():
            if s.is_referenced() and not (s.is_assigned() or s.is_imported() or s.is_namespace()):
                out.add(s.get_name())
    else:
        for s in table.get_symbols():
            if s.is_referenced() and s.is_global():
                out.add(s.get_name())
    for child in table.get_children():
        out |= used_globals(child)
    return out


def check(snippet):
    where, code = snippet["where"], snippet["code"]
    try:
        compile(code, where, "exec")
    except SyntaxError as e:
        return [{"where": where, "problem": "does not compile", "detail": f"{e.msg} (line {e.lineno})"}]
    if snippet.get("fragment"):
        return []
    table = symtable.symtable(code, where, "exec")
    bound = module_bindings(table)
    undefined = sorted(n for n in used_globals(table) if n not in bound and n not in BUILTINS)
    return [
        {"where": where, "problem": "uses a name it never defines or imports", "detail": name}
        for name in undefined
    ]


def main():
    snippets = json.load(sys.stdin)
    problems = [p for s in snippets for p in check(s)]
    for p in problems:
        print(json.dumps(p, ensure_ascii=False))
    print(json.dumps({"checked": len(snippets), "problems": len(problems)}), file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
