//! `oomdoc-memory`: an offline XLA memory viewer.
//!
//! Reads the dumps XLA writes with `XLA_FLAGS=--xla_dump_to=DIR` (text buffer
//! assignment + live ranges, or the `*.hlo.pb` HloProto) and reports, per module, the
//! peak memory, the buffers live at the peak and memory over program order, with the
//! same numbers as XProf's Memory Viewer and `compile().memory_analysis()`.
//! A `jax.profiler.trace` log directory (or its `<host>.xplane.pb`) works too: the
//! modules' HloProtos are read from the XSpace's metadata plane ([`xplane`],
//! [`profile`]). [`spaces`] handles memory spaces other than the device's (host offload).
//!
//! ```no_run
//! let dump = oomdoc_memory::load_dump(std::path::Path::new("/tmp/dump"))?;
//! let module = dump.select("jit_train_step")?;
//! let report = module.analyze(oomdoc_memory::SourcePreference::Auto)?;
//! println!("{}", oomdoc_memory::render::text::render_module(&report, &Default::default()));
//! # Ok::<(), oomdoc_memory::MemoryError>(())
//! ```

pub mod analysis;
pub mod dump;
pub mod error;
pub mod gpu_oom;
pub mod gz;
pub mod inplace;
pub mod labels;
pub mod loader;
pub mod model;
pub mod profile;
pub mod proto;
pub mod pytorch;
pub mod render;
pub mod replay;
pub mod report;
pub mod spaces;
pub mod summary;
pub mod text;
pub mod xplane;

pub use analysis::Axis;
pub use dump::{load_dump, load_dump_paths, load_dump_with, Dump, LoadOptions, DumpModule, ModuleFiles, SourcePreference};
pub use error::MemoryError;
pub use loader::{Limits, DECODE_SLACK_BYTES, MAX_BYTES_PER_INPUT_BYTE};
pub use gpu_oom::{parse_buffer_assignment_oom_report, GpuOomReport, GpuPeakBuffer};
pub use report::{BufferAtPeak, MemoryReport, ModuleReport, TimelinePoint};
pub use summary::{list_modules, summarize_module, AllModules, ModuleListing, ModuleSummary};
