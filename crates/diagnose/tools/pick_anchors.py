#!/usr/bin/env python3
"""Pick the scanner's anchor literals by measured frequency.

Every trigger word of the scanner (start triggers and context words) must contain
one anchor; the anchors are searched first with a vectorized multi-literal searcher
(src/anchor_search.rs), and the full trigger automaton runs only on lines that hold an
anchor. So an anchor should be *rare in ordinary log lines*: this script counts candidate substrings
of the triggers in reference text that holds no memory failure, and greedily picks a
small set that covers every trigger, preferring rare and shared substrings.

Reference text (all of it non-OOM): the benchmark's synthetic training-log and
serving-log (vLLM) line templates (benches/scan_throughput.rs), tests/corpus/negatives.jsonl and
tests/corpus/negatives/*.jsonl (real texts users pasted: training logs, memory
summaries, nvidia-smi tables, non-memory errors).

Usage: python3 crates/diagnose/tools/pick_anchors.py [LIMIT_PER_MB] [--prefix] [--list] [--keep] [--order N]
It reads the trigger lists from the sources (scan.rs START_TRIGGERS and CONTEXT_WORDS,
each recognize/*.rs TRIGGERS) and prints the anchors as a Rust array for scan.rs
ANCHOR_BUCKETS (`--list`: one anchor per line, a blank line between buckets, the input of
examples/anchor_speed.rs).

Every anchor is at least four bytes long: the vectorized search fingerprints four bytes
(and falls back to Teddy for shorter anchors), Teddy's fingerprint is as long as the
shortest anchor (up to four), and three bytes let through many more candidates (half the
speed).

`--keep` starts from the anchors scan.rs has, drops those more frequent than the limit,
and picks anchors only for the triggers they leave uncovered (minutes, not a full pick).

`--order N` then deals the anchors into the 8 buckets of the vectorized
search (src/anchor_search.rs), which passes a position when each of its first four bytes
is that byte of some anchor of one bucket, in any combination: N random swaps between
buckets, each kept when the number of positions of the reference text that pass a
bucket does not grow. On the benchmark's log the dealt buckets let through 1.6 M
candidates per GiB (0.8 M of them real anchors) against 11.6 M for a greedy grouping by
shared bytes, and searched at 8.7 GiB/s against 4.0 GiB/s.
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
    train_end = sum(len(x) + 1 for x in parts)
    # A serving engine's log, as the benchmark's OOMDOC_BENCH_STYLE=vllm writes it: its
    # periodic metrics line (which names the KV cache) and per-request lines.
    serving_lines = [
        'INFO 05-28 07:{m:02}:{m:02} [metrics.py:351] Avg prompt throughput: {a:.1f} tokens/s, Avg generation throughput: {b:.1f} tokens/s, Running: {r} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: {u:.1f}%, CPU KV cache usage: 0.0%.',
        "INFO 05-28 07:{m:02}:{m:02} [logger.py:39] Received request chatcmpl-{x}: prompt: '<|im_start|>user\\nSummarize the document.<|im_end|>', params: SamplingParams(n=1, temperature=0.7, top_p=0.95, max_tokens=512), prompt_token_ids: None, lora_request: None.",
        'INFO:     10.0.{r}.{r}:{p} - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        'INFO 05-28 07:{m:02}:{m:02} [engine.py:310] Added request chatcmpl-{x}.',
        'INFO 05-28 07:{m:02}:{m:02} [engine.py:330] Finished request chatcmpl-{x}.',
    ]
    for i in range(4000):
        for t in serving_lines:
            parts.append(t.format(m=i % 60, a=i % 997 * 1.3, b=i % 613 * 0.7, r=i % 64, u=i % 1000 / 10, x=f'{i:x}', p=40000 + i))
    global BOUNDS  # where the training lines end and the serving lines (all ASCII)
    BOUNDS = (train_end, sum(len(x) + 1 for x in parts))
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
KEEP = '--keep' in sys.argv
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

def bucket_order(buckets, text, iters):
    """Deal the anchors (dealt in turn into `buckets`) anew into the vectorized search's
    8 buckets (see the module docs). The sample: 1 MB each of the training-log lines, the
    serving-log lines, and the rest of the reference (real pastes, Python sources)."""
    import random
    train, serve, rest = text[:BOUNDS[0]], text[BOUNDS[0]:BOUNDS[1]], text[BOUNDS[1]:]
    sample = train[:1_000_000] + serve[:1_000_000] + rest[len(rest) // 2:len(rest) // 2 + 1_000_000]
    # A position passes a bucket on its four bytes alone: count each four bytes once.
    grams = collections.Counter(sample[i:i + 4] for i in range(len(sample) - 3))
    by_first = collections.defaultdict(list)
    for g, c in grams.items():
        by_first[g[0]].append((g, c))
    cache = {}

    def passes(bucket):
        # Positions whose k-th byte is the k-th byte of some anchor of the bucket, for
        # k = 0..3 (anchor_search.rs: one whole-byte table per fingerprint byte).
        key = tuple(sorted(bucket))
        if key not in cache:
            sets = [set(a.encode()[k] for a in bucket) for k in range(4)]
            cache[key] = sum(c for b0 in sets[0] for g, c in by_first[b0] if g[1] in sets[1] and g[2] in sets[2] and g[3] in sets[3])
        return cache[key]

    def cost(buckets):
        return sum(passes(b) for b in buckets if b)

    best = cost(buckets)
    real = sum(sample.count(a.encode()) for b in buckets for a in b)
    print(f'candidates in {len(sample) / 1e6:.1f} MB of reference: {best} dealt in turn ({real} anchors there)', file=sys.stderr)
    rng = random.Random(1)
    for _ in range(iters):
        i, j = rng.sample(range(8), 2)
        if not buckets[i] or not buckets[j]:
            continue
        a, b = rng.randrange(len(buckets[i])), rng.randrange(len(buckets[j]))
        trial = [list(x) for x in buckets]
        trial[i][a], trial[j][b] = trial[j][b], trial[i][a]
        c = cost(trial)
        if c <= best:
            buckets, best = trial, c
    print(f'candidates in {len(sample) / 1e6:.1f} MB of reference: {best} after {iters} swaps', file=sys.stderr)
    return buckets

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
    freq = {}
    pre = {}

    def cost(c):
        # Teddy, the vectorized searcher, finds candidates by an anchor's first three bytes
        # and verifies the rest, so a common three-byte prefix costs speed even when the
        # whole anchor is rare: the cost of an anchor is the frequency of its prefix.
        if c not in freq:
            freq[c] = ref.count(c) / mb
            pre.setdefault(c[:3], ref.count(c[:3]) / mb)
        return freq[c] if WHOLE else max(freq[c], pre[c[:3]])
    uncovered = set(triggers)
    anchors = []
    if KEEP:
        # The anchors scan.rs has now, less those past the limit; only the triggers they
        # leave uncovered get new ones.
        src = (root / 'crates/diagnose/src/scan.rs').read_text()
        body = re.search(r'pub const ANCHOR_BUCKETS: &\[&\[&str\]\] = &\[(.*?)\n\];', src, re.S).group(1)
        for a in (json.loads('"' + x + '"') for x in re.findall(r'"((?:[^"\\]|\\.)*)"', body)):
            if cost(a) > LIMIT:
                print(f'dropped {a!r}: {freq[a]:.2f}/MB', file=sys.stderr)
                continue
            anchors.append(a)
            uncovered -= {t for t in triggers if a in t}
    while uncovered:
        # A candidate line costs one short automaton run, so an anchor seen up to about
        # once in 30 lines (300 per MB) is cheap, while every extra anchor slows Teddy
        # down (measured with examples/anchor_speed.rs: 45 anchors 3.7 GB/s, 57 anchors
        # 0.8 GB/s on the benchmark's lines). Among the cheap ones, cover the most
        # triggers, then the rarest and longest. (`--prefix` costs an anchor by its
        # three-byte prefix instead; it picked more anchors and ran slower.)
        best = min((c for c in cands if cands[c] & uncovered),
                   key=lambda c: (cost(c) > LIMIT, -len(cands[c] & uncovered), cost(c), -len(c)))
        anchors.append(best)
        uncovered -= cands[best]
    for a in sorted(anchors):
        cost(a)
        print(f'{a!r:24} {freq[a]:8.2f}/MB  prefix {pre[a[:3]]:8.2f}/MB  covers {len(cands.get(a, ()))}', file=sys.stderr)
    anchors = sorted(anchors)
    buckets = [anchors[i::8] for i in range(8)]
    if ORDER:
        buckets = bucket_order(buckets, ref.encode(), ORDER)
    if LIST:
        print('\n\n'.join('\n'.join(b) for b in buckets))
        return
    print('pub const ANCHOR_BUCKETS: &[&[&str]] = &[')
    for b in buckets:
        print('    &[' + ', '.join(json.dumps(a) for a in b) + '],')
    print('];')
    print(f'{len(anchors)} anchors for {len(triggers)} triggers; reference {mb:.1f} MB', file=sys.stderr)

main()
