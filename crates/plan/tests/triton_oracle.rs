//! The Triton model against shared memory measured with the real Triton compiler
//! (rows copied from shared/fixtures/triton-oracle; see crates/plan/oracle/README.md).

use oomdoc_plan::triton::{predict, TritonConfig, TritonDType, TritonVersion};

fn rows(csv: &str) -> impl Iterator<Item = Vec<&str>> {
    csv.lines().skip(1).filter(|l| !l.trim().is_empty()).map(|l| l.split(',').collect())
}

/// Every compiled row of the development half of the 3.9.0 sweep must be predicted exactly,
/// and every row that failed to compile must be rejected.
#[test]
fn dev_sweep_rows_exact() {
    check_sweep("dev sweep", include_str!("data/shared_mem_sweep_triton3.9.0.dev.csv"));
}

/// A random sample of the rest of the sweep grid, measured for this crate with
/// `oracle/sample_sweep.py` (configs the model was not developed against).
#[test]
fn sampled_heldout_grid_rows_exact() {
    check_sweep("sampled grid", include_str!("data/sample_sweep_triton3.9.0.csv"));
}

fn check_sweep(what: &str, csv: &str) {
    let (mut total, mut exact, mut misses) = (0, 0, Vec::new());
    for f in rows(csv) {
        let arch = oomdoc_hw::gpu_arch(f[0]).unwrap();
        let dtype = TritonDType::parse(f[1]).unwrap();
        let n: Vec<u64> = f[2..7].iter().map(|x| x.parse().unwrap()).collect();
        let c = TritonConfig { block_m: n[0], block_n: n[1], block_k: n[2], num_stages: n[3], num_warps: n[4] };
        let got = predict(arch, TritonVersion::V2_2Plus, dtype, c);
        total += 1;
        match (f[7].parse::<u64>().ok(), got) {
            (Some(want), Ok(p)) if p.exact && p.shared_bytes == want => exact += 1,
            (None, Err(_)) => exact += 1,
            (want, got) => misses.push(format!("{f:?} want {want:?} got {:?}", got.map(|p| (p.shared_bytes, p.exact)))),
        }
    }
    eprintln!("{what}: {exact}/{total} rows exact");
    assert!(misses.is_empty(), "{} misses, first: {:#?}", misses.len(), &misses[..misses.len().min(10)]);
}

#[test]
fn buffers_by_version() {
    let csv = include_str!("data/buffers_by_triton_version.csv");
    for f in rows(csv) {
        let version = TritonVersion::parse(f[0]).unwrap();
        let arch = oomdoc_hw::gpu_arch(f[1]).unwrap();
        let n: Vec<u64> = f[2..7].iter().map(|x| x.parse().unwrap()).collect();
        let c = TritonConfig { block_m: n[0], block_n: n[1], block_k: n[2], num_warps: n[3], num_stages: n[4] };
        let p = predict(arch, version, TritonDType::Fp16, c).unwrap();
        assert_eq!(p.shared_bytes, f[7].parse::<u64>().unwrap(), "{f:?}");
    }
}

/// Other targets (sm_86/89/120/100) measured for this crate: exact where the model says
/// exact, and always within [shared_bytes_min, shared_bytes].
#[test]
fn cross_arch_rows_within_bounds() {
    let csv = include_str!("data/cross_arch_triton3.9.0.csv");
    for f in rows(csv) {
        let arch = oomdoc_hw::gpu_arch(f[0]).unwrap();
        let dtype = TritonDType::parse(f[1]).unwrap();
        let n: Vec<u64> = f[2..7].iter().map(|x| x.parse().unwrap()).collect();
        let c = TritonConfig { block_m: n[0], block_n: n[1], block_k: n[2], num_stages: n[3], num_warps: n[4] };
        let want: u64 = f[7].parse().unwrap();
        let p = predict(arch, TritonVersion::V2_2Plus, dtype, c).unwrap();
        assert!(p.shared_bytes_min <= want && want <= p.shared_bytes, "{f:?}: {}..{}", p.shared_bytes_min, p.shared_bytes);
        if p.exact {
            assert_eq!(p.shared_bytes, want, "{f:?}");
        }
    }
}
