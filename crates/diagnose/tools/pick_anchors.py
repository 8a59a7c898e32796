#!/usr/bin/env python3
"""Pick the scanner's anchor literals by measured frequency.

Every trigger word of the scanner (start triggers and context words) must contain
one anchor; the anchors are searched first with a vectorized multi-literal searcher
(Teddy), and the full trigger automaton runs only on lines that hold an anchor. So an
anchor should be *rare in ordinary log lines*: this script counts candidate substrings
of the triggers in reference text that holds no memory failure, and greedily picks a
small set that covers every trigger, preferring rare and shared substrings.

Reference text (all of it non-OOM): the benchmark's synthetic training-log line
templates (benches/scan_throughput.rs), tests/corpus/negatives.jsonl and
tests/corpus/negatives/*.jsonl (real texts users pasted: training logs, memory
summaries, nvidia-smi tables, non-memory errors).

Usage: python3 crates/diagnose/tools/pick_anchors.py [LIMIT_PER_MB] [--prefix] [--list] [--order N]
It reads the trigger lists from the sources (scan.rs START_TRIGGERS and CONTEXT_WORDS,
each recognize/*.rs TRIGGERS) and prints the anchors as a Rust array for scan.rs ANCHORS.

Every anchor is at least four bytes long: Teddy's fingerprint is as long as the shortest
anchor (up to four), and three bytes let through many more candidates (half the speed).

`--order N` (needs numpy) then orders the anchors so that aho-corasick's Teddy, which puts
pattern i in bucket B-1-(i mod B) (B = 16 past 32 patterns), fills each bucket with
look-alike fingerprints: N random swaps, each kept when the number of positions of the
reference text that pass a bucket's fingerprint test does not grow. On the benchmark's
log the ordered set searched about 10% faster.
"""
import json, re, sys, pathlib, collections

root = pathlib.Path(__file__).resolve().parents[3]

def reference_text():
    parts = []
    step_lines = [
        '2024-05-28 07:{m:02}:{m:02}.{u:06}: I external/xla/xla/service/service.cc:168] XLA service initialized for platform CUDA (this does not guarantee that XLA will be used). Devices: StreamExecutor device (0): NVIDIA H100 80GB HBM3, Compute Capability 9.0',
        '[rank0]: step {s} | memory: allocated 70.12 GiB, reserved 76.30 GiB, max_allocated 74.90 GiB | tokens/s 12345.6',
        '|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n| N/A   35C    P0             113W / 700W |  77823MiB / 81559MiB |     98%      Default |',
        '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl\n    return self._call_impl(*args, **kwargs)',
        'UserWarning: To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() (memory format preserved).',
        '{{"step": {s}, "loss": 1.2345, "lr": 3.0e-4, "grad_norm": 1.234, "throughput": 412.7, "epoch": {e}}}',
    ]
    weights = [1, 1, 1, 1, 1, 45]  # per 50 steps, as the benchmark writes them
    for i in range(2000):
        for t, w in zip(step_lines, weights):
            for _ in range(w):
                parts.append(t.format(m=i % 60, u=i, s=i, e=i // 100))
    for p in [root / 'tests/corpus/negatives.jsonl', *sorted((root / 'tests/corpus/negatives').glob('*.jsonl'))]:
        for line in p.read_text().splitlines():
            if line.strip():
                parts.append(json.loads(line)['text'])
    # The lines around real failures that are not part of them (tracebacks, log lines).
    for p in [root / 'tests/corpus/dev.jsonl', root / 'tests/corpus/extra.jsonl', *sorted((root / 'tests/corpus/families').glob('*.jsonl'))]:
        for line in p.read_text().splitlines():
            if line.strip():
                parts.extend(l for l in json.loads(line)['error_text'].splitlines() if not any(t in l for t in TRIGGERS))
    # Ordinary English prose and Python code, as warnings and tracebacks carry them:
    # the Python standard library's sources.
    import sysconfig
    for f in sorted(pathlib.Path(sysconfig.get_paths()['stdlib']).glob('*.py'))[:400]:
        parts.append(f.read_text(errors='replace'))
    return '\n'.join(parts)

TRIGGERS = []
args = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith('--') and sys.argv[i - 1] != '--order']
LIMIT = float(args[0]) if args else 300
WHOLE = '--prefix' not in sys.argv
LIST = '--list' in sys.argv
ORDER = int(sys.argv[sys.argv.index('--order') + 1]) if '--order' in sys.argv else 0
# Teddy compares fingerprints of min(4, shortest anchor) bytes: one 3-byte anchor
# halves the speed of all (measured with examples/anchor_speed.rs).
MIN_LEN = 4

def rust_list(src, name):
    m = re.search(r'const ' + name + r': &\[&str\] = &\[(.*?)\];', src, re.S)
    if not m:
        return []
    body = re.sub(r'//[^\n]*', '', m.group(1))
    return [json.loads('"' + x + '"') for x in re.findall(r'"((?:[^"\\]|\\.)*)"', body)]

def all_triggers():
    src = root / 'crates/diagnose/src'
    scan = (src / 'scan.rs').read_text()
    out = rust_list(scan, 'START_TRIGGERS') + rust_list(scan, 'CONTEXT_WORDS')
    for f in sorted((src / 'recognize').glob('*.rs')):
        out += rust_list(f.read_text(), 'TRIGGERS')
    return list(dict.fromkeys(out))

def teddy_order(anchors, text, iters):
    """Order anchors for few Teddy candidates (see the module docs)."""
    import random
    import numpy as np
    data = np.frombuffer(text[:8_000_000], dtype=np.uint8)
    buckets_n = 16 if len(anchors) > 32 else 8
    m = min(4, min(len(a) for a in anchors))
    lo = [data[k:len(data) - m + k + 1] & 15 for k in range(m)]
    hi = [data[k:len(data) - m + k + 1] >> 4 for k in range(m)]
    cache = {}

    def bucket_cost(pats):
        if not pats:
            return 0
        key = tuple(sorted(pats))
        if key not in cache:
            ok = np.ones(len(lo[0]), bool)
            for k in range(m):
                low, high = np.zeros(16, bool), np.zeros(16, bool)
                for p in pats:
                    b = p.encode()[k]
                    low[b & 15] = high[b >> 4] = True
                ok &= low[lo[k]] & high[hi[k]]
            # Every candidate is checked against each pattern of its bucket.
            cache[key] = int(ok.sum()) * (1 + 0.25 * (len(pats) - 1))
        return cache[key]

    def buckets(order):
        # aho-corasick 1.1 packed/teddy/generic.rs, Teddy::new: patterns whose first
        # m bytes have the same low nybbles share a bucket.
        out, seen = [[] for _ in range(buckets_n)], {}
        for i, p in enumerate(order):
            key = bytes(x & 15 for x in p.encode()[:m])
            b = seen.setdefault(key, buckets_n - 1 - (i % buckets_n))
            out[b].append(p)
        return out

    def cost(order):
        return sum(bucket_cost(b) for b in buckets(order))

    rng = random.Random(1)
    order, best = list(anchors), cost(anchors)
    print(f'Teddy candidates in the reference: {best:.0f} sorted', file=sys.stderr)
    for _ in range(iters):
        i, j = rng.randrange(len(order)), rng.randrange(len(order))
        trial = list(order)
        trial[i], trial[j] = trial[j], trial[i]
        c = cost(trial)
        if c <= best:
            order, best = trial, c
    print(f'Teddy candidates in the reference: {best:.0f} ordered', file=sys.stderr)
    return order

def main():
    triggers = all_triggers()
    TRIGGERS.extend(triggers)
    ref = reference_text()
    mb = len(ref) / 1e6
    cands = collections.defaultdict(set)
    for t in triggers:
        for n in range(min(MIN_LEN, len(t)), min(len(t), 8) + 1):
            for i in range(len(t) - n + 1):
                cands[t[i:i + n]].add(t)
    freq = {c: ref.count(c) / mb for c in cands}
    # Teddy, the vectorized searcher, finds candidates by an anchor's first three bytes
    # and verifies the rest, so a common three-byte prefix costs speed even when the
    # whole anchor is rare: the cost of an anchor is the frequency of its prefix.
    pre = {}
    for c in cands:
        pre.setdefault(c[:3], ref.count(c[:3]) / mb)
    cost = {c: freq[c] if WHOLE else max(freq[c], pre[c[:3]]) for c in cands}
    uncovered = set(triggers)
    anchors = []
    while uncovered:
        # A candidate line costs one short automaton run, so an anchor seen up to about
        # once in 30 lines (300 per MB) is cheap, while every extra anchor slows Teddy
        # down (measured with examples/anchor_speed.rs: 45 anchors 3.7 GB/s, 57 anchors
        # 0.8 GB/s on the benchmark's lines). Among the cheap ones, cover the most
        # triggers, then the rarest and longest. (`--prefix` costs an anchor by its
        # three-byte prefix instead; it picked more anchors and ran slower.)
        best = min((c for c in cands if cands[c] & uncovered),
                   key=lambda c: (cost[c] > LIMIT, -len(cands[c] & uncovered), cost[c], -len(c)))
        anchors.append(best)
        uncovered -= cands[best]
    for a in sorted(anchors):
        print(f'{a!r:24} {freq[a]:8.2f}/MB  prefix {pre[a[:3]]:8.2f}/MB  covers {len(cands[a])}', file=sys.stderr)
    anchors = sorted(anchors)
    if ORDER:
        anchors = teddy_order(anchors, ref.encode(), ORDER)
    if LIST:
        print('\n'.join(anchors))
        return
    print('pub const ANCHORS: &[&str] = &[')
    print('    ' + ', '.join(json.dumps(a) for a in anchors) + ',')
    print('];')
    print(f'{len(anchors)} anchors for {len(triggers)} triggers; reference {mb:.1f} MB', file=sys.stderr)

main()
