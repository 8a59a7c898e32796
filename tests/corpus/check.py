#!/usr/bin/env python3
"""Validate tests/corpus/*.jsonl: JSON validity, required fields, and every
`<name>_bytes` recomputed from its printed size string `<name>`.

Units are binary (K/KB/KiB = 2**10, M/MB/MiB = 2**20, G/GB/GiB = 2**30, T, P, E),
results rounded half-up to an integer; hex strings (0x...) are exact.
`<name>_exact_bytes` (an integer the text itself prints, e.g. "13.58GiB (14583876403 bytes)")
must agree with the printed human-readable size to within its rounding (0.005 of the unit).
Keys ending in `_bytes` with no sibling string are integers stated as such in the text.
"""
import json, re, sys, os
from decimal import Decimal, ROUND_HALF_UP

MULT = {'': 1, 'B': 1, 'b': 1, 'byte': 1, 'bytes': 1,
        'K': 2**10, 'k': 2**10, 'KB': 2**10, 'kB': 2**10, 'KiB': 2**10,
        'M': 2**20, 'MB': 2**20, 'MiB': 2**20,
        'G': 2**30, 'GB': 2**30, 'GiB': 2**30,
        'T': 2**40, 'TB': 2**40, 'TiB': 2**40,
        'P': 2**50, 'PB': 2**50, 'PiB': 2**50,
        'E': 2**60, 'EiB': 2**60,
        # Kubernetes quantities' binary suffixes (`27484Ki`)
        'Ki': 2**10, 'Mi': 2**20, 'Gi': 2**30, 'Ti': 2**40}

def parse(s):
    s = s.strip()
    if re.fullmatch(r'0x[0-9a-fA-F]+', s):
        return int(s, 16), 0
    m = re.fullmatch(r'(-?[0-9][0-9,]*(?:\.([0-9]+))?)\s*([A-Za-z]*)', s)
    if not m or m.group(3) not in MULT:
        raise ValueError('unparseable size %r' % s)
    unit = MULT[m.group(3)]
    num = Decimal(m.group(1).replace(',', ''))
    decimals = len(m.group(2) or '')
    tol = Decimal(unit) * Decimal(5) / Decimal(10) ** (decimals + 1) if decimals else Decimal(unit) / 2
    return int((num * unit).quantize(Decimal(1), rounding=ROUND_HALF_UP)), tol

errors = []
nchecked = 0

def walk(obj, where):
    global nchecked
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k.endswith('_exact_bytes'):
                base = k[:-len('_exact_bytes')]
                if not isinstance(v, int):
                    errors.append('%s.%s: not an int' % (where, k))
                elif isinstance(obj.get(base), str):
                    val, tol = parse(obj[base])
                    nchecked += 1
                    if abs(val - v) > tol + 1:
                        errors.append('%s.%s=%d disagrees with %r (%d)' % (where, k, v, obj[base], val))
            elif k.endswith('_bytes'):
                base = k[:-len('_bytes')]
                if not isinstance(v, int) or isinstance(v, bool):
                    errors.append('%s.%s: not an int: %r' % (where, k, v))
                    continue
                if base in obj:
                    if not isinstance(obj[base], str):
                        errors.append('%s.%s: sibling %r is not a string' % (where, k, base))
                        continue
                    try:
                        val, _ = parse(obj[base])
                    except ValueError as e:
                        errors.append('%s.%s: %s' % (where, base, e))
                        continue
                    nchecked += 1
                    if val != v:
                        errors.append('%s.%s=%d but %r -> %d' % (where, k, v, obj[base], val))
            walk(v, where + '.' + k)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            walk(v, '%s[%d]' % (where, i))

POS_FIELDS = ['id', 'category', 'source_url', 'repo', 'source_type', 'error_text', 'text_notes',
              'framework', 'backend', 'hardware', 'expected', 'resolution']
NEG_FIELDS = ['id', 'source_url', 'text', 'why_not_oom', 'recognized_as']

def load(path, fields, textkey):
    rows = []
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                errors.append('%s:%d: bad JSON: %s' % (path, n, e)); continue
            missing = [k for k in fields if k not in r]
            if missing:
                errors.append('%s:%d: missing %s' % (path, n, missing))
            if not str(r.get('source_url', '')).startswith('https://'):
                errors.append('%s:%d: source_url not https' % (path, n))
            t = r.get(textkey) or ''
            if not t.strip():
                errors.append('%s:%d: empty %s' % (path, n, textkey))
            if t.count('\n') + 1 > 60:
                errors.append('%s:%d: %s has more than 60 lines' % (path, n, textkey))
            rows.append(r)
    return rows

here = os.path.dirname(os.path.abspath(__file__))
pos = load(os.path.join(here, 'extra.jsonl'), POS_FIELDS, 'error_text')
neg = load(os.path.join(here, 'negatives.jsonl'), NEG_FIELDS, 'text')
ids = [r.get('id') for r in pos + neg]
dups = {i for i in ids if ids.count(i) > 1}
if dups:
    errors.append('duplicate ids: %s' % sorted(dups))
for r in pos:
    e = r.get('expected')
    if not isinstance(e, dict) or 'kind' not in e:
        errors.append('%s: expected.kind missing' % r.get('id'))
        continue
    if 'code' in e and not re.fullmatch(r'E\d{4}', e['code']):
        errors.append('%s: bad code %r' % (r['id'], e['code']))
    if e.get('code') and e['code'] not in r['error_text']:
        errors.append('%s: code %s not in text' % (r['id'], e['code']))
    walk(e, r['id'])
for r in neg:
    if r.get('recognized_as') is not None and not isinstance(r['recognized_as'], str):
        errors.append('%s: recognized_as must be null or string' % r['id'])

# every printed size string should occur in the text (guards against typos)
for r in pos:
    def strings(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if isinstance(v, str) and (k + '_bytes') in o:
                    yield k, v
                yield from strings(v)
        elif isinstance(o, list):
            for v in o:
                yield from strings(v)
    for k, v in strings(r['expected']):
        num = re.match(r'-?[0-9][0-9,.]*', v)
        if r['expected'].get('sizes_share_unit') and num and num.group(0) in r['error_text']:
            continue  # e.g. vLLM "(59.32/79.15 GiB)": the unit is printed once for two numbers
        if v not in r['error_text']:
            errors.append('%s: printed size %s=%r not found verbatim in error_text' % (r['id'], k, v))

# Family sets (`families/*.jsonl`) and their negatives (`negatives/*.jsonl`) listed in STRICT: the
# same fields, every size recomputed and found verbatim, the knowledge-base entry each record names,
# unique ids. (The older family files predate this check: some state sizes without a unit, `33715636`
# for kB, or leave out `recognized_as`; `cargo test --test corpus` checks them against the tool.)
import glob
STRICT = {'vendors-3.jsonl', 'blind-host.jsonl', 'blind-rec.jsonl', 's5-hosts.jsonl', 's5-devices.jsonl', 'prose.jsonl', 's6-b21.jsonl'}
fam = []
famneg = []
for path in sorted(glob.glob(os.path.join(here, 'families', '*.jsonl'))):
    if os.path.basename(path) not in STRICT:
        continue
    for r in load(path, POS_FIELDS, 'error_text'):
        fam.append(r)
        e = r.get('expected')
        if not isinstance(e, dict) or not e.get('oomdoc_id'):
            errors.append('%s: expected.oomdoc_id missing' % r.get('id'))
            continue
        walk(e, r['id'])
        for k, v in e.items():
            if isinstance(v, str) and (k + '_bytes') in e and v not in r['error_text']:
                errors.append('%s: printed size %s=%r not found verbatim in error_text' % (r['id'], k, v))
for path in sorted(glob.glob(os.path.join(here, 'negatives', '*.jsonl'))):
    if os.path.basename(path) in STRICT:
        famneg += load(path, NEG_FIELDS, 'text')
ids = [r.get('id') for r in fam + famneg]
dups = {i for i in ids if ids.count(i) > 1}
if dups:
    errors.append('duplicate ids in families/ and negatives/: %s' % sorted(dups))

print('%d positives, %d negatives, %d family records, %d family negatives, %d size fields recomputed' % (len(pos), len(neg), len(fam), len(famneg), nchecked))
if errors:
    print('\n'.join(errors))
    sys.exit(1)
print('OK')
