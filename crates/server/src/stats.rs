//! Success rates of fixes as measured by user reports.

use serde::Serialize;

/// Below this many reports a fix shows its count but no rate: an interval over
/// two or three reports says nothing and would read as a promise.
pub const MIN_REPORTS_FOR_RATE: u64 = 5;

/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A success proportion with its Wilson score 95% interval, all in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// The Wilson score interval (Wilson 1927): unlike the normal approximation it stays
/// inside [0, 1] and behaves at 0% and 100%, which small report counts hit often.
pub fn wilson_95(successes: u64, trials: u64) -> Option<Rate> {
    if trials == 0 || successes > trials {
        return None;
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    // At 0% and 100% the bound is exactly 0 or 1; do not let rounding say 0.9999999.
    let low = if successes == 0 { 0.0 } else { (center - half).max(0.0) };
    let high = if successes == trials { 1.0 } else { (center + half).min(1.0) };
    Some(Rate { estimate: p, low, high })
}

/// Counts of reports for one fix (or one fix on one hardware).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    pub reports: u64,
    pub worked: u64,
    pub did_not_work: u64,
    /// `None` below [`MIN_REPORTS_FOR_RATE`] reports.
    pub rate: Option<Rate>,
}

impl Tally {
    pub fn new(worked: u64, did_not_work: u64) -> Tally {
        let reports = worked + did_not_work;
        let rate = if reports >= MIN_REPORTS_FOR_RATE { wilson_95(worked, reports) } else { None };
        Tally { reports, worked, did_not_work, rate }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), Table I: 81/263 -> 0.2553 .. 0.3662; 15/148 -> 0.0624 .. 0.1605.
        let r = wilson_95(81, 263).unwrap();
        assert!(close(r.low, 0.2553) && close(r.high, 0.3662), "{r:?}");
        let r = wilson_95(15, 148).unwrap();
        assert!(close(r.low, 0.0624) && close(r.high, 0.1605), "{r:?}");
        // 0/10 and 10/10 stay inside [0, 1]: 0 .. 0.2775 and 0.7225 .. 1.
        let r = wilson_95(0, 10).unwrap();
        assert!(r.low == 0.0 && close(r.high, 0.2775), "{r:?}");
        let r = wilson_95(10, 10).unwrap();
        assert!(close(r.low, 0.7225) && r.high == 1.0, "{r:?}");
        assert_eq!(wilson_95(0, 0), None);
    }

    #[test]
    fn no_rate_below_five_reports() {
        assert_eq!(Tally::new(4, 0).rate, None);
        assert_eq!(Tally::new(3, 1).reports, 4);
        assert!(Tally::new(4, 1).rate.is_some());
    }
}
