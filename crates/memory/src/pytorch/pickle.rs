//! A bounded reader for the plain-data subset of Python's pickle (protocols 2–5) that
//! PyTorch memory snapshots use: dict, list, tuple, str, bytes, int (up to 128 bits),
//! float, bool and None, with the memo. Every opcode that could name or call Python
//! code (`GLOBAL`, `STACK_GLOBAL`, `REDUCE`, `BUILD`, `INST`, `OBJ`, `NEWOBJ[_EX]`,
//! `PERSID`, `BINPERSID`, `EXT1/2/4`) and the out-of-band buffer opcodes are refused:
//! nothing is ever executed, there is nothing to execute with.
//!
//! Why not a crate: `serde-pickle` has no budget on decoded bytes, element counts or
//! nesting (a declared length of 2^63 or a memo bomb is allocated as asked), and it
//! copies a memoized value at every `BINGET`, which turns the snapshot's shared frame
//! lists into a copy per trace entry. Here a memo reference shares the value.
//!
//! Memory is bounded: values are 8-byte tagged words, containers are runs in one
//! children arena, strings live in one byte arena; every byte kept is charged to a
//! [`Budget`] before it is allocated (a declared length is checked before reading it).
//! Nothing recurses: the reader is a loop over opcodes, and nesting depth is tracked per
//! container and capped ([`PickleLimits::max_depth`]). A container that already sits
//! inside another may not be changed (Python's and TorchScript's picklers never do it),
//! so the structure is a tree with shared leaves, never a cycle.

use crate::proto::hlo::{Budget, DecodeError};
use std::io::Read;

/// One value: a tag in the low 4 bits, a payload above (an inline integer or an index).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Value(u64);

const T_NONE: u64 = 0;
const T_BOOL: u64 = 1;
const T_INT: u64 = 2;
const T_BIG: u64 = 3;
const T_FLOAT: u64 = 4;
const T_STR: u64 = 5;
const T_BYTES: u64 = 6;
const T_LIST: u64 = 7;
const T_TUPLE: u64 = 8;
const T_DICT: u64 = 9;
/// A memo slot that was skipped (an optimized pickle's gap); reading it is an error.
const T_EMPTY: u64 = 10;

const INLINE_MIN: i64 = -(1 << 59);
const INLINE_MAX: i64 = (1 << 59) - 1;

impl Value {
    pub const NONE: Value = Value(T_NONE);
    fn new(tag: u64, payload: u64) -> Value {
        Value(tag | (payload << 4))
    }
    fn tag(self) -> u64 {
        self.0 & 0xf
    }
    fn index(self) -> usize {
        (self.0 >> 4) as usize
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Value(tag {}, {})", self.tag(), self.0 >> 4)
    }
}

/// What a value is, borrowed from its [`Pickle`].
#[derive(Debug, Clone, Copy)]
pub enum Ref<'a> {
    None,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    List(Items<'a>),
    Tuple(Items<'a>),
    Dict(Items<'a>),
}

/// A run of children in the arena; a container may have several (one per batch that
/// was not appended at the arena's end).
#[derive(Clone, Copy, Debug)]
struct Run {
    start: u64,
    len: u32,
    /// The next run of the same container, or `NO_RUN`.
    next: u32,
}

const NO_RUN: u32 = u32::MAX;
/// Shorter lists are stored as they come (sharing would save little).
const MIN_SHARED_RUN: usize = 4;
const SEALED: u16 = 1 << 15;

/// A run of memo reads seen: its bytes, and the children run (start, length) and depth it made.
type MemoRun = (Box<[u8]>, u64, u32, u16);

/// Limits of one read, on top of the byte [`Budget`].
#[derive(Debug, Clone, Copy)]
pub struct PickleLimits {
    /// Most values (of any kind) the file may hold.
    pub max_values: u64,
    /// Deepest nesting of containers (a snapshot needs 6: top dict, device_traces,
    /// a device's list, an entry, its frames, a frame).
    pub max_depth: u16,
    /// Most values waiting on the stack, and most open marks.
    pub max_stack: usize,
}

impl Default for PickleLimits {
    fn default() -> Self {
        PickleLimits { max_values: 1 << 32, max_depth: 64, max_stack: 1 << 20 }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PickleError {
    /// An opcode that names or calls Python code (or needs out-of-band data).
    Refused { offset: u64, opcode: &'static str },
    /// An opcode this reader does not know (or one of protocol 0/1's text forms).
    Unsupported { offset: u64, opcode: u8 },
    Truncated { offset: u64 },
    Malformed { offset: u64, message: String },
    /// Would pass the byte budget or a [`PickleLimits`] count.
    TooLarge { what: &'static str, limit: u64, needed: u64, records: bool },
    Io(String),
}

impl std::fmt::Display for PickleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PickleError::Refused { offset, opcode } => write!(
                f,
                "byte {offset}: pickle opcode {opcode} would import or call Python code; refused (a memory snapshot holds only dicts, lists, tuples, strings and numbers)"
            ),
            PickleError::Unsupported { offset, opcode } => write!(f, "byte {offset}: pickle opcode 0x{opcode:02x} is not part of the data a memory snapshot uses"),
            PickleError::Truncated { offset } => write!(f, "byte {offset}: the pickle ends early (truncated file?)"),
            PickleError::Malformed { offset, message } => write!(f, "byte {offset}: {message}"),
            PickleError::TooLarge { what, limit, needed, records } => {
                write!(f, "too large to read: {what} would need {needed} {}, over the limit of {limit}", if *records { "records" } else { "bytes of memory" })
            }
            PickleError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PickleError {}

impl From<DecodeError> for PickleError {
    fn from(e: DecodeError) -> Self {
        match e {
            DecodeError::TooLarge { what, limit, needed, records } => PickleError::TooLarge { what, limit, needed, records },
            DecodeError::Wire(w) => PickleError::Malformed { offset: w.offset as u64, message: w.message.to_string() },
        }
    }
}

/// A decoded pickle: its root value and the arenas the values point into.
#[derive(Default)]
pub struct Pickle {
    pub root: Value,
    pub protocol: u8,
    children: Vec<Value>,
    runs: Vec<Run>,
    /// Per container (indexed like its first run): nesting depth, and `SEALED` once it sits in another.
    meta: Vec<u16>,
    /// Last run of each container, for appends.
    tails: Vec<u32>,
    text: Vec<u8>,
    /// End of each string (start = end of the previous one).
    text_ends: Vec<u64>,
    bigs: Vec<i128>,
    floats: Vec<f64>,
    /// Runs of children already stored, by content hash: a new list or tuple whose
    /// first batch equals one of them shares its storage (a snapshot writes a new list of
    /// the same memoized frame dicts for every event's stack).
    shared_runs: crate::model::FastMap<u64, (u64, u32, u16)>,
}

impl std::fmt::Debug for Pickle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pickle(protocol {}, {} containers, {} strings)", self.protocol, self.runs.len(), self.text_ends.len())
    }
}

impl Default for Value {
    fn default() -> Self {
        Value::NONE
    }
}

/// The children of a container, in order.
#[derive(Clone, Copy)]
pub struct Items<'a> {
    pickle: &'a Pickle,
    first: u32,
}

impl std::fmt::Debug for Items<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Items({} values)", self.len())
    }
}

pub struct ItemsIter<'a> {
    pickle: &'a Pickle,
    run: u32,
    pos: u64,
    end: u64,
}

impl<'a> Iterator for ItemsIter<'a> {
    type Item = Value;
    fn next(&mut self) -> Option<Value> {
        loop {
            if self.pos < self.end {
                let v = self.pickle.children[self.pos as usize];
                self.pos += 1;
                return Some(v);
            }
            if self.run == NO_RUN {
                return None;
            }
            let r = self.pickle.runs[self.run as usize];
            self.pos = r.start;
            self.end = r.start + r.len as u64;
            self.run = r.next;
        }
    }
}

impl<'a> Items<'a> {
    pub fn iter(&self) -> ItemsIter<'a> {
        ItemsIter { pickle: self.pickle, run: self.first, pos: 0, end: 0 }
    }
    pub fn len(&self) -> usize {
        let mut n = 0usize;
        let mut run = self.first;
        while run != NO_RUN {
            let r = self.pickle.runs[run as usize];
            n += r.len as usize;
            run = r.next;
        }
        n
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A dict's (key, value) pairs.
    pub fn pairs(&self) -> impl Iterator<Item = (Value, Value)> + 'a {
        let mut it = self.iter();
        std::iter::from_fn(move || Some((it.next()?, it.next()?)))
    }
    /// A dict's value under the string key `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.pairs().find(|(k, _)| self.pickle.str_bytes(*k) == Some(key.as_bytes())).map(|(_, v)| v)
    }
}

impl Pickle {
    pub fn get(&self, v: Value) -> Ref<'_> {
        let i = v.index();
        match v.tag() {
            T_BOOL => Ref::Bool(i != 0),
            T_INT => Ref::Int(((v.0 as i64) >> 4) as i128),
            T_BIG => Ref::Int(self.bigs[i]),
            T_FLOAT => Ref::Float(self.floats[i]),
            T_STR => Ref::Str(std::str::from_utf8(self.text_of(i)).unwrap_or("")),
            T_BYTES => Ref::Bytes(self.text_of(i)),
            T_LIST => Ref::List(Items { pickle: self, first: i as u32 }),
            T_TUPLE => Ref::Tuple(Items { pickle: self, first: i as u32 }),
            T_DICT => Ref::Dict(Items { pickle: self, first: i as u32 }),
            _ => Ref::None,
        }
    }
    fn text_of(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.text_ends[i - 1] as usize };
        &self.text[start..self.text_ends[i] as usize]
    }
    /// A string's UTF-8 bytes, unvalidated (cheap: for comparing keys).
    pub fn str_bytes(&self, v: Value) -> Option<&[u8]> {
        (v.tag() == T_STR).then(|| self.text_of(v.index()))
    }
    /// Where a list's or tuple's items are stored, when in one run: lists with equal
    /// items that the reader stored once give the same key.
    pub fn storage_key(&self, v: Value) -> Option<(u64, u32)> {
        let r = self.runs.get(self.container_id(v)? as usize)?;
        (r.next == NO_RUN).then_some((r.start, r.len))
    }
    /// How many containers the pickle has (container ids are below this).
    pub fn container_count(&self) -> usize {
        self.runs.len()
    }
    pub fn as_str(&self, v: Value) -> Option<&str> {
        match self.get(v) {
            Ref::Str(s) => Some(s),
            _ => None,
        }
    }
    /// The string's index in the text arena: equal strings that the writer memoized share it.
    pub fn str_id(&self, v: Value) -> Option<u32> {
        (v.tag() == T_STR).then_some(v.index() as u32)
    }
    /// A string by its id; "" for an id the file does not have.
    pub fn str_by_id(&self, id: u32) -> &str {
        if id as usize >= self.text_ends.len() {
            return "";
        }
        std::str::from_utf8(self.text_of(id as usize)).unwrap_or("")
    }
    /// A list's or tuple's container index (shared frame lists have the same one).
    pub fn container_id(&self, v: Value) -> Option<u32> {
        matches!(v.tag(), T_LIST | T_TUPLE | T_DICT).then_some(v.index() as u32)
    }
    pub fn as_int(&self, v: Value) -> Option<i128> {
        match self.get(v) {
            Ref::Int(i) => Some(i),
            Ref::Bool(b) => Some(b as i128),
            _ => None,
        }
    }
    pub fn as_dict(&self, v: Value) -> Option<Items<'_>> {
        match self.get(v) {
            Ref::Dict(d) => Some(d),
            _ => None,
        }
    }
    /// A list's or tuple's items.
    pub fn as_seq(&self, v: Value) -> Option<Items<'_>> {
        match self.get(v) {
            Ref::List(d) | Ref::Tuple(d) => Some(d),
            _ => None,
        }
    }
    /// Free the containers, keeping the strings (what a model built from this keeps).
    pub fn drop_containers(&mut self) {
        self.children = Vec::new();
        self.runs = Vec::new();
        self.meta = Vec::new();
        self.tails = Vec::new();
    }
    /// The strings' arena, which ids from [`Pickle::str_id`] index.
    pub fn strings_len(&self) -> usize {
        self.text_ends.len()
    }
}

/// Makes room for `extra` more items in `v`, charging the capacity it adds (and
/// checking the moment of the reallocation, when old and new buffers both exist), so
/// that what the budget counts is what the arenas hold, growth slack included.
pub(crate) fn reserve<T>(v: &mut Vec<T>, extra: usize, budget: &mut Budget, what: &'static str) -> Result<(), DecodeError> {
    let need = v.len().saturating_add(extra);
    if need <= v.capacity() {
        return Ok(());
    }
    let each = std::mem::size_of::<T>().max(1) as u64;
    // While the buffer moves, the old one (already charged) and the whole new one exist.
    // Small vectors double; large ones grow by a quarter, so slack stays small (a large
    // buffer is moved by mremap, not copied, so the extra reallocations are cheap).
    let cap = v.capacity();
    let grown = if cap < 1 << 20 { cap.saturating_mul(2) } else { cap.saturating_add(cap / 4) };
    let doubled = need.max(grown).max(16);
    let new_cap = if budget.check_transient(doubled as u64 * each, what).is_ok() { doubled } else { need };
    budget.check_transient(new_cap as u64 * each, what)?;
    budget.charge((new_cap - v.capacity()) as u64 * each, what)?;
    v.reserve_exact(new_cap - v.len());
    Ok(())
}

struct Input<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    /// Bytes consumed before `buf`.
    base: u64,
}

impl<R: Read> Input<R> {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }
    fn fill(&mut self) -> Result<bool, PickleError> {
        if self.pos < self.len {
            return Ok(true);
        }
        self.base += self.len as u64;
        self.pos = 0;
        self.len = loop {
            match self.inner.read(&mut self.buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(PickleError::Io(e.to_string())),
            }
        };
        Ok(self.len > 0)
    }
    #[inline]
    fn byte(&mut self) -> Result<u8, PickleError> {
        if self.pos < self.len {
            let b = self.buf[self.pos];
            self.pos += 1;
            return Ok(b);
        }
        if !self.fill()? {
            return Err(PickleError::Truncated { offset: self.offset() });
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }
    #[inline]
    fn array<const N: usize>(&mut self) -> Result<[u8; N], PickleError> {
        let mut out = [0u8; N];
        if self.len - self.pos >= N {
            out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
            self.pos += N;
            return Ok(out);
        }
        for b in out.iter_mut() {
            *b = self.byte()?;
        }
        Ok(out)
    }
    /// Appends `n` bytes to `out` (whose room the caller has charged).
    fn bytes_into(&mut self, mut n: u64, out: &mut Vec<u8>) -> Result<(), PickleError> {
        while n > 0 {
            if !self.fill()? {
                return Err(PickleError::Truncated { offset: self.offset() });
            }
            let take = ((self.len - self.pos) as u64).min(n) as usize;
            out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
            n -= take as u64;
        }
        Ok(())
    }
}

struct Machine<'b> {
    p: Pickle,
    stack: Vec<Value>,
    marks: Vec<usize>,
    memo: Vec<Value>,
    budget: &'b mut Budget,
    limits: PickleLimits,
    values: u64,
    /// Whether a memo slot was written twice (then [`Machine::memo_run_cache`] is off).
    memo_rewritten: bool,
    /// Bodies of memo-read runs seen (by hash): the bytes, and the run they made.
    memo_runs: crate::model::FastMap<u64, MemoRun>,
}

impl Machine<'_> {
    fn count(&mut self, n: u64) -> Result<(), PickleError> {
        self.values += n;
        if self.values > self.limits.max_values {
            return Err(PickleError::TooLarge { what: "the pickle's values", limit: self.limits.max_values, needed: self.values, records: true });
        }
        Ok(())
    }
    #[inline]
    fn push(&mut self, v: Value, offset: u64) -> Result<(), PickleError> {
        if self.stack.len() < self.stack.capacity() && self.stack.len() < self.limits.max_stack {
            self.stack.push(v);
            return Ok(());
        }
        if self.stack.len() >= self.limits.max_stack {
            return Err(PickleError::TooLarge { what: "the pickle's stack", limit: self.limits.max_stack as u64, needed: self.stack.len() as u64 + 1, records: true });
        }
        let _ = offset;
        reserve(&mut self.stack, 1, self.budget, "the pickle's stack")?;
        self.stack.push(v);
        Ok(())
    }
    fn pop(&mut self, offset: u64) -> Result<Value, PickleError> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(PickleError::Malformed { offset, message: "pickle stack underflow".into() });
        }
        Ok(self.stack.pop().expect("checked"))
    }
    fn int(&mut self, i: i128) -> Result<Value, PickleError> {
        self.count(1)?;
        if (INLINE_MIN as i128..=INLINE_MAX as i128).contains(&i) {
            return Ok(Value(T_INT | ((i as i64 as u64) << 4)));
        }
        reserve(&mut self.p.bigs, 1, self.budget, "the pickle's integers")?;
        self.p.bigs.push(i);
        Ok(Value::new(T_BIG, self.p.bigs.len() as u64 - 1))
    }
    fn text<R: Read>(&mut self, input: &mut Input<R>, n: u64, tag: u64) -> Result<Value, PickleError> {
        self.count(1)?;
        // The declared length is charged before a byte is read or allocated.
        let n_usize = usize::try_from(n).map_err(|_| PickleError::TooLarge { what: "a string", limit: usize::MAX as u64, needed: n, records: false })?;
        reserve(&mut self.p.text, n_usize, self.budget, "the pickle's strings")?;
        reserve(&mut self.p.text_ends, 1, self.budget, "the pickle's strings")?;
        let start = self.p.text.len();
        input.bytes_into(n, &mut self.p.text)?;
        if tag == T_STR && std::str::from_utf8(&self.p.text[start..]).is_err() {
            // Lone surrogates (Python's surrogatepass): keep a readable copy.
            let fixed = String::from_utf8_lossy(&self.p.text[start..]).into_owned();
            self.p.text.truncate(start);
            self.p.text.extend_from_slice(fixed.as_bytes());
        }
        self.p.text_ends.push(self.p.text.len() as u64);
        Ok(Value::new(tag, self.p.text_ends.len() as u64 - 1))
    }
    fn container(&mut self, tag: u64, items: &[Value], offset: u64) -> Result<Value, PickleError> {
        self.count(1)?;
        self.new_run()?;
        let id = self.p.runs.len() as u32;
        if id == NO_RUN {
            return Err(PickleError::TooLarge { what: "the pickle's containers", limit: NO_RUN as u64, needed: id as u64 + 1, records: true });
        }
        self.p.runs.push(Run { start: self.p.children.len() as u64, len: 0, next: NO_RUN });
        self.p.meta.push(0);
        self.p.tails.push(id);
        let v = Value::new(tag, id as u64);
        self.extend(v, items, offset)?;
        Ok(v)
    }
    fn new_run(&mut self) -> Result<(), PickleError> {
        reserve(&mut self.p.runs, 1, self.budget, "the pickle's containers")?;
        reserve(&mut self.p.meta, 1, self.budget, "the pickle's containers")?;
        reserve(&mut self.p.tails, 1, self.budget, "the pickle's containers")?;
        Ok(())
    }
    /// Adds `items` to the container `into` (a tuple only at creation).
    fn extend(&mut self, into: Value, items: &[Value], offset: u64) -> Result<(), PickleError> {
        if items.is_empty() {
            return Ok(());
        }
        let c = into.index();
        if self.p.meta[c] & SEALED != 0 {
            return Err(PickleError::Malformed { offset, message: "a container is changed after it was put in another one (never done by a snapshot writer)".into() });
        }
        let tail = self.p.tails[c] as usize;
        let t = self.p.runs[tail];
        // A new list's first batch equal to a stored run shares it: those items are
        // sealed and their depth known already (and none is this list: it is unsealed,
        // so it sits in no stored run).
        let mut share_key = None;
        if t.len == 0 && tail == c && items.len() >= MIN_SHARED_RUN && matches!(into.tag(), T_LIST | T_TUPLE) && items.len() < u32::MAX as usize {
            use std::hash::Hasher;
            let mut h = crate::model::FxHasher::default();
            for v in items {
                h.write_u64(v.0);
            }
            let key = h.finish() ^ items.len() as u64;
            match self.p.shared_runs.get(&key) {
                Some(&(start, len, depth)) => {
                    if len as usize == items.len() && self.p.children[start as usize..start as usize + len as usize] == *items {
                        self.p.runs[tail].start = start;
                        self.p.runs[tail].len = len;
                        self.p.meta[c] = depth;
                        return Ok(());
                    }
                }
                None => share_key = Some(key),
            }
        }
        let mut depth = self.p.meta[c];
        for &child in items {
            if matches!(child.tag(), T_LIST | T_TUPLE | T_DICT) {
                let k = child.index();
                if k == c {
                    return Err(PickleError::Malformed { offset, message: "a container holds itself".into() });
                }
                let child_depth = self.p.meta[k] & !SEALED;
                depth = depth.max(child_depth + 1);
                if depth > self.limits.max_depth {
                    return Err(PickleError::TooLarge { what: "nesting depth", limit: self.limits.max_depth as u64, needed: depth as u64, records: true });
                }
                self.p.meta[k] |= SEALED;
            }
        }
        self.p.meta[c] = depth;
        reserve(&mut self.p.children, items.len(), self.budget, "the pickle's containers")?;
        let arena_end = self.p.children.len() as u64;
        if let Some(key) = share_key {
            // The map's slot: key, run and hashbrown's control byte, with growth slack.
            self.budget.charge(48, "the pickle's containers")?;
            self.p.shared_runs.insert(key, (arena_end, items.len() as u32, depth));
        }
        let fits_u32 = (t.len as u64 + items.len() as u64) < u32::MAX as u64;
        if t.len == 0 {
            self.p.runs[tail].start = arena_end;
            self.p.runs[tail].len = items.len() as u32;
        } else if t.start + t.len as u64 == arena_end && fits_u32 {
            self.p.runs[tail].len += items.len() as u32;
        } else {
            self.new_run()?;
            let id = self.p.runs.len() as u32;
            self.p.runs.push(Run { start: arena_end, len: items.len() as u32, next: NO_RUN });
            self.p.runs[tail].next = id;
            self.p.tails[c] = id;
            // Keep `meta`/`tails` indexable by any run id (only first runs are read).
            self.p.meta.push(0);
            self.p.tails.push(id);
        }
        self.p.children.extend_from_slice(items);
        Ok(())
    }
    fn memo_put(&mut self, idx: u64, offset: u64) -> Result<(), PickleError> {
        let top = *self.stack.last().ok_or(PickleError::Malformed { offset, message: "memo store with an empty stack".into() })?;
        let idx = idx as usize;
        if idx >= self.memo.len() {
            let extra = idx - self.memo.len() + 1;
            reserve(&mut self.memo, extra, self.budget, "the pickle's memo")?;
            self.memo.resize(idx + 1, Value(T_EMPTY));
        }
        if self.memo[idx].tag() != T_EMPTY {
            // A slot written twice: memo reads no longer name fixed values.
            self.memo_rewritten = true;
        }
        self.memo[idx] = top;
        Ok(())
    }
    /// At a MARK above a new, empty list: when the bytes up to the next APPENDS are only
    /// memo reads, and the same bytes were seen before, give the list the run those reads
    /// made then (each event's stack is the same run of memo reads of frame dicts). The
    /// memo's slots are written once (else this is off), so equal bytes are equal items.
    /// Returns whether the input was consumed up to and including the APPENDS.
    fn memo_run_cache<R: Read>(&mut self, input: &mut Input<R>) -> Result<bool, PickleError> {
        if self.memo_rewritten {
            return Ok(false);
        }
        let Some(&list) = self.stack.last() else { return Ok(false) };
        if list.tag() != T_LIST || self.p.runs[list.index()].len != 0 || self.p.tails[list.index()] as usize != list.index() || self.p.meta[list.index()] & SEALED != 0 {
            return Ok(false);
        }
        let buf = &input.buf[input.pos..input.len];
        let mut i = 0;
        let mut reads = 0;
        while i < buf.len() {
            match buf[i] {
                b'j' if i + 5 <= buf.len() => i += 5,
                b'h' if i + 2 <= buf.len() => i += 2,
                b'e' => break,
                _ => return Ok(false),
            }
            reads += 1;
        }
        if i >= buf.len() || reads < MIN_SHARED_RUN {
            return Ok(false);
        }
        let body = &buf[..i];
        use std::hash::Hasher;
        let mut h = crate::model::FxHasher::default();
        h.write(body);
        let key = h.finish() ^ body.len() as u64;
        if let Some((bytes, start, len, depth)) = self.memo_runs.get(&key) {
            if bytes.as_ref() == body {
                let c = list.index();
                self.p.runs[c].start = *start;
                self.p.runs[c].len = *len;
                self.p.meta[c] = *depth;
                input.pos += i + 1;
                return Ok(true);
            }
            return Ok(false);
        }
        // First time: read the reads as usual, then remember where they went.
        let body = body.to_vec();
        let at = input.offset();
        let floor = self.stack.len();
        for _ in 0..reads {
            let op = input.byte()?;
            let idx = if op == b'j' { u32::from_le_bytes(input.array()?) as u64 } else { input.byte()? as u64 };
            self.memo_get(idx, at)?;
        }
        input.byte()?; // the APPENDS
        let stack = std::mem::take(&mut self.stack);
        let result = self.extend(list, &stack[floor..], at);
        self.stack = stack;
        self.stack.truncate(floor);
        result?;
        let c = list.index();
        let r = self.p.runs[c];
        if r.next == NO_RUN {
            self.budget.charge(body.len() as u64 + 64, "the pickle's memo")?;
            self.memo_runs.insert(key, (body.into_boxed_slice(), r.start, r.len, self.p.meta[c]));
        }
        Ok(true)
    }
    #[inline]
    fn memo_get(&mut self, idx: u64, offset: u64) -> Result<(), PickleError> {
        match self.memo.get(idx as usize) {
            Some(v) if v.tag() != T_EMPTY => {
                let v = *v;
                self.push(v, offset)
            }
            _ => Err(PickleError::Malformed { offset, message: format!("memo slot {idx} read before it was written") }),
        }
    }
    fn pop_mark(&mut self, offset: u64) -> Result<usize, PickleError> {
        self.marks.pop().ok_or(PickleError::Malformed { offset, message: "no MARK before this opcode".into() })
    }
    fn target(&self, below: usize, tag: u64, offset: u64, what: &str) -> Result<Value, PickleError> {
        let v = below.checked_sub(1).and_then(|i| self.stack.get(i)).copied();
        match v {
            Some(v) if v.tag() == tag => Ok(v),
            _ => Err(PickleError::Malformed { offset, message: format!("{what} needs a {} below its items", if tag == T_DICT { "dict" } else { "list" }) }),
        }
    }
}

fn refused(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

/// Reads one pickle from `reader`, charging what it keeps to `budget`.
pub fn read_pickle<R: Read>(reader: R, budget: &mut Budget, limits: PickleLimits) -> Result<Pickle, PickleError> {
    let mut input = Input { inner: reader, buf: vec![0u8; 1 << 16], pos: 0, len: 0, base: 0 };
    let mut m = Machine { p: Pickle::default(), stack: Vec::new(), marks: Vec::new(), memo: Vec::new(), budget, limits, values: 0, memo_rewritten: false, memo_runs: Default::default() };
    loop {
        let at = input.offset();
        let op = match input.byte() {
            Ok(op) => op,
            Err(PickleError::Truncated { offset }) if at == 0 => return Err(PickleError::Malformed { offset, message: "empty file".into() }),
            Err(e) => return Err(e),
        };
        if let Some(name) = refused(op) {
            return Err(PickleError::Refused { offset: at, opcode: name });
        }
        match op {
            0x80 => {
                let proto = input.byte()?;
                if !(2..=5).contains(&proto) {
                    return Err(PickleError::Malformed { offset: at, message: format!("pickle protocol {proto} (snapshots use 2 to 5)") });
                }
                m.p.protocol = proto;
            }
            0x95 => {
                input.array::<8>()?; // FRAME: a length hint; the data follows inline
            }
            b'.' => {
                if !m.marks.is_empty() || m.stack.len() != 1 {
                    return Err(PickleError::Malformed { offset: at, message: format!("STOP with {} values and {} marks left on the stack", m.stack.len(), m.marks.len()) });
                }
                m.p.root = m.stack[0];
                return Ok(m.p);
            }
            b'(' => {
                if m.memo_run_cache(&mut input)? {
                    continue;
                }
                if m.marks.len() >= m.limits.max_stack {
                    return Err(PickleError::TooLarge { what: "open MARKs", limit: m.limits.max_stack as u64, needed: m.marks.len() as u64 + 1, records: true });
                }
                reserve(&mut m.marks, 1, m.budget, "the pickle's stack")?;
                m.marks.push(m.stack.len());
            }
            b'0' => {
                m.pop(at)?;
            }
            b'1' => {
                let k = m.pop_mark(at)?;
                m.stack.truncate(k);
            }
            b'2' => {
                let top = *m.stack.last().ok_or(PickleError::Malformed { offset: at, message: "DUP with an empty stack".into() })?;
                m.push(top, at)?;
            }
            b'N' => {
                m.count(1)?;
                m.push(Value::NONE, at)?;
            }
            0x88 | 0x89 => {
                m.count(1)?;
                m.push(Value::new(T_BOOL, (op == 0x88) as u64), at)?;
            }
            b'J' => {
                let v = m.int(i32::from_le_bytes(input.array()?) as i128)?;
                m.push(v, at)?;
            }
            b'K' => {
                let v = m.int(input.byte()? as i128)?;
                m.push(v, at)?;
            }
            b'M' => {
                let v = m.int(u16::from_le_bytes(input.array()?) as i128)?;
                m.push(v, at)?;
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a { input.byte()? as u64 } else { u32::from_le_bytes(input.array()?) as u64 };
                if n > 16 {
                    return Err(PickleError::Malformed { offset: at, message: format!("an integer of {n} bytes (over 128 bits; a snapshot's largest is 9)") });
                }
                let mut raw = [0u8; 16];
                for b in raw.iter_mut().take(n as usize) {
                    *b = input.byte()?;
                }
                // Two's complement, little-endian: sign-extend from the last byte given.
                if n > 0 && n < 16 && raw[n as usize - 1] & 0x80 != 0 {
                    for b in raw.iter_mut().skip(n as usize) {
                        *b = 0xff;
                    }
                }
                let v = m.int(i128::from_le_bytes(raw))?;
                m.push(v, at)?;
            }
            b'G' => {
                m.count(1)?;
                reserve(&mut m.p.floats, 1, m.budget, "the pickle's floats")?;
                m.p.floats.push(f64::from_be_bytes(input.array()?));
                let v = Value::new(T_FLOAT, m.p.floats.len() as u64 - 1);
                m.push(v, at)?;
            }
            // Strings: SHORT_BINUNICODE, BINUNICODE, BINUNICODE8.
            0x8c | b'X' | 0x8d => {
                let n = match op {
                    0x8c => input.byte()? as u64,
                    b'X' => u32::from_le_bytes(input.array()?) as u64,
                    _ => u64::from_le_bytes(input.array()?),
                };
                let v = m.text(&mut input, n, T_STR)?;
                m.push(v, at)?;
            }
            // Bytes: SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8; Python 2 str: SHORT_BINSTRING, BINSTRING.
            b'C' | b'B' | 0x8e | 0x96 | b'U' | b'T' => {
                let n = match op {
                    b'C' | b'U' => input.byte()? as u64,
                    b'B' | b'T' => u32::from_le_bytes(input.array()?) as u64,
                    _ => u64::from_le_bytes(input.array()?),
                };
                let v = m.text(&mut input, n, T_BYTES)?;
                m.push(v, at)?;
            }
            b']' | b'}' | b')' => {
                let tag = match op {
                    b']' => T_LIST,
                    b'}' => T_DICT,
                    _ => T_TUPLE,
                };
                let v = m.container(tag, &[], at)?;
                m.push(v, at)?;
            }
            b'l' | b't' | b'd' => {
                let k = m.pop_mark(at)?;
                let stack = std::mem::take(&mut m.stack);
                let items = &stack[k..];
                if op == b'd' && items.len() % 2 != 0 {
                    return Err(PickleError::Malformed { offset: at, message: "DICT with an odd number of items".into() });
                }
                let tag = match op {
                    b'l' => T_LIST,
                    b'd' => T_DICT,
                    _ => T_TUPLE,
                };
                let v = m.container(tag, items, at)?;
                m.stack = stack;
                m.stack.truncate(k);
                m.push(v, at)?;
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let floor = m.marks.last().copied().unwrap_or(0);
                if m.stack.len() < floor + n {
                    return Err(PickleError::Malformed { offset: at, message: format!("TUPLE{n} with fewer than {n} values on the stack") });
                }
                let stack = std::mem::take(&mut m.stack);
                let k = stack.len() - n;
                let v = m.container(T_TUPLE, &stack[k..], at)?;
                m.stack = stack;
                m.stack.truncate(k);
                m.push(v, at)?;
            }
            b'a' => {
                let item = m.pop(at)?;
                let list = m.target(m.stack.len(), T_LIST, at, "APPEND")?;
                m.extend(list, &[item], at)?;
            }
            b'e' => {
                let k = m.pop_mark(at)?;
                let list = m.target(k, T_LIST, at, "APPENDS")?;
                let stack = std::mem::take(&mut m.stack);
                m.extend(list, &stack[k..], at)?;
                m.stack = stack;
                m.stack.truncate(k);
            }
            b's' => {
                let value = m.pop(at)?;
                let key = m.pop(at)?;
                let dict = m.target(m.stack.len(), T_DICT, at, "SETITEM")?;
                m.extend(dict, &[key, value], at)?;
            }
            b'u' => {
                let k = m.pop_mark(at)?;
                let dict = m.target(k, T_DICT, at, "SETITEMS")?;
                if (m.stack.len() - k) % 2 != 0 {
                    return Err(PickleError::Malformed { offset: at, message: "SETITEMS with an odd number of items".into() });
                }
                let stack = std::mem::take(&mut m.stack);
                m.extend(dict, &stack[k..], at)?;
                m.stack = stack;
                m.stack.truncate(k);
            }
            b'q' => {
                let i = input.byte()? as u64;
                m.memo_put(i, at)?;
            }
            b'r' => {
                let i = u32::from_le_bytes(input.array()?) as u64;
                m.memo_put(i, at)?;
            }
            0x94 => {
                let i = m.memo.len() as u64;
                m.memo_put(i, at)?;
            }
            b'h' => {
                let i = input.byte()? as u64;
                m.memo_get(i, at)?;
            }
            b'j' => {
                let i = u32::from_le_bytes(input.array()?) as u64;
                m.memo_get(i, at)?;
                // A stack is a run of memo reads (one per frame): take them in a tight loop.
                while input.len - input.pos >= 5 && matches!(input.buf[input.pos], b'j' | b'h') {
                    let at = input.offset();
                    let i = if input.buf[input.pos] == b'j' {
                        let raw = [input.buf[input.pos + 1], input.buf[input.pos + 2], input.buf[input.pos + 3], input.buf[input.pos + 4]];
                        input.pos += 5;
                        u32::from_le_bytes(raw) as u64
                    } else {
                        input.pos += 2;
                        input.buf[input.pos - 1] as u64
                    };
                    m.memo_get(i, at)?;
                }
            }
            _ => return Err(PickleError::Unsupported { offset: at, opcode: op }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<Pickle, PickleError> {
        read_pickle(bytes, &mut Budget::new(1 << 20, u64::MAX), PickleLimits::default())
    }

    #[test]
    fn reads_a_dict_with_memo_sharing() {
        // pickle.dumps({'a': [1, 2**64-1], 'b': 'xy', 'c': (None, True, 1.5)}, protocol=4) with the list memoized and referenced twice.
        let p = read(b"\x80\x04}\x94(\x8c\x01a\x94]\x94(K\x01\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00e\x8c\x01b\x94h\x02u.").unwrap();
        let d = p.as_dict(p.root).unwrap();
        let a = p.as_seq(d.get("a").unwrap()).unwrap();
        let ints: Vec<i128> = a.iter().map(|v| p.as_int(v).unwrap()).collect();
        assert_eq!(ints, vec![1, (1i128 << 64) - 1]);
        assert_eq!(p.container_id(d.get("a").unwrap()), p.container_id(d.get("b").unwrap()));
    }

    #[test]
    fn refuses_globals_before_anything_runs() {
        let e = read(b"\x80\x02cos\nsystem\nq\x00X\x02\x00\x00\x00lsq\x01\x85q\x02Rq\x03.").unwrap_err();
        assert!(matches!(e, PickleError::Refused { offset: 2, opcode: "GLOBAL" }), "{e:?}");
    }

    #[test]
    fn repeated_memo_runs_share_storage_unless_the_memo_was_rewritten() {
        // [1, 2, 3, 4, A, B, 9, C]: A and B are the same memo reads (shared); slot 0 is
        // then rewritten to 9, so C, with the same bytes again, is [9, 2, 3, 4].
        let bytes = b"\x80\x04](K\x01\x94K\x02\x94K\x03\x94K\x04\x94](h\x00h\x01h\x02h\x03e](h\x00h\x01h\x02h\x03eK\x09q\x00](h\x00h\x01h\x02h\x03ee.";
        let p = read(bytes).unwrap();
        let outer: Vec<Value> = p.as_seq(p.root).unwrap().iter().collect();
        let ints = |v: Value| p.as_seq(v).unwrap().iter().map(|i| p.as_int(i).unwrap()).collect::<Vec<_>>();
        assert_eq!(ints(outer[4]), vec![1, 2, 3, 4]);
        assert_eq!(ints(outer[5]), vec![1, 2, 3, 4]);
        assert_eq!(p.storage_key(outer[4]), p.storage_key(outer[5]));
        assert_eq!(ints(outer[7]), vec![9, 2, 3, 4]);
    }

    #[test]
    fn negative_long1() {
        let p = read(b"\x80\x02\x8a\x02\x00\xff.").unwrap();
        assert_eq!(p.as_int(p.root), Some(-256));
    }
}
