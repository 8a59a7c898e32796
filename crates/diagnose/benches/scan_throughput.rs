//! Throughput and peak memory of `diagnose` on a large realistic log.
//!
//! `cargo bench -p oomdoc-diagnose --bench scan_throughput -- [SIZE_MIB]` (default 1024)
//! writes a training log of that size to a temporary file — step lines, metrics,
//! warnings, tracebacks, nvidia-smi tables, with five real OOM messages buried in it —
//! then times one streaming `diagnose_reader` pass and reads peak RSS (VmHWM), and
//! times `grep -c` and `rg -c` (if installed) for the same trigger words on the same file.
//! With `OOMDOC_BENCH_LOG=PATH` the log is written there once and kept (an existing file
//! at PATH is used as it is), for repeated runs and for timing other tools on it.

use std::io::{BufWriter, Write};
use std::time::Instant;

const FAILURES: &[&str] = &[
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 77.80 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by PyTorch, and 6.20 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 63.80G of 30.75G hbm. Exceeded hbm capacity by 33.05G.",
    "RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Ran out of memory in memory space vmem while allocating on stack for %gmm.1 = f32[16384,512]{1,0:T(8,128)} custom-call(), custom_call_target=\"tpu_custom_call\". Scoped allocation with size 18.00M and limit 16.00M exceeded scoped vmem limit by 2.00M.",
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 133136, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
    "2024-05-28 07:02:44.349554: W external/tsl/tsl/framework/bfc_allocator.cc:482] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.37GiB with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there could be performance gains if more memory were available.",
];

fn write_log(path: &std::path::Path, target: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut step = 0u64;
    let mut next_failure = target / (FAILURES.len() as u64 + 1);
    let mut failure = 0;
    while written < target {
        step += 1;
        let line = match step % 50 {
            0 => format!("2024-05-28 07:{:02}:{:02}.{:06}: I external/xla/xla/service/service.cc:168] XLA service initialized for platform CUDA (this does not guarantee that XLA will be used). Devices: StreamExecutor device (0): NVIDIA H100 80GB HBM3, Compute Capability 9.0\n", step % 60, step % 60, step % 1000000),
            7 => format!("[rank0]: step {step} | memory: allocated 70.12 GiB, reserved 76.30 GiB, max_allocated 74.90 GiB | tokens/s 12345.6\n"),
            13 => "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n| N/A   35C    P0             113W / 700W |  77823MiB / 81559MiB |     98%      Default |\n".to_string(),
            21 => "  File \"/usr/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1511, in _wrapped_call_impl\n    return self._call_impl(*args, **kwargs)\n".to_string(),
            33 => "UserWarning: To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() (memory format preserved).\n".to_string(),
            _ => format!("{{\"step\": {step}, \"loss\": {:.4}, \"lr\": 3.0e-4, \"grad_norm\": {:.3}, \"throughput\": 412.7, \"epoch\": {}}}\n", 2.0 / (step as f64).sqrt(), 1.0 + (step % 7) as f64 / 10.0, step / 100000),
        };
        w.write_all(line.as_bytes())?;
        written += line.len() as u64;
        if written >= next_failure && failure < FAILURES.len() {
            let l = format!("{}\n", FAILURES[failure]);
            w.write_all(l.as_bytes())?;
            written += l.len() as u64;
            failure += 1;
            next_failure += target / (FAILURES.len() as u64 + 1);
        }
    }
    w.flush()?;
    Ok(written)
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}

fn time_cmd(cmd: &str, args: &[&str]) -> Option<f64> {
    let t = Instant::now();
    let out = std::process::Command::new(cmd).args(args).output().ok()?;
    if !out.status.success() && out.status.code() != Some(1) {
        return None;
    }
    Some(t.elapsed().as_secs_f64())
}

fn diagnose_timed(reader: impl std::io::Read, threads: usize) -> (f64, oomdoc_diagnose::Report) {
    let t = Instant::now();
    let opts = oomdoc_diagnose::Options { threads, ..Default::default() };
    let report = oomdoc_diagnose::diagnose_reader(reader, &opts).unwrap();
    (t.elapsed().as_secs_f64(), report)
}

fn main() {
    let mib: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("oomdoc-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kept = std::env::var_os("OOMDOC_BENCH_LOG").map(std::path::PathBuf::from);
    let path = kept.clone().unwrap_or_else(|| dir.join("train.log"));
    let bytes = match std::fs::metadata(&path) {
        Ok(m) if kept.is_some() => m.len(),
        _ => write_log(&path, mib << 20).unwrap(),
    };
    let size = bytes as f64 / 1048576.0;
    let rss_before = peak_rss_kib().unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut lines = 0;
    for threads in [1, cores] {
        // Page cache warm for both runs: read once before the first.
        if threads == 1 {
            std::io::copy(&mut std::fs::File::open(&path).unwrap(), &mut std::io::sink()).unwrap();
        }
        let (secs, report) = diagnose_timed(std::fs::File::open(&path).unwrap(), threads);
        let ooms = report.findings.iter().filter(|f| f.kind == oomdoc_kb::Kind::Oom).count();
        let found_lines: Vec<u64> = report.findings.iter().map(|f| f.line).collect();
        lines = report.lines_scanned;
        println!(
            "oomdoc diagnose, {threads} thread(s): {secs:.2} s, {:.0} MiB/s, {} findings ({ooms} oom) at lines {found_lines:?}",
            size / secs,
            report.findings.len()
        );
    }
    // Piped input (a pipe, not a file): memory stays bounded the same way.
    let mut cat = std::process::Command::new("cat").arg(&path).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let (secs, _) = diagnose_timed(cat.stdout.take().unwrap(), 0);
    cat.wait().ok();
    let rss = peak_rss_kib().unwrap_or(0);
    println!("oomdoc diagnose, piped through cat, {cores} threads: {secs:.2} s, {:.0} MiB/s", size / secs);
    println!("log: {size:.0} MiB, {lines} lines; peak RSS of all runs {} MiB (process before scanning: {} MiB)", rss / 1024, rss_before / 1024);
    let p = path.to_str().unwrap();
    // Six trigger words, as the comparison: grep -c -E and rg -c.
    let six = "out of memory|Out of memory|RESOURCE_EXHAUSTED|OutOfResources|OOM when allocating|Killed process";
    // (ripgrep's `-E` means --encoding; its patterns are extended regexes already.)
    // ripgrep maps a single file into memory (1 GiB of RSS here); `--no-mmap` reads it as
    // oomdoc does, into a bounded buffer.
    for (label, tool, args) in [
        ("grep -c -E", "grep", vec!["-c", "-E", six, p]),
        ("rg -c", "rg", vec!["-c", six, p]),
        ("rg -c --no-mmap", "rg", vec!["-c", "--no-mmap", six, p]),
    ] {
        match time_cmd(tool, &args) {
            Some(s) => println!("{label} (6 trigger words): {s:.2} s, {:.0} MiB/s", size / s),
            None => println!("{tool}: not installed"),
        }
    }
    // The same full trigger list oomdoc's prefilter uses, for a like-for-like comparison.
    let list = dir.join("triggers.txt");
    std::fs::write(&list, oomdoc_diagnose::scan::start_triggers().join("\n")).unwrap();
    let list = list.to_str().unwrap().to_string();
    let n = oomdoc_diagnose::scan::start_triggers().len();
    for tool in ["grep", "rg"] {
        if let Some(s) = time_cmd(tool, &["-c", "-F", "-f", &list, p]) {
            println!("{tool} -c -F -f ({n} trigger words, as oomdoc): {s:.2} s, {:.0} MiB/s", size / s);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
