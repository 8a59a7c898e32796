//! Views of a [`crate::MemoryReport`]: a short terminal report, the JSON contract, and
//! one self-contained HTML file.

pub mod html;
pub mod json;
pub mod text;
