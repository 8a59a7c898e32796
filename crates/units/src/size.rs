//! Printed byte sizes.
//!
//! Accelerator stacks print sizes in several styles:
//! * libtpu / XLA:TPU: `16.00M`, `1.7K`, `63.80G`, `0B` — binary multiples without the "i";
//! * tsl `HumanReadableNumBytes` and PyTorch: `2.26 GiB`, `48.0KiB`, `512B`, `0 bytes`;
//! * PyTorch MPS (older builds): `15.05 GB` — divided by 1024³ despite the label;
//! * raw integers (`3199993600 bytes`, `(184549376B)`) and hex (`0xc400`).
//!
//! A printed size is a rounded display; the byte value is computed with exact
//! rational arithmetic (decimal mantissa × unit, rounded half-up), so
//! `2.26 GiB` is always 2426656522 bytes, on every platform.

use serde::Serialize;

/// How unit letters without an "i" are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitStyle {
    /// `K`, `M`, `G`, `KB`, `MB`, `GB` are powers of 1024 (XLA, TPU runtime, PyTorch MPS, TF).
    Binary,
    /// `KB`, `MB`, `GB` are powers of 1000 (SI). `KiB` etc. stay binary.
    Decimal,
}

/// A size as printed in a log, with its value in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrintedSize {
    /// Bytes, computed exactly from the printed mantissa and unit.
    pub bytes: u64,
    /// The text as it appeared (trimmed), e.g. `"16.00M"`.
    pub text: String,
    /// True when the text states the byte count exactly (an integer number of bytes,
    /// or a hex value), false when it is a rounded display such as `2.26 GiB`.
    pub exact: bool,
}

/// Parse a printed size with binary reading of unsuffixed units (the common case).
pub fn parse_size(text: &str) -> Option<PrintedSize> {
    parse_size_in(text, UnitStyle::Binary)
}

/// Parse a printed size: `<number>[ ]<unit>` or hex `0x…`. Returns `None` for
/// anything that is not a size (no panics, no overflow: values past u64 are `None`).
pub fn parse_size_in(text: &str, style: UnitStyle) -> Option<PrintedSize> {
    let t = text.trim();
    if t.is_empty() || t.len() > 64 {
        return None;
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let hex = hex.trim_end_matches(|c: char| c == 'B' || c == ' ');
        let v = u64::from_str_radix(hex, 16).ok()?;
        return Some(PrintedSize { bytes: v, text: t.to_string(), exact: true });
    }
    // Split the numeric mantissa from the unit.
    let num_end = t
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == ','))
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    let (num, rest) = t.split_at(num_end);
    let num: String = num.chars().filter(|&c| c != ',').collect();
    if num.is_empty() || num.starts_with('.') {
        return None;
    }
    // Spaces before the unit, also an undecodable one (a CP1252 no-break space).
    let unit = rest.trim_matches(|c: char| c.is_whitespace() || c == '\u{fffd}');
    // A byte count is a whole number: `3.00` or `3.` with no unit is a size whose unit
    // was lost (a broken or cut line), never 3 bytes.
    if unit.is_empty() && num.contains('.') {
        return None;
    }
    let (int_part, frac_part) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if int_part.is_empty() || frac_part.contains('.') || frac_part.len() > 12 {
        return None;
    }
    let (mult, exact_unit): (u128, bool) = match unit {
        "" | "B" | "b" | "byte" | "bytes" | "Bytes" => (1, true),
        "K" | "k" | "KiB" | "kiB" => (1 << 10, false),
        "M" | "MiB" => (1 << 20, false),
        "G" | "GiB" => (1 << 30, false),
        "T" | "TiB" => (1 << 40, false),
        "P" | "PiB" => (1 << 50, false),
        "E" | "EiB" => (1 << 60, false),
        "kib" | "KIB" => (1 << 10, false),
        "mib" | "MIB" => (1 << 20, false),
        "gib" | "GIB" => (1 << 30, false),
        "tib" | "TIB" => (1 << 40, false),
        "KB" | "kB" | "Kb" | "kb" => (unit_mult(style, 1), false),
        "MB" | "Mb" | "mb" => (unit_mult(style, 2), false),
        "GB" | "Gb" | "gb" => (unit_mult(style, 3), false),
        "TB" | "tb" => (unit_mult(style, 4), false),
        "PB" => (unit_mult(style, 5), false),
        _ => return None,
    };
    let digits = format!("{int_part}{frac_part}");
    if digits.len() > 30 {
        return None;
    }
    let mantissa: u128 = digits.parse().ok()?;
    let scale: u128 = 10u128.checked_pow(frac_part.len() as u32)?;
    let numer = mantissa.checked_mul(mult)?;
    // Round half up.
    let bytes = (numer + scale / 2) / scale;
    let bytes = u64::try_from(bytes).ok()?;
    let exact = exact_unit && frac_part.is_empty();
    Some(PrintedSize { bytes, text: t.to_string(), exact })
}

fn unit_mult(style: UnitStyle, power: u32) -> u128 {
    match style {
        UnitStyle::Binary => 1u128 << (10 * power),
        UnitStyle::Decimal => 1000u128.pow(power),
    }
}

/// Format bytes for people: `18.00 MiB`, `512 B`, `1.50 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.2} {unit}")
}

/// Like [`format_bytes`] but signed, for deltas: `-2.55 GiB`.
pub fn format_bytes_signed(bytes: i128) -> String {
    if bytes < 0 {
        format!("-{}", format_bytes(bytes.unsigned_abs().min(u64::MAX as u128) as u64))
    } else {
        format_bytes(bytes.min(u64::MAX as i128) as u64)
    }
}

/// Compact form for tables: `18.0M`, `512B`.
pub fn format_bytes_short(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["K", "M", "G", "T", "P", "E"];
    if bytes < 1024 {
        return format!("{bytes}B");
    }
    let mut value = bytes as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> u64 {
        parse_size(s).unwrap_or_else(|| panic!("no size in {s:?}")).bytes
    }

    #[test]
    fn tpu_binary_without_i() {
        assert_eq!(b("16.00M"), 16 << 20);
        assert_eq!(b("1.7K"), 1741); // 1.7 * 1024 = 1740.8
        assert_eq!(b("0B"), 0);
        assert_eq!(b("30.75G"), 33017561088);
    }

    #[test]
    fn tsl_and_pytorch() {
        assert_eq!(b("2.26 GiB"), 2426656522);
        assert_eq!(b("48.0KiB"), 49152);
        assert_eq!(b("0 bytes"), 0);
        assert_eq!(b("3199993600 bytes"), 3199993600);
        assert!(parse_size("3199993600 bytes").unwrap().exact);
        assert!(!parse_size("2.26 GiB").unwrap().exact);
        assert_eq!(b("184549376B"), 184549376);
    }

    #[test]
    fn a_fraction_without_its_unit_is_no_size() {
        // D34–D37 of the 2026-11-26 round: the unit after two spaces or an undecodable
        // space was lost, and `3.00` became 3 bytes.
        assert_eq!(parse_size("3.00"), None);
        assert_eq!(parse_size("3."), None);
        assert_eq!(b("3.00  GiB"), 3 << 30);
        assert_eq!(b("3.00\u{fffd}GiB"), 3 << 30);
        assert_eq!(b("3"), 3);
    }

    #[test]
    fn hex_and_commas() {
        assert_eq!(b("0xc400"), 50176);
        assert_eq!(b("0x29000"), 167936);
        assert_eq!(b("6,532,939,776 bytes"), 6532939776);
    }

    #[test]
    fn any_whitespace_between_number_and_unit() {
        // Two spaces, a no-break space (U+00A0, also what a Windows-1252 0xA0 byte decodes to),
        // a narrow no-break space: the unit still applies.
        for s in ["3.00  GiB", "3.00\u{a0}GiB", "3.00 \u{a0}GiB", "3.00\u{202f}GiB", "3.00 gib"] {
            assert_eq!(b(s), 3 << 30, "{s:?}");
        }
    }

    #[test]
    fn decimal_style() {
        assert_eq!(parse_size_in("1.5 GB", UnitStyle::Decimal).unwrap().bytes, 1_500_000_000);
        assert_eq!(parse_size_in("1.5 GiB", UnitStyle::Decimal).unwrap().bytes, 1610612736);
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "abc", ".5G", "1..2G", "5 Q", "99999999999999999999999999G", "1.2.3M"] {
            assert!(parse_size(s).is_none(), "{s}");
        }
    }

    #[test]
    fn formatting() {
        assert_eq!(format_bytes(18 << 20), "18.00 MiB");
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes_short(49152), "48.0K");
        assert_eq!(format_bytes_signed(-(2 << 30)), "-2.00 GiB");
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in ".{0,80}") {
            let _ = parse_size(&s);
            let _ = parse_size_in(&s, UnitStyle::Decimal);
        }
        #[test]
        fn integer_bytes_roundtrip(n in 0u64..u64::MAX) {
            let p = parse_size(&format!("{n} bytes")).unwrap();
            proptest::prop_assert_eq!(p.bytes, n);
        }
    }
}
