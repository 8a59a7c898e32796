//! Shared vocabulary of oomdoc: byte sizes as the accelerator stacks print them,
//! element types, and XLA shapes with TPU tiled layouts.
//!
//! Every other crate (diagnose, memory, plan) measures bytes through this one,
//! so a size printed as `16.00M` by libtpu, `2.26 GiB` by PyTorch or `0xc400` by
//! ptxas means the same thing everywhere.

pub mod dtype;
pub mod shape;
pub mod size;
pub mod terminal;

pub use dtype::DType;
pub use shape::{Layout, Shape, ShapeError, Tile};
pub use size::{format_bytes, format_bytes_short, format_bytes_signed, parse_size, parse_size_in, PrintedSize, UnitStyle};
