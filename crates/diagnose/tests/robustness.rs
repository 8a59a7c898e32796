//! Bad input never panics or hangs: random bytes, mutated real messages, giant lines,
//! invalid UTF-8, and logs where every line is a trigger. Property tests (proptest)
//! drive the scanner, normalizer and every grammar with random and mutated input.

use oomdoc_diagnose::{diagnose_reader, diagnose_text, Options};
use proptest::prelude::*;

fn seeds() -> Vec<String> {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/dev.jsonl");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["error_text"].as_str().map(str::to_string))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        let _ = diagnose_reader(&bytes[..], &Options::default()).unwrap();
    }

    #[test]
    fn mutated_real_messages(idx in 0usize..56, cut in 0usize..4000, insert in proptest::collection::vec(any::<u8>(), 0..64), at in 0usize..4000) {
        let seeds = seeds();
        let mut b = seeds[idx % seeds.len()].clone().into_bytes();
        let at = at.min(b.len());
        b.splice(at..at, insert);
        b.truncate(cut.max(1).min(b.len()));
        let r = diagnose_reader(&b[..], &Options::default()).unwrap();
        // The JSON contract always serializes.
        serde_json::to_string(&r).unwrap();
    }

    #[test]
    fn numbers_in_templates(n in any::<u64>(), m in any::<u64>()) {
        let text = format!("RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem. Used {n}.99E of {m}G vmem. Exceeded vmem capacity by 1.7K.\nAllocation (size={n}) would exceed memory (size={m}) :: #allocation1 [shape = 'u8[{n},{m}]{{1,0:T(8,128)(4,1)}}', space=hbm, size = 0xffffffffffffffff, tag = 'x'] :: <no-hlo-instruction>\nout of resource: shared memory, Required: {n}, Hardware limit: {m}\nptxas error   : Entry function 'k' uses too much shared data (0x{n:x} bytes, 0x{m:x} max)\n");
        let r = diagnose_text(&text, &Options::default());
        serde_json::to_string(&r).unwrap();
    }
}

#[test]
fn giant_line_without_newline() {
    let mut b = vec![b'x'; 3 << 20];
    b.extend_from_slice(b" CUDA out of memory. Tried to allocate 2.00 GiB");
    b.extend(std::iter::repeat_n(b'y', 3 << 20));
    let r = diagnose_reader(&b[..], &Options::default()).unwrap();
    assert!(r.findings.len() <= 2);
}

#[test]
fn every_line_a_trigger_stays_bounded() {
    let line = "2024-01-01 00:00:00.000000: W bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB with freed_by_count=0. The caller indicates that this is not a failure, but this may mean that there could be performance gains if more memory were available.\n";
    let text = line.repeat(20_000);
    let r = diagnose_text(&text, &Options::default());
    assert_eq!(r.findings.len(), 1, "identical warnings collapse into one finding");
    assert_eq!(r.findings[0].occurrences, 20_000);
}

#[test]
fn invalid_utf8_and_crlf() {
    let mut b = b"\xff\xfe garbage \xc3\x28\r\n".to_vec();
    b.extend_from_slice(b"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 4.00 GiB total capacity; 3.08 GiB already allocated; 0 bytes free; 3.47 GiB reserved in total by PyTorch)\r\n");
    let r = diagnose_reader(&b[..], &Options::default()).unwrap();
    assert_eq!(r.findings[0].id, "pytorch.cuda-oom");
    assert_eq!(r.findings[0].line, 2);
    assert_eq!(r.findings[0].sizes.requested, Some(20 << 20));
}

#[test]
fn repeated_traceback_from_workers_is_one_finding() {
    let msg = "[rank{}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 79.33 GiB of which 512.00 MiB is free.\n";
    let text: String = (0..8).map(|i| msg.replace("{}", &i.to_string())).collect::<Vec<_>>().join("noise line\n");
    let r = diagnose_text(&text, &Options::default());
    let ooms: Vec<_> = r.findings.iter().filter(|f| f.id == "pytorch.cuda-oom").collect();
    assert_eq!(ooms.len(), 1);
    assert_eq!(ooms[0].occurrences, 8);
    assert!(ooms[0].first_fatal);
    assert_eq!(ooms[0].line, 1);
}

#[test]
fn multibyte_text_before_a_message_never_splits_a_character() {
    // Lookbehind windows start at a fixed byte distance before the message.
    for pad in 0..3 {
        let prefix = "a".repeat(pad) + &"内存".repeat(400);
        for msg in [
            "Ran out of memory in memory space vmem.",
            "failed to allocate 1.00G (1073741824 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY",
        ] {
            let r = diagnose_text(&format!("{prefix}{msg}\n"), &Options::default());
            serde_json::to_string(&r).unwrap();
        }
    }
}

/// Issue 25, D7: a kernel symbol table (`/proc/kallsyms`, read when a whole `/proc` is
/// diagnosed) names the OOM handlers; it states no failure.
#[test]
fn kernel_symbol_tables_give_no_finding() {
    let kallsyms = "ffffffffa1e2c3c0 t __pfx_out_of_memory_reset\nffffffffa1e2c3d0 T __pfx_pagefault_out_of_memory\nffffffffa1e2c3e0 T pagefault_out_of_memory\nffffffffa1e2c4f0 T __pfx_oom_killer_disable\nffffffffa1e2c500 T out_of_memory\nffffffffa1e2c700 t mem_cgroup_out_of_memory\n";
    let r = diagnose_text(kallsyms, &Options::default());
    assert!(r.findings.is_empty(), "{:?}", r.findings.iter().map(|f| &f.id).collect::<Vec<_>>());
}

/// A failure line that only a session-6 trigger can start (`OOM ` opening a line, docker's
/// `container oom`, a parent's return code -9), 100 KiB into a serving log: past the prose
/// stage's whole-input pass, the scanner's anchors have to find it.
#[test]
fn late_lines_that_only_new_triggers_start() {
    let filler: String = (0..800).map(|i| format!("INFO 05-28 07:00:{:02} [engine.py:310] Added request chatcmpl-{i:x}. GPU KV cache usage: 1.0%, CPU KV cache usage: 0.0%.\n", i % 60)).collect();
    // https://github.com/aistudynow/Comfyui-bitdance/issues/2, https://github.com/aws-neuron/aws-neuron-sdk/issues/431,
    // https://github.com/NVIDIA/DIGITS/issues/1362
    for (line, id) in [
        ("AMD Radeon RX 7900 XTX 24GB\nrocm-7.2.0\nLinux Debian 13\n\nOOM while VAE Decode", None),
        ("INFO:Neuron:Compile command returned: -9", Some("host.oom-killer")),
        ("ERROR: error code -9", Some("host.oom-killer")),
    ] {
        let text = format!("{filler}{line}\n{filler}");
        let r = diagnose_text(&text, &Options::default());
        assert!(!r.findings.is_empty(), "{line}");
        if let Some(id) = id {
            assert_eq!(r.findings[0].id, id, "{line}");
        }
        assert!(r.findings[0].line > 800, "{line}: {}", r.findings[0].line);
    }
}
