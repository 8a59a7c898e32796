//! `cargo run -p oomdoc-memory --example xplane_trim -- IN.xplane.pb OUT.xplane.pb`:
//! keep only the `/host:metadata` plane of a profile (the HloProtos), drop the trace events.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: xplane_trim IN.xplane.pb OUT.xplane.pb");
        std::process::exit(2);
    }
    match oomdoc_memory::xplane::trim_to_metadata(std::path::Path::new(&args[1]), std::path::Path::new(&args[2])) {
        Ok(n) => println!("{}: {n} bytes", args[2]),
        Err(e) => {
            eprintln!("xplane_trim: {e}");
            std::process::exit(1);
        }
    }
}
