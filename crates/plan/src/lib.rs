//! Kernel on-chip memory planner: what a Pallas TPU `pallas_call` needs in VMEM/SMEM and
//! what a Triton matmul needs in shared memory, computed before any compile, with the
//! chip's limit and what to change when it does not fit.
//!
//! * [`pallas`]: spec parsing (TOML/JSON), VMEM/SMEM model, block legality (E2002);
//! * [`triton`]: `metadata.shared` of the tutorial matmul by Triton version and target;
//! * [`search`]: ranked tile search for TPU matmuls and Triton configs;
//! * [`render`]: the text output of `oomdoc plan`.
//!
//! The models and their sources are documented in `docs/plan.md`.

pub mod error;
pub mod pallas;
pub mod render;
pub mod search;
pub mod tpu_layout;
pub mod triton;

pub use error::PlanError;

pub use triton::{triton_fit_hint, TritonFitHint};
