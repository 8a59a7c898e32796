//! Throughput and peak memory of `diagnose` on a large realistic log.
//!
//! `cargo bench -p oomdoc-diagnose --bench scan_throughput -- [SIZE_MIB]` (default 1024)
//! writes a training log of that size to a temporary file — step lines, metrics,
//! warnings, tracebacks, nvidia-smi tables, with five real OOM messages buried in it —
//! then times full diagnoses of the file (`diagnose_file`: mapped windows on Linux; also
//! read with `read()` as before, and piped through `cat`), reads peak RSS (VmHWM), and
//! times `grep -c` and `rg -c` (if installed) for the same trigger words on the same file.
//! The timings are medians over alternating rounds (`OOMDOC_BENCH_ROUNDS`, default 5), each
//! with its range: one sample on a shared machine is noise. With `OOMDOC_BENCH_LOG=PATH`
//! the log is written there once and kept (an existing file at PATH is used as it is), for
//! repeated runs and for timing other tools on it. `OOMDOC_BENCH_STYLE=vllm` writes a vLLM
//! serving log instead, where every fifth line mentions memory (the engine's periodic
//! metrics line with its KV-cache usage), the case issue 21 measures against ripgrep.

use std::io::{BufWriter, Write};
use std::time::Instant;

const FAILURES: &[&str] = &[
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 1.50 GiB is free. Including non-PyTorch memory, this process has 77.80 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by PyTorch, and 6.20 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 63.80G of 30.75G hbm. Exceeded hbm capacity by 33.05G.",
    "RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Ran out of memory in memory space vmem while allocating on stack for %gmm.1 = f32[16384,512]{1,0:T(8,128)} custom-call(), custom_call_target=\"tpu_custom_call\". Scoped allocation with size 18.00M and limit 16.00M exceeded scoped vmem limit by 2.00M.",
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 133136, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.",
    "2024-05-28 07:02:44.349554: W external/tsl/tsl/framework/bfc_allocator.cc:482] Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.37GiB with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there could be performance gains if more memory were available.",
];

/// A vLLM serving log: request lines, and every fifth line the metrics line that mentions
/// the KV cache (memory), with the same failures buried in it.
fn vllm_line(step: u64) -> String {
    match step % 5 {
        0 => format!("INFO 05-28 07:{:02}:{:02} [metrics.py:351] Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, Running: {} reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: {:.1}%, CPU KV cache usage: 0.0%.\n", step % 60, step % 60, (step % 997) as f64 * 1.3, (step % 613) as f64 * 0.7, step % 64, (step % 1000) as f64 / 10.0),
        1 => format!("INFO 05-28 07:{:02}:{:02} [logger.py:39] Received request chatcmpl-{step:x}: prompt: '<|im_start|>user\\nSummarize the document.<|im_end|>', params: SamplingParams(n=1, temperature=0.7, top_p=0.95, max_tokens=512), prompt_token_ids: None, lora_request: None.\n", step % 60, step % 60),
        2 => format!("INFO:     10.0.{}.{}:{} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", step % 255, (step / 255) % 255, 40000 + step % 20000),
        3 => format!("INFO 05-28 07:{:02}:{:02} [engine.py:310] Added request chatcmpl-{step:x}.\n", step % 60, step % 60),
        _ => format!("INFO 05-28 07:{:02}:{:02} [engine.py:330] Finished request chatcmpl-{:x}.\n", step % 60, step % 60, step.saturating_sub(4)),
    }
}

fn write_log(path: &std::path::Path, target: u64) -> std::io::Result<u64> {
    let vllm = std::env::var("OOMDOC_BENCH_STYLE").is_ok_and(|s| s == "vllm");
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut step = 0u64;
    let mut next_failure = target / (FAILURES.len() as u64 + 1);
    let mut failure = 0;
    while written < target {
        step += 1;
        let line = if vllm { vllm_line(step) } else { match step % 50 {
            0 => format!("2024-05-28 07:{:02}:{:02}.{:06}: I external/xla/xla/service/service.cc:168] XLA service initialized for platform CUDA (this does not guarantee that XLA will be used). Devices: StreamExecutor device (0): NVIDIA H100 80GB HBM3, Compute Capability 9.0\n", step % 60, step % 60, step % 1000000),
            7 => format!("[rank0]: step {step} | memory: allocated 70.12 GiB, reserved 76.30 GiB, max_allocated 74.90 GiB | tokens/s 12345.6\n"),
            13 => "|   0  NVIDIA H100 80GB HBM3          On  | 00000000:18:00.0 Off |                    0 |\n| N/A   35C    P0             113W / 700W |  77823MiB / 81559MiB |     98%      Default |\n".to_string(),
            21 => "  File \"/usr/lib/python3.11/site-packages/torch/nn/modules/module.py\", line 1511, in _wrapped_call_impl\n    return self._call_impl(*args, **kwargs)\n".to_string(),
            33 => "UserWarning: To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() (memory format preserved).\n".to_string(),
            _ => format!("{{\"step\": {step}, \"loss\": {:.4}, \"lr\": 3.0e-4, \"grad_norm\": {:.3}, \"throughput\": 412.7, \"epoch\": {}}}\n", 2.0 / (step as f64).sqrt(), 1.0 + (step % 7) as f64 / 10.0, step / 100000),
        } };
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

fn diagnose_file_timed(path: &std::path::Path, threads: usize) -> (f64, oomdoc_diagnose::Report) {
    let t = Instant::now();
    let opts = oomdoc_diagnose::Options { threads, ..Default::default() };
    let report = oomdoc_diagnose::diagnose_file(std::fs::File::open(path).unwrap(), &opts).unwrap();
    (t.elapsed().as_secs_f64(), report)
}

/// Seconds of each round of one measurement.
#[derive(Default)]
struct Samples(Vec<f64>);

impl Samples {
    fn median(&self) -> f64 {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
    }

    /// "0.21 s, 4876 MiB/s (median of 5: 0.19–0.30 s)"
    fn show(&self, mib: f64) -> String {
        let m = self.median();
        let lo = self.0.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self.0.iter().copied().fold(0.0, f64::max);
        format!("{m:.2} s, {:.0} MiB/s (median of {}: {lo:.2}–{hi:.2} s)", mib / m, self.0.len())
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_else(|_| "?".into())
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
    let rounds: usize = std::env::var("OOMDOC_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(5);
    let p = path.to_str().unwrap();
    // Six trigger words, as the comparison: grep -c -E and rg -c.
    let six = "out of memory|Out of memory|RESOURCE_EXHAUSTED|OutOfResources|OOM when allocating|Killed process";
    // (ripgrep's `-E` means --encoding; its patterns are extended regexes already.)
    // ripgrep maps a single file into memory (1 GiB of RSS here); `--no-mmap` reads it as
    // oomdoc's read path does, into a bounded buffer. grep writes to a pipe (GNU grep stops
    // early when its output is /dev/null).
    let tools: [(&str, &str, Vec<&str>); 3] = [
        ("grep -c -E", "grep", vec!["-c", "-E", six, p]),
        ("rg -c", "rg", vec!["-c", six, p]),
        ("rg -c --no-mmap", "rg", vec!["-c", "--no-mmap", six, p]),
    ];
    // Page cache warm for every run: read once before the first.
    std::io::copy(&mut std::fs::File::open(&path).unwrap(), &mut std::io::sink()).unwrap();
    let load_before = load_average();
    let mut mapped: [Samples; 2] = Default::default();
    let mut read = Samples::default();
    let mut piped = Samples::default();
    let mut tool_times: Vec<Option<Samples>> = tools.iter().map(|_| Some(Samples::default())).collect();
    let mut lines = 0;
    let mut found = Vec::new();
    for _ in 0..rounds {
        for (i, threads) in [1, cores].into_iter().enumerate() {
            let (secs, report) = diagnose_file_timed(&path, threads);
            mapped[i].0.push(secs);
            let ooms = report.findings.iter().filter(|f| f.kind == oomdoc_kb::Kind::Oom).count();
            let found_lines: Vec<u64> = report.findings.iter().map(|f| f.line).collect();
            lines = report.lines_scanned;
            found.push((threads, report.findings.len(), ooms, found_lines));
        }
        // The read() path, as every input that is not a plain regular file takes it.
        let (secs, report) = diagnose_timed(std::fs::File::open(&path).unwrap(), cores);
        assert_eq!(report.lines_scanned, lines, "the read and mapped paths agree");
        read.0.push(secs);
        // Piped input (a pipe, not a file): memory stays bounded the same way.
        let mut cat = std::process::Command::new("cat").arg(&path).stdout(std::process::Stdio::piped()).spawn().unwrap();
        let (secs, _) = diagnose_timed(cat.stdout.take().unwrap(), 0);
        cat.wait().ok();
        piped.0.push(secs);
        for ((_, tool, args), times) in tools.iter().zip(tool_times.iter_mut()) {
            if let Some(t) = times {
                match time_cmd(tool, args) {
                    Some(s) => t.0.push(s),
                    None => *times = None,
                }
            }
        }
    }
    let rss = peak_rss_kib().unwrap_or(0);
    for (i, threads) in [1, cores].into_iter().enumerate() {
        let (_, n, ooms, found_lines) = found.iter().find(|f| f.0 == threads).unwrap();
        println!("oomdoc diagnose, {threads} thread(s): {}, {n} findings ({ooms} oom) at lines {found_lines:?}", mapped[i].show(size));
    }
    println!("oomdoc diagnose, read() instead of mapped windows, {cores} threads: {}", read.show(size));
    println!("oomdoc diagnose, piped through cat, {cores} threads: {}", piped.show(size));
    println!("log: {size:.0} MiB, {lines} lines; peak RSS of all runs {} MiB (process before scanning: {} MiB)", rss / 1024, rss_before / 1024);
    for ((label, tool, _), times) in tools.iter().zip(&tool_times) {
        match times {
            Some(t) => println!("{label} (6 trigger words): {}", t.show(size)),
            None => println!("{tool}: not installed"),
        }
    }
    println!("load average before the rounds: {load_before}; after: {}", load_average());
    // The same full trigger list oomdoc's prefilter uses, for a like-for-like comparison
    // (one run each: they take seconds).
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
