use crate::report::ModuleReport;
#[derive(Debug, Clone)]
pub struct TextOptions { pub top: usize, pub width: usize }
impl Default for TextOptions { fn default() -> Self { TextOptions { top: 10, width: 60 } } }
pub fn render_module(r: &ModuleReport, _o: &TextOptions) -> String { format!("{} {}", r.name, r.peak_bytes) }
