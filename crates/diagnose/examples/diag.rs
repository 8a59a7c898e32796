//! Debug helper: `cargo run -p oomdoc-diagnose --example diag < log` prints the JSON report.
fn main() {
    let r = oomdoc_diagnose::diagnose_reader(std::io::stdin().lock(), &Default::default()).unwrap();
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
}
