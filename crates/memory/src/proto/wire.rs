//! Protocol-buffer wire format, read zero-copy: every read is bounds-checked and returns
//! an error instead of panicking on truncated or hostile input. [`Writer`] writes the
//! same format, for the tests, benchmarks and examples that craft protos.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub offset: usize,
    pub message: &'static str,
}

pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the whole file, for error messages.
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0, base: 0 }
    }

    pub fn nested(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    /// File offset where the next field starts.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn err(&self, message: &'static str) -> WireError {
        WireError { offset: self.base + self.pos, message }
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, WireError> {
        // Most varints (keys, small ids) are one byte.
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.varint_slow()
    }

    fn varint_slow(&mut self) -> Result<u64, WireError> {
        let mut result = 0u64;
        for shift in (0..70).step_by(7) {
            let &byte = self.buf.get(self.pos).ok_or_else(|| self.err("truncated varint"))?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(self.err("varint longer than 64 bits"));
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(result);
            }
        }
        Err(self.err("varint longer than 10 bytes"))
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or_else(|| self.err("field runs past the end of its message"))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next (field number, value, offset of the value in the file), or `None` at the end.
    #[inline]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>, usize)>, WireError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 || field > u64::from(u32::MAX >> 3) {
            return Err(self.err("invalid field number"));
        }
        let value_at = self.offset();
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes"))),
            2 => {
                let len = self.varint()?;
                let len = usize::try_from(len).map_err(|_| self.err("length does not fit in memory"))?;
                let value_at = self.offset();
                let bytes = self.take(len)?;
                return Ok(Some((field as u32, Value::Bytes(bytes), value_at)));
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes"))),
            _ => return Err(self.err("unsupported wire type (groups or corrupt data)")),
        };
        Ok(Some((field as u32, value, value_at)))
    }
}

impl<'a> Value<'a> {
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(u64::from(v)),
            Value::Bytes(_) => None,
        }
    }
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// A repeated integer field, packed (one `Bytes`) or not (one `Varint` per element).
pub fn push_ints(value: Value<'_>, base: usize, out: &mut Vec<u64>) -> Result<(), WireError> {
    match value {
        Value::Bytes(b) => {
            let mut r = Reader::nested(b, base);
            while r.pos < b.len() {
                out.push(r.varint()?);
            }
            Ok(())
        }
        other => {
            out.push(other.as_u64().unwrap_or(0));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_rejects_garbage() {
        // field 1 varint 150, field 2 bytes "hi"
        let buf = [0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i'];
        let mut r = Reader::new(&buf);
        assert_eq!(r.next_field().unwrap().map(|x| (x.0, x.1)), Some((1, Value::Varint(150))));
        assert_eq!(r.next_field().unwrap().map(|x| (x.0, x.1)), Some((2, Value::Bytes(b"hi"))));
        assert_eq!(r.next_field().unwrap(), None);
        assert!(Reader::new(&[0x12, 0x05, b'a']).next_field().is_err());
        assert!(Reader::new(&[0x08]).next_field().is_err());
        assert!(Reader::new(&[0x0b]).next_field().is_err());
        assert!(Reader::new(&[0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).next_field().is_err());
    }
}

/// Writes protocol-buffer fields (for crafting test, benchmark and example inputs).
#[derive(Debug, Default, Clone)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A varint field.
    pub fn int(&mut self, field: u32, v: u64) {
        self.varint(u64::from(field) << 3);
        self.varint(v);
    }

    /// A length-delimited field.
    pub fn bytes(&mut self, field: u32, b: &[u8]) {
        self.varint((u64::from(field) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// A nested message written by `f`.
    pub fn msg(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer(Vec::new());
        f(&mut inner);
        self.bytes(field, &inner.0);
    }
}
