//! Text that may reach a terminal: one rule for every renderer.
//!
//! Logs, file names and dump op names come from other people's programs. Printed
//! raw, they can retitle or clear the terminal (ESC and C1 sequences: CSI, OSC, DCS),
//! write to the clipboard (OSC 52), or rewrite the line a reader sees (backspace,
//! carriage return, bidi overrides). What is unsafe:
//!
//! - C0 controls except `\n` and `\t` (ESC, BEL, BS, CR, VT, FF, …) and DEL;
//! - C1 controls U+0080–U+009F, among them U+009B (CSI) and U+009D (OSC);
//! - the bidi embeddings, overrides and isolates U+202A–U+202E and U+2066–U+2069.
//!
//! [`clean`] removes escape sequences whole (so no `[2J` is left behind) and shows
//! every other unsafe character as a visible stand-in: a C0 control or DEL as its
//! Control Pictures symbol (`␀`, `␇`, `␈`, `␡`), a C1 or bidi control as U+FFFD (so
//! `2.0<NUL>0 GiB` stays two broken pieces, not a size); [`escape`] shows them as `\u{…}`, for names a reader must
//! still tell apart (file names); [`clean_styled`] is [`clean`] that keeps SGR colour
//! sequences (`ESC [ 1;31 m`), for a renderer's own colours applied after the
//! untrusted parts were cleaned.

use std::borrow::Cow;

/// Whether `c` must never reach a terminal as it is.
pub fn is_unsafe(c: char) -> bool {
    matches!(c, '\0'..='\x08' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Fast check on bytes: could `s` hold an unsafe character? (C1 controls are
/// encoded `C2 80`–`C2 9F`; the bidi controls `E2 80 AA`–`E2 81 A9`.)
fn maybe_unsafe(s: &str) -> bool {
    s.bytes().any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2 || b == 0xe2)
}

/// `s` without unsafe characters: escape sequences are removed whole, any other unsafe
/// character is shown by its stand-in ([`stand_in`]).
pub fn clean(s: &str) -> Cow<'_, str> {
    clean_inner(s, false)
}

/// [`clean`], keeping SGR sequences (`ESC [` digits and `;` `m`): a renderer's colours.
pub fn clean_styled(s: &str) -> Cow<'_, str> {
    clean_inner(s, true)
}

/// `s` with every unsafe character written as `\u{XX}`, so two names that differ only
/// in them stay distinct.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !maybe_unsafe(s) || !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A name given as bytes (a Unix file name) as text that keeps two names apart: valid
/// UTF-8 as it is, each byte that is not as `\xNN` (where a lossy decoding would make
/// `host\xff.log` and `host\xfe.log` the same `host\u{fffd}.log`), unsafe characters
/// as [`escape`] writes them. Only a name that already holds the text `\xNN` could meet
/// another's.
pub fn name_from_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(&escape(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// [`name_from_bytes`] of a path (on Unix its bytes; elsewhere its lossy text, escaped).
pub fn path_name(path: &std::path::Path) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        name_from_bytes(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        escape(&path.to_string_lossy()).into_owned()
    }
}

/// The visible character shown for an unsafe one: U+2400–U+241F for C0 (`␀`, `␇`,
/// `␈`), U+2421 `␡` for DEL, U+FFFD for C1 and bidi controls.
pub fn stand_in(c: char) -> char {
    match c {
        '\0'..='\x1f' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\x7f' => '\u{2421}',
        _ => '\u{fffd}',
    }
}

/// What follows an introducer: a control sequence (CSI) ends at a final byte
/// 0x40–0x7E; a string (OSC, DCS, SOS, PM, APC) ends at BEL or ST.
#[derive(Clone, Copy)]
enum Seq {
    Csi,
    Str,
}

fn clean_inner(s: &str, keep_sgr: bool) -> Cow<'_, str> {
    if !maybe_unsafe(s) || !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if !is_unsafe(c) {
            out.push(c);
            i += 1;
            continue;
        }
        // Which sequence (if any) this character opens, and where its body starts.
        let (seq, body) = match c {
            '\x1b' => match chars.get(i + 1) {
                Some('[') => (Some(Seq::Csi), i + 2),
                Some(']' | 'P' | 'X' | '^' | '_') => (Some(Seq::Str), i + 2),
                // Two-character escapes (ESC c, ESC 7, …): drop both.
                Some(n) if ('\x20'..='\x7e').contains(n) => (None, i + 2),
                _ => (None, i + 1),
            },
            '\u{9b}' => (Some(Seq::Csi), i + 1),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => (Some(Seq::Str), i + 1),
            _ => (None, i + 1),
        };
        let end = match seq {
            // A lone control (BEL, BS, NUL, a bidi override): visible, and still a break
            // between what it separated. A two-character escape (`ESC 7`) just goes.
            None if c == '\x1b' => body,
            None => {
                out.push(stand_in(c));
                body
            }
            Some(Seq::Csi) => {
                let mut j = body;
                while j < chars.len() && !('\x40'..='\x7e').contains(&chars[j]) {
                    // A control inside the parameters ends the (broken) sequence.
                    if is_unsafe(chars[j]) {
                        break;
                    }
                    j += 1;
                }
                if j < chars.len() && ('\x40'..='\x7e').contains(&chars[j]) {
                    let sgr = c == '\x1b' && chars[j] == 'm' && chars[body..j].iter().all(|d| d.is_ascii_digit() || *d == ';');
                    if keep_sgr && sgr {
                        out.extend(&chars[i..=j]);
                    }
                    j + 1
                } else {
                    j
                }
            }
            Some(Seq::Str) => {
                let mut j = body;
                loop {
                    match chars.get(j) {
                        None => break j,
                        Some('\x07' | '\u{9c}') => break j + 1,
                        Some('\x1b') if chars.get(j + 1) == Some(&'\\') => break j + 2,
                        // Another introducer ends an unterminated string where it begins.
                        Some('\x1b' | '\u{9b}' | '\u{9d}') => break j,
                        Some(_) => j += 1,
                    }
                }
            }
        };
        i = end.max(i + 1);
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_that_differ_in_an_invalid_byte_stay_apart() {
        use super::name_from_bytes;
        assert_eq!(name_from_bytes(b"host\xff.log"), "host\\xff.log");
        assert_ne!(name_from_bytes(b"host\xff.log"), name_from_bytes(b"host\xfe.log"));
        assert_eq!(name_from_bytes("r\u{e9}sum\u{e9}.log".as_bytes()), "r\u{e9}sum\u{e9}.log");
        assert_eq!(name_from_bytes(b"a\x1b]0;x\x07.log"), "a\\u{1b}]0;x\\u{7}.log");
    }

    use super::*;

    #[test]
    fn safe_text_is_borrowed() {
        assert!(matches!(clean("CUDA out of memory. 内存不足\tx\n"), Cow::Borrowed(_)));
        assert!(matches!(escape("host1.log"), Cow::Borrowed(_)));
        // Other characters whose UTF-8 starts with C2 or E2 are safe.
        assert_eq!(clean("£ 1.5 × 2 → ‘a’ — …"), "£ 1.5 × 2 → ‘a’ — …");
    }

    #[test]
    fn seven_bit_sequences_go_whole() {
        assert_eq!(clean("a\x1b]0;PWNED\x07b\x1b[2J\x1b[Hc"), "abc");
        assert_eq!(clean("a\x1b]52;c;SGVsbG8=\x1b\\b"), "ab");
        assert_eq!(clean("a\x1bPq#0;2;0;0;0\x1b\\b"), "ab");
        assert_eq!(clean("a\x1bcb"), "ab");
        assert_eq!(clean("unterminated \x1b]0;title"), "unterminated ");
    }

    #[test]
    fn c1_controls_and_their_sequences_go() {
        assert_eq!(clean("gmm\u{9b}2J\u{9b}H.1"), "gmm.1");
        assert_eq!(clean("a\u{9d}0;PWNED\u{9c}b"), "ab");
        assert_eq!(clean("a\u{9d}0;PWNED\x07b"), "ab");
        assert_eq!(clean("a\u{85}b\u{80}c"), "a\u{fffd}b\u{fffd}c");
    }

    #[test]
    fn c0_del_and_bidi_go_newline_and_tab_stay() {
        assert_eq!(clean("evil\x08\x08good\x07\x7f\r"), "evil␈␈good␇␡␍");
        assert_eq!(clean("x\u{202e}gpj.exe\u{2069}"), "x\u{fffd}gpj.exe\u{fffd}");
        assert_eq!(clean("2.0\u{0}0 GiB"), "2.0␀0 GiB", "a break stays a break");
        assert_eq!(clean("a\tb\nc"), "a\tb\nc");
    }

    #[test]
    fn styled_keeps_only_sgr() {
        assert_eq!(clean_styled("\x1b[1;31merror\x1b[0m \x1b[2J\x1b]0;t\x07x"), "\x1b[1;31merror\x1b[0m x");
        assert_eq!(clean("\x1b[1;31merror\x1b[0m"), "error");
        assert_eq!(clean_styled("\u{9b}31m"), "", "a C1 CSI is never a colour of ours");
    }

    #[test]
    fn escape_shows_what_was_there() {
        assert_eq!(escape("host\x1b]0;P\x07.log"), "host\\u{1b}]0;P\\u{7}.log");
        assert_eq!(escape("a\u{9b}b\u{202e}"), "a\\u{9b}b\\u{202e}");
        assert_ne!(escape("a\u{9b}"), escape("a\u{9d}"));
    }

    #[test]
    fn nothing_unsafe_survives_any_input() {
        // Every character from U+0000 to U+2100 in one string, in both orders.
        let all: String = (0u32..0x2100).filter_map(char::from_u32).collect();
        let rev: String = all.chars().rev().collect();
        for s in [all, rev] {
            assert!(!clean(&s).chars().any(is_unsafe));
            assert!(!escape(&s).chars().any(is_unsafe));
            assert!(!clean_styled(&s).chars().any(|c| is_unsafe(c) && c != '\x1b'));
        }
    }
}
