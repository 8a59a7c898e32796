//! XLA array shapes with layouts, and their padded size under TPU tiling.
//!
//! A shape prints as `<dtype>[d0,d1,...]{<minor_to_major>:<attributes>}`, e.g.
//! `bf16[2048,4096]{1,0:T(8,128)(2,1)}` (`xla/layout.cc`, `docs/tiled_layout.md`).
//! Tiles are applied in turn to the most-minor physical dimensions: each tiled dim
//! is rounded up to a multiple of the tile and split into (count, tile) — see
//! [`Shape::padded_bytes`]. The E0102 documentation sample is the check:
//! `bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}` is 5,242,880 bytes while
//! `bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}` is 1,638,400.

use crate::DType;
use serde::Serialize;
use std::fmt;

/// One tile dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Tile {
    /// Round to a multiple of this many elements.
    Size(u64),
    /// `*`: combine this dimension with the next more-minor one.
    Combine,
}

/// The part of a shape between braces.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// Dimension indices from fastest-varying (minor) to slowest (major).
    pub minor_to_major: Vec<usize>,
    /// Tiles `T(a,b)(c,d)…`, applied in order.
    pub tiles: Vec<Vec<Tile>>,
    /// `E(n)`: element size in bits, overriding the dtype's.
    pub element_bits: Option<u32>,
    /// `S(n)`: memory space (0 default/HBM, 1 fast memory such as VMEM, 5 host).
    pub memory_space: Option<u32>,
}

/// An array shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub dtype: DType,
    /// Logical dimensions, major-to-minor as printed. A dynamic `<=N` dim is kept as its bound N.
    pub dims: Vec<u64>,
    pub layout: Option<Layout>,
}

/// Why a shape string could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    Syntax { text: String, reason: &'static str },
    UnknownDType(String),
    /// Byte count does not fit in 64 bits.
    Overflow(String),
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::Syntax { text, reason } => write!(f, "cannot read shape `{text}`: {reason}"),
            ShapeError::UnknownDType(d) => write!(f, "unknown element type `{d}`"),
            ShapeError::Overflow(s) => write!(f, "shape `{s}` has more bytes than fit in 64 bits"),
        }
    }
}
impl std::error::Error for ShapeError {}

fn syntax(text: &str, reason: &'static str) -> ShapeError {
    ShapeError::Syntax { text: text.chars().take(120).collect(), reason }
}

impl Shape {
    /// Parse one array shape such as `f32[32,4096,4096]{1,2,0:T(8,128)}` or `s32[8]{0}`.
    /// Leading `%`/whitespace is not accepted; pass the shape token itself.
    pub fn parse(text: &str) -> Result<Shape, ShapeError> {
        let t = text.trim();
        let open = t.find('[').ok_or_else(|| syntax(t, "no `[`"))?;
        let dtype_s = &t[..open];
        let dtype = DType::from_xla(dtype_s).ok_or_else(|| ShapeError::UnknownDType(dtype_s.chars().take(40).collect()))?;
        let close = t[open..].find(']').map(|i| i + open).ok_or_else(|| syntax(t, "no `]`"))?;
        let dims_s = &t[open + 1..close];
        let mut dims = Vec::new();
        if !dims_s.trim().is_empty() {
            for d in dims_s.split(',') {
                let d = d.trim().trim_start_matches("<=");
                if d == "?" {
                    return Err(syntax(t, "unbounded dynamic dimension"));
                }
                let v: u64 = d.parse().map_err(|_| syntax(t, "dimension is not an integer"))?;
                dims.push(v);
            }
        }
        if dims.len() > 64 {
            return Err(syntax(t, "more than 64 dimensions"));
        }
        let rest = t[close + 1..].trim();
        let layout = if rest.is_empty() {
            None
        } else {
            let inner = rest
                .strip_prefix('{')
                .and_then(|r| r.rfind('}').map(|i| &r[..i]))
                .ok_or_else(|| syntax(t, "layout is not in braces"))?;
            Some(parse_layout(inner, dims.len()).map_err(|r| syntax(t, r))?)
        };
        Ok(Shape { dtype, dims, layout })
    }

    /// Number of elements (checked).
    pub fn elements(&self) -> Option<u64> {
        self.dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    fn bits(&self) -> u32 {
        self.layout.as_ref().and_then(|l| l.element_bits).unwrap_or(self.dtype.bits())
    }

    /// Bytes of the logical array with no padding.
    pub fn unpadded_bytes(&self) -> Result<u64, ShapeError> {
        let elems = self.elements().ok_or_else(|| ShapeError::Overflow(self.to_string()))? as u128;
        let bytes = (elems * self.bits() as u128 + 7) / 8;
        u64::try_from(bytes).map_err(|_| ShapeError::Overflow(self.to_string()))
    }

    /// Bytes the array occupies under its tiled layout (equal to the unpadded size
    /// when the layout has no tiles).
    pub fn padded_bytes(&self) -> Result<u64, ShapeError> {
        let Some(layout) = self.layout.as_ref().filter(|l| !l.tiles.is_empty()) else {
            return self.unpadded_bytes();
        };
        let overflow = || ShapeError::Overflow(self.to_string());
        // Physical order, major to minor.
        let mut phys: Vec<u128> = if layout.minor_to_major.len() == self.dims.len() {
            layout.minor_to_major.iter().rev().map(|&i| self.dims[i] as u128).collect()
        } else {
            self.dims.iter().map(|&d| d as u128).collect()
        };
        for tile in &layout.tiles {
            let k = tile.len();
            while phys.len() < k {
                phys.insert(0, 1);
            }
            let base = phys.len() - k;
            let mut counts = Vec::with_capacity(k);
            let mut sizes = Vec::with_capacity(k);
            let mut j = 0;
            while j < k {
                let d = phys[base + j];
                match tile[j] {
                    Tile::Size(0) => return Err(syntax(&self.to_string(), "zero tile dimension")),
                    Tile::Size(ts) => {
                        let ts = ts as u128;
                        counts.push((d + ts - 1) / ts);
                        sizes.push(ts);
                    }
                    Tile::Combine => {
                        // `*` folds this dim into the next more-minor one.
                        if j + 1 < k {
                            phys[base + j + 1] = phys[base + j + 1].checked_mul(d).ok_or_else(overflow)?;
                        }
                        counts.push(1);
                        sizes.push(1);
                    }
                }
                j += 1;
            }
            phys.truncate(base);
            phys.extend(counts);
            phys.extend(sizes);
        }
        let elems = phys.iter().try_fold(1u128, |acc, &d| acc.checked_mul(d)).ok_or_else(overflow)?;
        let bytes = elems.checked_mul(self.bits() as u128).ok_or_else(overflow)?.div_ceil(8);
        u64::try_from(bytes).map_err(|_| overflow())
    }
}

fn parse_layout(inner: &str, rank: usize) -> Result<Layout, &'static str> {
    let (m2m, attrs) = match inner.split_once(':') {
        Some((a, b)) => (a, b),
        None => (inner, ""),
    };
    let mut layout = Layout::default();
    if !m2m.trim().is_empty() {
        for p in m2m.split(',') {
            let v: usize = p.trim().parse().map_err(|_| "minor_to_major is not a list of integers")?;
            if v >= rank {
                return Err("minor_to_major names a dimension past the rank");
            }
            layout.minor_to_major.push(v);
        }
        if layout.minor_to_major.len() != rank {
            return Err("minor_to_major length differs from the rank");
        }
    }
    let b = attrs.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'T' => {
                i += 1;
                while i < b.len() && b[i] == b'(' {
                    let end = attrs[i..].find(')').ok_or("unclosed tile")? + i;
                    let mut tile = Vec::new();
                    for p in attrs[i + 1..end].split(',') {
                        let p = p.trim();
                        if p == "*" {
                            tile.push(Tile::Combine);
                        } else {
                            tile.push(Tile::Size(p.parse().map_err(|_| "tile dimension is not an integer")?));
                        }
                    }
                    if tile.is_empty() || tile.len() > 8 {
                        return Err("bad tile rank");
                    }
                    layout.tiles.push(tile);
                    i = end + 1;
                }
            }
            b'E' | b'S' if b.get(i + 1) == Some(&b'(') => {
                let end = attrs[i..].find(')').ok_or("unclosed attribute")? + i;
                let v: u32 = attrs[i + 2..end].trim().parse().map_err(|_| "attribute is not an integer")?;
                if b[i] == b'E' {
                    if v == 0 || v > 1024 {
                        return Err("element size out of range");
                    }
                    layout.element_bits = Some(v);
                } else {
                    layout.memory_space = Some(v);
                }
                i = end + 1;
            }
            b'(' => {
                // Skip any other parenthesised attribute body, nesting-aware (`P(f32[..])`, `#(s32)`).
                let mut depth = 0usize;
                while i < b.len() {
                    match b[i] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    Ok(layout)
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")?;
        if let Some(l) = &self.layout {
            f.write_str("{")?;
            for (i, d) in l.minor_to_major.iter().enumerate() {
                if i > 0 {
                    f.write_str(",")?;
                }
                write!(f, "{d}")?;
            }
            if !l.tiles.is_empty() || l.element_bits.is_some() || l.memory_space.is_some() {
                f.write_str(":")?;
            }
            if !l.tiles.is_empty() {
                f.write_str("T")?;
                for t in &l.tiles {
                    f.write_str("(")?;
                    for (i, d) in t.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        match d {
                            Tile::Size(s) => write!(f, "{s}")?,
                            Tile::Combine => f.write_str("*")?,
                        }
                    }
                    f.write_str(")")?;
                }
            }
            if let Some(e) = l.element_bits {
                write!(f, "E({e})")?;
            }
            if let Some(s) = l.memory_space {
                write!(f, "S({s})")?;
            }
            f.write_str("}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn padded(s: &str) -> u64 {
        Shape::parse(s).unwrap().padded_bytes().unwrap()
    }

    #[test]
    fn e0102_doc_sample() {
        assert_eq!(padded("bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}"), 5_242_880);
        assert_eq!(padded("bf16[16,1280,40]{1,2,0:T(8,128)(2,1)}"), 1_638_400);
    }

    #[test]
    fn logged_padding_examples() {
        assert_eq!(padded("bf16[2048,4096]{1,0:T(8,128)(2,1)}"), 16 << 20);
        assert_eq!(padded("f32[512,245,256]{2,1,0:T(8,128)}"), 124 << 20);
        assert_eq!(Shape::parse("f32[512,245,256]{2,1,0:T(8,128)}").unwrap().unpadded_bytes().unwrap(), 128_450_560);
        assert_eq!(padded("u32[12582912,1]{1,0:T(8,128)}"), 6 << 30);
        assert_eq!(padded("f32[4,128,128,9,18]{4,3,0,2,1:T(8,128)}"), 512 << 20);
        assert_eq!(padded("u8[327680,327680]{1,0:T(8,128)(4,1)}"), 107_374_182_400);
        assert_eq!(padded("f32[128,6]{1,0:T(8,128)}"), 64 << 10);
        assert_eq!(padded("f32[32,4096,4096]{1,2,0:T(8,128)}"), 2 << 30);
    }

    #[test]
    fn untiled_and_scalars() {
        assert_eq!(padded("s32[8]{0}"), 32);
        assert_eq!(padded("f32[]"), 4);
        assert_eq!(padded("s4[3]{0:E(4)}"), 2);
        assert_eq!(padded("bf16[16,24,128]{2,1,0:T(8,128)(2,1)S(1)}"), 16 * 24 * 128 * 2);
        let s = Shape::parse("bf16[16,24,128]{2,1,0:T(8,128)(2,1)S(1)}").unwrap();
        assert_eq!(s.layout.unwrap().memory_space, Some(1));
    }

    #[test]
    fn errors_not_panics() {
        for s in ["", "f32", "x9[1]", "f32[1,a]", "f32[1]{5}", "f32[1]{0:T(0)}", "f32[99999999999,99999999999,99999999999]{2,1,0:T(8,128)}"] {
            let r = Shape::parse(s).and_then(|x| x.padded_bytes());
            assert!(r.is_err(), "{s}");
        }
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "[a-z0-9]{1,5}\\[[0-9,<=?]{0,20}\\](\\{[0-9,:T()*ES]{0,30}\\})?") {
            if let Ok(sh) = Shape::parse(&s) {
                let _ = sh.padded_bytes();
                let _ = sh.unpadded_bytes();
                let _ = sh.to_string();
            }
        }
    }
}
