//! Times the anchor search alone on a text file: `anchor_speed ANCHORS_FILE TEXT_FILE`
//! (one anchor per line, a blank line between buckets; without blank lines, the
//! anchors are dealt round the 8 buckets). Used with `tools/pick_anchors.py` to compare anchor sets, and
//! the scanner's searcher (AVX-512 VBMI where the CPU has it) with aho-corasick's packed
//! Teddy (`SEARCH=packed`; `FAT=0`/`FAT=1` force its slim or fat form).
//! `VERBOSE=1` prints the hits per anchor too, so a set can be judged on real logs.
use aho_corasick::packed::{Config, MatchKind};
use oomdoc_diagnose::anchor_search::AnchorSearcher;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = std::fs::read_to_string(&args[1]).unwrap();
    let anchors: Vec<&str> = file.lines().filter(|l| !l.is_empty()).collect();
    let mut buckets: Vec<Vec<&str>> = file.split("\n\n").map(|b| b.lines().filter(|l| !l.is_empty()).collect()).filter(|b: &Vec<&str>| !b.is_empty()).collect();
    if buckets.len() == 1 {
        buckets = (0..8).map(|i| anchors.iter().copied().skip(i).step_by(8).collect()).collect();
    }
    let buckets: Vec<&[&str]> = buckets.iter().map(Vec::as_slice).collect();
    let text = std::fs::read(&args[2]).unwrap();
    let packed = std::env::var("SEARCH").as_deref() == Ok("packed");
    let fat = std::env::var("FAT").ok();
    let mut per = vec![0usize; anchors.len()];
    let mut n = 0usize;
    let t = std::time::Instant::now();
    let kind = if let Some(f) = fat {
        let mut config = Config::new();
        config.match_kind(MatchKind::LeftmostFirst).only_teddy_fat(Some(f == "1")).heuristic_pattern_limits(false);
        let searcher = config.builder().extend(&anchors).build().expect("Teddy searcher");
        let mut pos = 0;
        while let Some(m) = searcher.find_in(&text, aho_corasick::Span::from(pos..text.len())) {
            n += 1;
            per[m.pattern().as_usize()] += 1;
            pos = m.start() + 1;
        }
        if f == "1" { "packed fat Teddy" } else { "packed slim Teddy" }
    } else {
        let searcher = AnchorSearcher::new(&buckets, !packed);
        let mut pos = 0;
        while let Some(at) = searcher.find_start(&text, pos) {
            n += 1;
            if let Some(i) = anchors.iter().position(|a| text[at..].starts_with(a.as_bytes())) {
                per[i] += 1;
            }
            pos = at + 1;
        }
        searcher.kind()
    };
    let s = t.elapsed().as_secs_f64();
    println!("{} anchors, {kind}: {n} starts, {:.0} MiB/s", anchors.len(), text.len() as f64 / 1048576.0 / s);
    if std::env::var_os("VERBOSE").is_some() {
        for (a, c) in anchors.iter().zip(per) {
            println!("{c:>10} {a:?}");
        }
    }
}
