//! Library-only driver (no CLI): `cargo run -p oomdoc-memory --example memview -- DIR [text|json|html]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dump = oomdoc_memory::load_dump(std::path::Path::new(&args[1])).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let reports: Vec<_> = dump.modules.iter().filter_map(|m| m.analyze(Default::default()).map_err(|e| eprintln!("{e}")).ok()).collect();
    let report = oomdoc_memory::MemoryReport { modules: reports };
    match args.get(2).map(String::as_str) {
        Some("json") => print!("{}", oomdoc_memory::render::json::render(&report)),
        Some("html") => print!("{}", oomdoc_memory::render::html::render(&report, &[])),
        _ => {
            for r in &report.modules {
                print!("{}", oomdoc_memory::render::text::render_module(r, &Default::default()));
            }
        }
    }
}
