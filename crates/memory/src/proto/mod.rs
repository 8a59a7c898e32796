//! The binary input path: `*.hlo.pb` (`--xla_dump_hlo_as_proto`) and XProf's
//! `*.hlo_proto.pb`, both an `xla.HloProto` holding the module and a
//! `BufferAssignmentProto` with the heap-simulator trace. Decoded with a small
//! wire-format reader and only the field numbers this analysis needs.

pub mod hlo;
pub mod wire;
