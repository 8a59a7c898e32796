//! Times the anchor search alone on a text file: `anchor_speed ANCHORS_FILE TEXT_FILE`
//! (one anchor per line). Used with `tools/pick_anchors.py` to compare anchor sets.
//! Prints the hits per anchor too, so a set can be judged on real logs.
use aho_corasick::packed::{Config, MatchKind};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let anchors: Vec<String> = std::fs::read_to_string(&args[1]).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
    let text = std::fs::read(&args[2]).unwrap();
    let mut config = Config::new();
    config.match_kind(MatchKind::LeftmostFirst);
    // FAT=0 forces slim Teddy, FAT=1 fat (to compare at the 32-pattern threshold).
    if let Ok(f) = std::env::var("FAT") {
        config.only_teddy_fat(Some(f == "1")).heuristic_pattern_limits(false);
    }
    let searcher = config.builder().extend(&anchors).build().expect("Teddy searcher");
    let mut per = vec![0usize; anchors.len()];
    let t = std::time::Instant::now();
    let mut n = 0usize;
    let mut pos = 0;
    while let Some(m) = searcher.find_in(&text, aho_corasick::Span::from(pos..text.len())) {
        n += 1;
        per[m.pattern().as_usize()] += 1;
        pos = m.end();
    }
    let s = t.elapsed().as_secs_f64();
    println!("{} anchors: {n} hits, {:.0} MiB/s", anchors.len(), text.len() as f64 / 1048576.0 / s);
    if std::env::var_os("VERBOSE").is_some() {
        for (a, c) in anchors.iter().zip(per) {
            println!("{c:>10} {a:?}");
        }
    }
}
