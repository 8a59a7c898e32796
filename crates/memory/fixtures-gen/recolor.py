"""Move some allocations of a real dump to another memory space, in both its `.hlo.pb` and
its text files, and record XProf's Memory Viewer for each space of the result.

    /tmp/memvenv/bin/python crates/memory/fixtures-gen/recolor.py IN_DIR OUT_DIR PREFIX [COLOR]

Every allocation holding a value whose instruction name starts with PREFIX (say
`opt_state`: the optimizer state of `donated_adam_update`, which host offload keeps in
`pinned_host` memory) gets memory space COLOR (default 5, XLA's host space): the
allocation's `color` and each of its logical buffers' `color` in the HloProto; `, color N`
in its `-buffer-assignment.txt` header and `@N` on its values in the text files. JAX on
CPU cannot make such a dump (every buffer stays in space 0: see docs/memory.md), so this
is how oomdoc's memory-space handling is checked against XProf on a real module: the
converter reads whatever colors the HloProto carries. OUT_DIR/golden gets
`xprof_memory_viewer.space<S>.json` for S in 0 and COLOR.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_xprof import field, int_field, xspace_with  # noqa: E402


def read_varint(b, i):
    shift = value = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, i


def fields(b):
    """(number, wire type, value or payload, raw bytes) of each field of a message."""
    i = 0
    while i < len(b):
        start = i
        key, i = read_varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(b, i)
        elif wire == 2:
            n, i = read_varint(b, i)
            value, i = b[i:i + n], i + n
        elif wire == 1:
            value, i = b[i:i + 8], i + 8
        elif wire == 5:
            value, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value, b[start:i]


def with_color(msg, color_field, color):
    """The message with its color field set (replaced, or appended when absent)."""
    out = b"".join(raw for number, _, _, raw in fields(msg) if number != color_field)
    return out + int_field(color_field, color)


def first(msg, number, default=0):
    return next((v for n, _, v, _ in fields(msg) if n == number), default)


def recolor_proto(hlo, allocations, color):
    """HloProto (buffer_assignment = 3) with the given allocations (BufferAllocationProto
    color = 8) and their logical buffers (LogicalBufferProto color = 4) in `color`."""
    out = b""
    for number, _, value, raw in fields(hlo):
        if number != 3:
            out += raw
            continue
        # BufferAssignmentProto: logical_buffers = 1, buffer_allocations = 3; an
        # allocation's assigned values = 9, each with logical_buffer_id = 1.
        moved = {first(a, 1) for n, _, v, _ in fields(value) if n == 3 and first(v, 1) in allocations
                 for f, _, a, _ in fields(v) if f == 9}
        body = b""
        for n, _, v, r in fields(value):
            if n == 3 and first(v, 1) in allocations:
                body += field(3, with_color(v, 8, color))
            elif n == 1 and first(v, 1) in moved:
                body += field(1, with_color(v, 4, color))
            else:
                body += r
        out += field(3, body)
    return out


def main():
    src, dst, prefix = sys.argv[1], sys.argv[2], sys.argv[3]
    color = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(os.path.join(dst, "golden"))
    ba_path = glob.glob(os.path.join(src, "*-buffer-assignment.txt"))[0]
    base = os.path.basename(ba_path)[: -len("-buffer-assignment.txt")]
    # Allocations to move, and their values, from the text buffer assignment.
    allocations, values, current = set(), set(), None
    ba_lines = open(ba_path).read().split("\n")
    for line in ba_lines:
        m = re.match(r"allocation (\d+): ", line)
        if m:
            current = int(m.group(1))
        m = re.match(r" value: <\d+ (\S+)", line)
        if m and m.group(1).startswith(prefix):
            allocations.add(current)
    out, current = [], None
    for line in ba_lines:
        m = re.match(r"allocation (\d+): size (\d+)", line)
        if m:
            current = int(m.group(1))
            if current in allocations:
                line = line[: m.end()] + f", color {color}" + line[m.end():]
        elif line.startswith(" value: <") and current in allocations:
            values.add(int(re.match(r" value: <(\d+) ", line).group(1)))
            line = re.sub(r" @0>", f" @{color}>", line, count=1)
        out.append(line)
    open(os.path.join(dst, base + "-buffer-assignment.txt"), "w").write("\n".join(out))
    vals = []
    for line in open(os.path.join(src, base + "-buffer-assignment-values.txt")).read().split("\n"):
        m = re.match(r"<(\d+) ", line)
        if m and int(m.group(1)) in values:
            line = re.sub(r" @0>$", f" @{color}>", line)
        vals.append(line)
    open(os.path.join(dst, base + "-buffer-assignment-values.txt"), "w").write("\n".join(vals))
    for suffix in ("-live-range.txt", ".txt"):
        shutil.copy(os.path.join(src, base + suffix), os.path.join(dst, base + suffix))
    hlo = open(os.path.join(src, base + ".hlo.pb"), "rb").read()
    recolored = recolor_proto(hlo, allocations, color)
    open(os.path.join(dst, base + ".hlo.pb"), "wb").write(recolored)
    # XProf's view of each space, from the recolored HloProto in an XSpace.
    number, rest = base.split(".", 1)
    module, program_id = rest.split(".")[0], int(number.split("_")[1])
    xspace = os.path.join(dst, "golden", "host.xplane.pb")
    open(xspace, "wb").write(xspace_with(recolored, module, program_id))
    for space in (0, color):
        code = ("import sys; from xprof.convert import raw_to_tool_data as r; r.xspace_to_tool_names([sys.argv[1]]); "
                "d, _ = r.xspace_to_tool_data([sys.argv[1]], 'memory_viewer', "
                "{'module_name': sys.argv[2], 'memory_space': sys.argv[3]}); sys.stdout.write(d if isinstance(d, str) else d.decode())")
        res = subprocess.run([sys.executable, "-c", code, xspace, f"{module}({program_id})", str(space)],
                             check=True, capture_output=True, text=True)
        j = json.loads(res.stdout)
        with open(os.path.join(dst, "golden", f"xprof_memory_viewer.space{space}.json"), "w") as f:
            json.dump(j, f, indent=1)
        print(f"space {space}: XProf peak {j['peakHeapMib'] * 2**20:.0f} B, {len(j.get('maxHeapBySize', []))} buffers at the peak")
    for f in glob.glob(os.path.join(dst, "golden", "*.pb")):
        os.remove(f)
    print(f"moved allocations {sorted(allocations)} ({len(values)} values) to space {color}")


if __name__ == "__main__":
    main()
