//! Times the anchor search alone on a text file: `anchor_speed ANCHORS_FILE TEXT_FILE`
//! (one anchor per line). Used with `tools/pick_anchors.py` to compare anchor sets.
use aho_corasick::{AhoCorasickBuilder, MatchKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let anchors: Vec<String> = std::fs::read_to_string(&args[1]).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    let text = std::fs::read(&args[2]).unwrap();
    let ac = AhoCorasickBuilder::new().match_kind(MatchKind::LeftmostFirst).prefilter(true).build(&anchors).unwrap();
    let t = std::time::Instant::now();
    let mut n = 0usize;
    let mut pos = 0;
    while let Some(m) = ac.find(&text[pos..]) {
        n += 1;
        pos += m.end();
    }
    let s = t.elapsed().as_secs_f64();
    println!("{} anchors: {n} hits, {:.0} MiB/s", anchors.len(), text.len() as f64 / 1048576.0 / s);
}
