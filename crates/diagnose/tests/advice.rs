//! Advice that fits the case, on real messages whose fix is known (each from a public
//! thread, quoted verbatim; the resolution corpus `tests/corpus/resolutions/` holds them
//! with the resolution). One test per pattern of issue 20.

use oomdoc_diagnose::{diagnose_text, Finding, Options};

fn first(text: &str) -> Finding {
    let r = diagnose_text(text, &Options::default());
    r.findings.iter().find(|f| f.first_fatal).or(r.findings.first()).cloned().expect("a finding")
}

fn fix_ids(f: &Finding) -> Vec<&str> {
    f.fixes.iter().map(|x| x.id.as_str()).collect()
}

fn categories(f: &Finding) -> Vec<&str> {
    f.fixes.iter().map(|x| x.category.as_str()).collect()
}

/// https://github.com/mkocabas/EpipolarPose/issues/6 — fixed by a smaller batch. 551 MiB
/// cached (under a tenth of the 7.93 GiB card) against a 512 MiB request after the
/// allocator's own free-and-retry is a shortage; the message format (`cached)`) predates
/// expandable segments (PyTorch 2.1).
#[test]
fn small_slack_on_a_full_card_is_a_shortage_and_old_formats_get_no_expandable_segments() {
    let f = first("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.93 GiB total capacity; 6.19 GiB already allocated; 340.00 MiB free; 551.04 MiB cached)");
    assert_eq!(f.case.versions["torch"].below.as_deref(), Some("1.4"));
    assert_eq!(categories(&f).first(), Some(&"smaller-working-set"), "{:?}", fix_ids(&f));
    assert!(!f.fixes.iter().any(|x| x.code.as_deref().unwrap_or("").contains("expandable_segments")), "{:?}", fix_ids(&f));
    assert_eq!(f.cause_confidence.as_deref(), Some("hedged"));
    assert!(f.cause.as_deref().unwrap().starts_with("The device is full"), "{:?}", f.cause);
}

/// https://github.com/nanoporetech/dorado/issues/653 — a second process held the GPU. The
/// 1.4-2.0 format states `reserved in total` (132 MiB): the other 11 GiB in use are not
/// PyTorch's, and with no process lines the cause says it cannot tell whose.
#[test]
fn reserved_in_total_counts_in_the_held_elsewhere_arithmetic() {
    let f = first("[2024-02-27 12:39:17.453] [warning] Caught Torch error 'CUDA out of memory. Tried to allocate 1.02 GiB (GPU 0; 11.76 GiB total capacity; 89.90 MiB already allocated; 612.12 MiB free; 132.00 MiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF', clearing CUDA cache and retrying.");
    let cause = f.cause.as_deref().unwrap();
    assert!(cause.contains("not held by PyTorch's allocator") && cause.contains("cannot say whose"), "{cause}");
    assert!(!cause.contains("Process N"), "no process lines, no process claims: {cause}");
    assert_eq!(categories(&f).first(), Some(&"release-other-memory"), "{:?}", fix_ids(&f));
}

/// https://github.com/Comfy-Org/ComfyUI/issues/3278 — cudaMallocAsync's table. Its
/// "PyTorch limit" of 17179869184.00 GiB (2^34 GiB) is the unset default: no cap.
#[test]
fn malloc_async_default_limit_is_no_cap() {
    let f = first("torch.cuda.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated     : 21.55 GiB\nRequested               : 952.00 MiB\nDevice limit            : 24.00 GiB\nFree (according to CUDA): 0 bytes\nPyTorch limit (set by user-supplied memory fraction)\n                        : 17179869184.00 GiB\n");
    assert_eq!((f.sizes.requested, f.sizes.total, f.sizes.free, f.sizes.limit), (Some(952 << 20), Some(24 << 30), Some(0), None));
    assert!(!categories(&f).contains(&"raise-limit"), "{:?}", fix_ids(&f));
}

/// https://github.com/huggingface/text-generation-inference/issues/866 — `allowed` equal to
/// the capacity is a fraction of 1.0, not a cap; the log is TGI's, which serves.
#[test]
fn allowed_at_full_capacity_is_no_cap() {
    let f = first("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 15.77 GiB total capacity; 15.37 GiB already allocated; 13.62 MiB free; 15.77 GiB allowed; 15.40 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n rank=0\nError: ShardCannotStart\n2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start");
    assert!(!fix_ids(&f).contains(&"raise-memory-fraction"), "{:?}", fix_ids(&f));
    assert!(f.case.has("tgi") && f.case.inference(), "{:?}", f.case);
    assert!(!fix_ids(&f).contains(&"smaller-batch") && !fix_ids(&f).contains(&"activation-checkpointing"), "training fixes for a server: {:?}", fix_ids(&f));
}

/// https://github.com/jax-ml/jax/issues/38988 — fixed by raising the Pallas kernel's
/// vmem_limit_bytes from 64 MB to 128 MB: Y in "Used X of Y vmem" is the limit in effect.
#[test]
fn vmem_used_of_y_is_a_limit_and_raising_it_is_a_fix_with_headroom() {
    let f = first("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in\nmemory space vmem. Used 65.05M of 64.00M vmem. Exceeded vmem capacity by 1.05M");
    assert_eq!(f.id, "tpu.vmem-program");
    let raise = f.fixes.iter().find(|x| x.id == "raise-kernel-vmem-limit").expect("raising the limit is a fix");
    // 65.05 MiB need + a quarter = 81.3 MiB -> 82 MiB, never the rounded need (66 MiB).
    assert!(raise.code.as_deref().unwrap().contains(&(82u64 << 20).to_string()), "{:?}", raise.code);
    assert!(!f.dead_ends.iter().any(|d| d.id == "raise-scoped-limit"), "not a dead end here");
}

/// https://github.com/vllm-project/tpu-inference/pull/3407 — the ViT flash-attention Pallas
/// kernel, fixed by vmem_limit_bytes. The pasted message elides the custom-call target, so
/// the op is not called XLA's own (a compiler bug).
#[test]
fn a_kernel_not_shown_to_be_xla_is_not_called_a_compiler_bug() {
    let f = first("CompileTimeScopedVmemOom: Ran out of memory in memory space vmem ... for\n%flash_attention.1 = bf16[1,16,25344,80] ... Scoped allocation with size\n37.22M and limit 32.00M exceeded scoped vmem limit by 5.22M.");
    assert!(!fix_ids(&f).contains(&"file-xla-bug"), "{:?}", fix_ids(&f));
    assert!(categories(&f).iter().take(3).any(|c| *c == "raise-limit"), "{:?}", fix_ids(&f));
    assert!(!f.dead_ends.iter().any(|d| d.id == "vmem-limit-bytes-on-xla-op"));
    assert_eq!(f.cause_confidence.as_deref(), Some("hedged"));
}

/// https://github.com/pytorch/pytorch/issues/175250 — 327768 bytes per block is more than
/// any GPU offers: no "tuned for A100/H100, use a bigger GPU" advice; example configs say so.
#[test]
fn a_need_beyond_every_gpu_gets_no_bigger_gpu_advice_and_configs_are_marked_examples() {
    let f = first("torch._inductor.exc.InductorError: RuntimeError: No valid triton configs. \nOutOfMemoryError: out of resource: triton_per_fused_add_div_expand_mul_pow_slice_split_sum_view_7\nRequired: 327768 Hardware limit:232448 Reducing block sizes or `num_stages` may help.");
    assert!(!fix_ids(&f).contains(&"bigger-smem-gpu"), "{:?}", fix_ids(&f));
    for x in &f.fixes {
        if let Some(code) = &x.code {
            if code.contains("BLOCK_M") && !code.contains("def ") {
                assert!(code.contains("example sizes"), "{}: {code}", x.id);
            }
        }
    }
}

/// https://github.com/w-okada/voice-changer/issues/471 — a macOS kill: no Linux `dmesg`.
#[test]
fn no_dmesg_on_macos() {
    let f = first("/Users/alex/Downloads/MMVCServerSIO_mac_onnxcpu-nocuda_v.1.5.3.9a/startHttps.command: line 33: 22631 Killed: 9               PYTORCH_ENABLE_MPS_FALLBACK=1 MMVCServerSIO.app/Contents/MacOS/MMVCServerSIO --https on -p 18888");
    assert_eq!(f.case.os.as_deref(), Some("macos"));
    assert!(!f.fixes.iter().any(|x| x.code.as_deref().unwrap_or("").contains("dmesg")), "{:?}", fix_ids(&f));
}

/// https://github.com/googlecolab/colabtools/issues/5126 — PyTorch/XLA on a TPU v2-8
/// ("Bad StatusOr access"): no JAX APIs (donate_argnums, jax.live_arrays, NamedSharding).
#[test]
fn no_jax_api_for_a_pytorch_xla_job() {
    let f = first("RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 129.50M. That was not possible. There are 78.17M free.; (0x0x0_HBM0)");
    assert!(f.case.has("torch_xla"), "{:?}", f.case);
    for x in &f.fixes {
        let code = x.code.as_deref().unwrap_or("");
        assert!(!code.contains("jax.") && !code.contains("donate_argnums") && !code.contains("NamedSharding"), "{}: {code}", x.id);
    }
    assert!(fix_ids(&f).contains(&"drop-references-torch-xla"), "{:?}", fix_ids(&f));
    assert!(f.dead_ends.iter().all(|d| d.id != "clear-caches" && d.id != "gpu-env-vars"), "{:?}", f.dead_ends.iter().map(|d| &d.id).collect::<Vec<_>>());
}

/// https://github.com/pytorch/xla/issues/2569 — a PyTorch/XLA (fairseq) job on a v2-32; the
/// quoted line names no framework. The message comes from JAX, Keras and PyTorch/XLA alike,
/// so the release fix gives both forms, and JAX-only fixes (donation) do not lead.
#[test]
fn the_tpu_runtime_message_without_a_framework_gets_each_frameworks_form() {
    let f = first("2020-10-22 02:48:58 10.128.0.33 [3]   (1) Resource exhausted: Attempting to allocate 180.59M. That was not possible. There are 142.58M free.; (0x3x0_HBM1)");
    assert_eq!(f.id, "tpu.runtime-buffer");
    assert!(f.case.frameworks.is_empty(), "{:?}", f.case);
    assert!(fix_ids(&f).contains(&"drop-references-any") && !fix_ids(&f).contains(&"drop-references"), "{:?}", fix_ids(&f));
    let any = f.fixes.iter().find(|x| x.id == "drop-references-any").unwrap();
    let detail = any.detail.as_deref().unwrap_or("");
    assert!(detail.contains("PyTorch/XLA") && detail.contains("jax.live_arrays"), "{detail}");
}

/// Every fix shown with public-thread evidence carries its count, and the finding the links.
#[test]
fn measured_outcomes_come_with_counts_and_links() {
    let f = first("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.93 GiB total capacity; 6.19 GiB already allocated; 340.00 MiB free; 551.04 MiB cached)");
    if let Some(o) = &f.outcomes {
        assert!(o.threads > 0);
        for c in &o.categories {
            assert_eq!(c.links.len() as u64, c.count, "{}", c.category);
            assert!(c.links.iter().all(|l| l.starts_with("https://")));
        }
        assert!(f.fixes.iter().all(|x| x.measured.is_some_and(|m| m.threads == o.threads)));
    }
}

/// An Ollama server log: its start line (`Listening on … (version X)`, server/routes.go), a
/// stretch of ordinary request lines, then the failure. The version is printed far from it.
fn ollama_log(version: &str, failure: &str) -> String {
    let mut log = format!("time=2024-04-02T10:00:00.000+02:00 level=INFO source=routes.go:1118 msg=\"Listening on 127.0.0.1:11434 (version {version})\"\n");
    for i in 0..2000 {
        log += &format!("[GIN] 2024/04/02 - 10:{:02}:{:02} | 200 |  1.234567s |       127.0.0.1 | POST     \"/api/chat\"\n", (i / 60) % 60, i % 60);
    }
    log + failure + "\n"
}

/// https://github.com/ollama/ollama/issues/3460 — the same models loaded on 0.1.29 and ran out
/// of memory on 0.1.30; going back fixed it. The message is the thread's, verbatim.
const OLLAMA_3460: &str = r#"CUDA error: out of memory current device: 0, in function alloc at C:\a\ollama\ollama\llm\llama.cpp\ggml-cuda.cu:445 cudaMalloc((void **) &ptr, look_ahead_size) GGML_ASSERT: C:\a\ollama\ollama\llm\llama.cpp\ggml-cuda.cu:193: !"CUDA error""#;

/// Regressions and upgrades: a version the log prints far from the failure, inside a known
/// regression's range, makes "move to another release" fix 1 with its evidence.
#[test]
fn a_version_printed_at_the_start_matches_a_known_regression() {
    let f = first(&ollama_log("0.1.30", OLLAMA_3460));
    assert_eq!(f.case.versions["ollama"].version.as_deref(), Some("0.1.30"));
    let fix = &f.fixes[0];
    assert_eq!((fix.id.as_str(), fix.category.as_str()), ("regression:ollama.0-1-30-multi-gpu", "upgrade-or-downgrade"), "{:?}", fix_ids(&f));
    assert!(fix.versions.as_deref().unwrap().contains("this log: ollama 0.1.30"), "{:?}", fix.versions);
    assert!(fix.references.iter().any(|r| r.url == "https://github.com/ollama/ollama/issues/3460"));
    // Outside every range: no regression fix, and none listed to check.
    let f = first(&ollama_log("0.1.32", OLLAMA_3460));
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
    let other = f.fixes.iter().find(|x| x.category.as_str() == "upgrade-or-downgrade").unwrap();
    assert!(!other.detail.as_deref().unwrap_or("").contains("ollama>=0.1.30"), "{:?}", other.detail);
}

/// https://github.com/ollama/ollama/issues/4354 — models that loaded on 0.1.32 failed to
/// allocate the compute buffer on 0.1.33-0.1.36 (ROCm). The runner's lines (verbatim) do not
/// name Ollama; the server's start line, far above, prints its version.
#[test]
fn an_engine_named_only_by_its_banner_still_gets_its_regression() {
    let runner = "llama_kv_cache_init:      ROCm0 KV buffer size =  7182.00 MiB\nllama_new_context_with_model: KV self size  = 7182.00 MiB, K (f16): 3591.00 MiB, V (f16): 3591.00 MiB\nllama_new_context_with_model:  ROCm_Host  output buffer size =     1.98 MiB\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 573.07 MiB on device 0: cudaMalloc failed: out of memory\nggml_gallocr_reserve_n: failed to allocate ROCm0 buffer of size 600903680\nllama_new_context_with_model: failed to allocate compute buf";
    let f = first(&ollama_log("0.1.34", runner));
    assert_eq!(f.fixes[0].id, "regression:ollama.0-1-33-rocm-compute-buffer", "{:?} {:?}", fix_ids(&f), f.case);
}

/// With no version in the log, the fix that suggests another release lists the known
/// ranges to compare with, and is not put first on that account.
#[test]
fn without_a_version_the_known_ranges_are_listed_to_check() {
    let f = first(OLLAMA_3460);
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
    let other = f.fixes.iter().find(|x| x.category.as_str() == "upgrade-or-downgrade").expect("an other-release fix");
    let detail = other.detail.as_deref().unwrap();
    assert!(detail.contains("compare your version") && detail.contains("ollama>=0.1.30,<0.1.31") && detail.contains("ollama>=0.1.17,<0.1.22"), "{detail}");
    assert!(other.references.iter().any(|r| r.url == "https://github.com/ollama/ollama/issues/1952"));
    // A llama.cpp job (no Ollama) is not told about Ollama's releases.
    let f = first("llama_model_load: loaded meta data\nggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: cudaMalloc failed: out of memory\nllama_kv_cache_init: failed to allocate buffer for kv cache");
    if let Some(other) = f.fixes.iter().find(|x| x.category.as_str() == "upgrade-or-downgrade") {
        assert!(!other.detail.as_deref().unwrap_or("").contains("ollama>="), "{:?}", other.detail);
    }
}

/// https://github.com/cupy/cupy/issues/7678 — before 12.2 the pool raised at its limit
/// without freeing its cached blocks (fixed by cupy#7679, in 12.2.0). The message (quoted in
/// the thread) with a `pip list` line printing the release.
#[test]
fn cupy_pool_limit_before_12_2_is_the_known_bug() {
    let msg = "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 805,306,368 bytes (allocated so far: 536,870,912 bytes, limit set to: 1,073,741,824 bytes).";
    let f = first(&format!("cupy-cuda12x              12.1.0\n{msg}"));
    assert_eq!(f.fixes[0].id, "regression:cupy.7-0-limit-fragmentation", "{:?}", fix_ids(&f));
    assert!(f.fixes[0].verified);
    let f = first(&format!("cupy-cuda12x              12.2.0\n{msg}"));
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
}

/// https://github.com/huggingface/transformers/issues/29484 — transformers 4.38 made Llama
/// models need more memory. The record has signs: a transformers 4.38 job that is not a
/// Llama-family model is not blamed on it. (PyTorch's message from pytorch/pytorch#121580.)
#[test]
fn a_narrow_regression_needs_its_sign_in_the_block() {
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 7.75 GiB of which 11.62 MiB is free. Of the allocated memory 7.31 GiB is allocated by PyTorch, and 36.19 MiB is reserved by PyTorch but unallocated.";
    let llama = format!("transformers==4.38.2\n  File \"/usr/local/lib/python3.10/dist-packages/transformers/models/llama/modeling_llama.py\", line 1070, in forward\n{msg}");
    let f = first(&llama);
    assert_eq!(f.fixes[0].id, "regression:transformers.4-38-llama-causal-mask", "{:?}", fix_ids(&f));
    assert!(!f.fixes[0].verified, "a thread-only range is shown as reported");
    let f = first(&format!("transformers==4.38.2\n  File \"/usr/local/lib/python3.10/dist-packages/transformers/models/bert/modeling_bert.py\", line 240, in forward\n{msg}"));
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
}

/// TGI 3.0-3.2 left 5-7% of free memory outside the KV cache (text-generation-inference
/// commits a04356fb, eb3df0f4, 39cfe232, read at tags). The image tag on the `docker run`
/// line prints the release; the server's traceback frame is the record's sign. (PyTorch's
/// message from pytorch/pytorch#121580.)
#[test]
fn a_tgi_release_from_its_image_tag() {
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 11.62 MiB is free. Of the allocated memory 77.31 GiB is allocated by PyTorch, and 36.19 MiB is reserved by PyTorch but unallocated.";
    let frame = "  File \"/opt/conda/lib/python3.11/site-packages/text_generation_server/models/flash_causal_lm.py\", line 1957, in forward";
    let f = first(&format!("docker run --gpus all --shm-size 1g -p 8080:80 ghcr.io/huggingface/text-generation-inference:3.0.1 --model-id meta-llama/Llama-3.1-70B-Instruct --num-shard 4\n{frame}\n{msg}"));
    assert_eq!(f.case.versions["tgi"].version.as_deref(), Some("3.0.1"));
    assert_eq!(f.fixes[0].id, "regression:tgi.3-0-kv-headroom", "{:?}", fix_ids(&f));
    let f = first(&format!("docker run --gpus all ghcr.io/huggingface/text-generation-inference:3.3.0 --model-id m\n{frame}\n{msg}"));
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
}

/// PyTorch 2.9.1's release notes track a memory regression of bfloat16 `F.conv3d` in 2.9.0
/// (pytorch#166643): a 3D convolution on 2.9.0 (`collect_env`'s line) gets the release first.
#[test]
fn a_tracked_pytorch_regression_from_collect_env() {
    let msg = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 11.62 MiB is free. Of the allocated memory 77.31 GiB is allocated by PyTorch, and 36.19 MiB is reserved by PyTorch but unallocated.";
    let frame = "  File \"/usr/local/lib/python3.12/site-packages/torch/nn/modules/conv.py\", line 717, in _conv_forward\n    return F.conv3d(";
    let f = first(&format!("PyTorch version: 2.9.0+cu128\n{frame}\n{msg}"));
    assert_eq!(f.fixes[0].id, "regression:torch.2-9-0-conv3d-bf16", "{:?}", fix_ids(&f));
    let f = first(&format!("PyTorch version: 2.9.1+cu128\n{frame}\n{msg}"));
    assert!(!fix_ids(&f).iter().any(|id| id.starts_with("regression:")), "{:?}", fix_ids(&f));
}

/// https://github.com/pytorch/pytorch/issues/105280 — ROCm 5.6 CI OOMs reporting more free
/// memory than the GPU has stopped when the nodes got the matching KFD driver.
#[test]
fn more_free_than_the_device_has_is_a_driver_mismatch() {
    let f = first("torch.cuda.OutOfMemoryError: HIP out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacty of 31.98 GiB of which 131065.27 GiB is free. Of the allocated memory 24.00 GiB is allocated by PyTorch, and 2.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_HIP_ALLOC_CONF");
    assert_eq!((f.fixes[0].id.as_str(), f.fixes[0].category.as_str()), ("matching-driver", "upgrade-or-downgrade"), "{:?}", fix_ids(&f));
    assert!(f.cause.as_deref().unwrap().contains("more than the device has"), "{:?}", f.cause);
}

fn first_three_kinds(f: &Finding) -> Vec<&str> {
    let mut kinds: Vec<&str> = Vec::new();
    for c in categories(f) {
        if !kinds.contains(&c) {
            kinds.push(c);
        }
    }
    kinds.into_iter().take(3).collect()
}

/// https://github.com/mattmireles/gemma-tuner-multimodal/issues/18 — fixed by a smaller
/// profile. `pytorch.mps-oom` has four threads (2 raised the watermark, 2 shrank the job):
/// a tie on so few threads is broken by the family's and the device group's evidence, in
/// which a smaller working set is the commonest fix, not by the file's order.
#[test]
fn ties_on_entries_with_few_threads_fall_back_to_family_evidence() {
    let f = first("RuntimeError: MPS backend out of memory (MPS allocated: 9.48 GiB, other allocations: 480.00 KiB, max allowed: 9.47 GiB).\nTried to allocate 256 bytes on shared pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory \nallocations (may cause system failure).");
    assert_eq!(f.id, "pytorch.mps-oom");
    assert_eq!(categories(&f).first(), Some(&"smaller-working-set"), "{:?}", fix_ids(&f));
    assert!(first_three_kinds(&f).contains(&"raise-limit"), "the watermark stays among the first three: {:?}", fix_ids(&f));
}

/// https://github.com/marcoslucianops/DeepStream-Yolo/issues/366 — fixed by a smaller
/// builder workspace. TensorRT's entry has three threads, two fixed by its engine setting:
/// the entry's own evidence leads over the device group's general preference.
#[test]
fn an_entrys_own_majority_leads_over_its_group() {
    let f = first("ERROR: [TRT]: 2: [virtualMemoryBuffer.cpp::resizePhysical::160] Error Code 2: OutOfMemory (no further information)\nERROR: [TRT]: 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)\nWARNING: [TRT]: Requested amount of GPU memory (4294967296 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.\nWARNING: [TRT]: Skipping tactic 3 due to insufficient memory on requested size of 4294967296 detected for tactic 0x0000000000000004.\nTry decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().");
    assert_eq!(f.id, "tensorrt.out-of-memory");
    assert_eq!(categories(&f).first(), Some(&"engine-setting"), "{:?}", fix_ids(&f));
}

/// https://github.com/open-mmlab/mmrotate/issues/501 — fixed by a machine with more RAM.
/// The OOM-killer entry has no "bigger machine" fix; public threads of host-memory failures
/// show it often works, so the family-level fix fills the gap among the first three, named
/// as borrowed, behind the entry's own first fix.
#[test]
fn a_kind_the_corpus_shows_works_often_is_among_the_first_three() {
    let f = first("RuntimeError: DataLoader worker (pid ...) is killed by signal: Killed");
    assert_eq!(f.id, "host.oom-killer");
    assert!(first_three_kinds(&f).contains(&"bigger-device"), "{:?}", fix_ids(&f));
    let more_ram = f.fixes.iter().find(|x| x.category.as_str() == "bigger-device").unwrap();
    assert_eq!(more_ram.from_family.as_deref(), Some("generic.host-oom"));
    assert!(f.fixes[0].from_family.is_none(), "a borrowed fix never leads: {:?}", fix_ids(&f));
    let report = diagnose_text("RuntimeError: DataLoader worker (pid ...) is killed by signal: Killed", &Options::default());
    let text = oomdoc_diagnose::render::text(&report, oomdoc_kb::Lang::En, false);
    assert!(text.contains("general advice: this failure's entry has no fix of this kind that fits this case"), "{text}");
}

/// https://github.com/royorel/Lifespan_Age_Transformation_Synthesis/issues/23 — fixed by a
/// smaller interpolation step. 3.79 GiB reserved-but-unallocated covers the 3.21 GiB request
/// (fragmentation in the numbers), which gates the entry's own smaller-job fixes out; a
/// smaller working set still works and is the commonest fix of device OOMs, so it is
/// offered among the first three.
#[test]
fn a_mechanism_fix_does_not_hide_the_commonest_fix() {
    let f = first("RuntimeError: CUDA out of memory. Tried to allocate 3.21 GiB (GPU 0; 11.17 GiB total capacity; 4.47 GiB already allocated; 2.45 GiB free; 8.26 GiB reserved in total by PyTorch)");
    assert_eq!(f.id, "pytorch.cuda-oom");
    assert!(first_three_kinds(&f).contains(&"smaller-working-set"), "{:?}", fix_ids(&f));
}

/// https://github.com/tensorpack/tensorpack/issues/1303 — TensorFlow's BFC warning that "is
/// not a failure": the entry's own answer stays first even though the device group's
/// evidence favours memory fixes it could borrow.
#[test]
fn a_family_fix_fills_a_gap_and_does_not_lead() {
    let f = first("W tensorflow/core/common_runtime/bfc_allocator.cc:237] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.39GiB with freed_by_count=0. The caller indicates that this is not a failure, but may mean that there could be performance gains if more memory were available.");
    assert_eq!(f.id, "bfc.not-a-failure");
    assert_eq!(categories(&f).first(), Some(&"not-a-memory-problem"), "{:?}", fix_ids(&f));
}

/// https://github.com/catie-aq/flashT5/issues/6 — fixed on a GPU with more shared memory
/// (A10G to A100): a bigger GPU is a bigger device, not a kernel config, and with two
/// such threads it is among the first three.
#[test]
fn a_bigger_gpu_is_a_bigger_device() {
    let f = first("`triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 163840, Hardware limit: 101376. Reducing block sizes or num_stages may help.`");
    assert_eq!(f.id, "triton.shared-memory");
    let gpu = f.fixes.iter().find(|x| x.id == "bigger-smem-gpu").expect("offered");
    assert_eq!(gpu.category.as_str(), "bigger-device");
    assert!(first_three_kinds(&f).contains(&"bigger-device"), "{:?}", fix_ids(&f));
}

/// https://github.com/mkocabas/EpipolarPose/issues/6 — the entry names emptying PyTorch's
/// cache as a dead end here (release-other-memory); the family's "free the device" fix of
/// that kind is not borrowed next to it.
#[test]
fn a_kind_the_entry_names_as_a_dead_end_is_not_borrowed() {
    let f = first("RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 7.93 GiB total capacity; 6.19 GiB already allocated; 340.00 MiB free; 551.04 MiB cached)");
    assert!(f.dead_ends.iter().any(|d| d.category.as_str() == "release-other-memory"), "{:?}", f.dead_ends);
    assert!(!f.fixes.iter().any(|x| x.from_family.is_some() && x.category.as_str() == "release-other-memory"), "{:?}", fix_ids(&f));
}

/// https://github.com/eps696/aphantasia/issues/22 — fixed by fewer samples (a smaller working
/// set). Of the 6 GiB card, 1.55 GiB is held outside PyTorch's `reserved in total` (a 1.4-2.0
/// format, so a release before lazy module loading is possible): within what an eager CUDA
/// context (over 1000 MB, pytorch#107667) and a desktop take, so other processes are not
/// named, while dorado#653's 11 GiB on a 12 GiB card still are.
#[test]
fn memory_a_cuda_context_and_display_explain_names_no_other_process() {
    let f = first("RuntimeError: CUDA out of memory. Tried to allocate 60.00 MiB (GPU 0; 6.00 GiB total capacity; 4.11 GiB already allocated; 34.82 MiB free; 4.42 GiB reserved in total by PyTorch)");
    assert!(!categories(&f).contains(&"release-other-memory"), "{:?}", fix_ids(&f));
    assert!(categories(&f).iter().take(2).any(|c| *c == "smaller-working-set"), "{:?}", fix_ids(&f));
    let f = first("CUDA out of memory. Tried to allocate 1.02 GiB (GPU 0; 11.76 GiB total capacity; 89.90 MiB already allocated; 612.12 MiB free; 132.00 MiB reserved in total by PyTorch)");
    assert_eq!(categories(&f).first(), Some(&"release-other-memory"), "{:?}", fix_ids(&f));
}

/// https://github.com/vllm-project/vllm/issues/10517 (a comment's log, RTX 3090): the log
/// states `gpu_memory_utilization=0.90`. A fixed-value fix is kept only when it moves the
/// stated setting the way its kind says: raising to 0.95 is offered; "raise" to 0.90 or
/// below, or "lower" to 0.90 or above, is not.
#[test]
fn a_fixed_value_is_not_offered_against_the_setting_the_log_states() {
    use oomdoc_diagnose::advise::moves_stated_settings;
    use oomdoc_diagnose::facts::Facts;
    use oomdoc_kb::FixCategory::{EngineSetting, RaiseLimit};
    let f = first("Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.98GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=2.89GiB gpu_memory_utilization=0.90\n# GPU blocks: 1478, # CPU blocks: 2048\nMaximum concurrency for 29000 tokens per request: 0.82x\nThe model's max seq len (29000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.");
    assert_eq!(f.id, "vllm.max-model-len");
    assert_eq!(f.case.settings.get("gpu_memory_utilization").map(String::as_str), Some("0.90"));
    assert!(f.fixes.iter().any(|x| x.id == "more-cache-memory"), "{:?}", fix_ids(&f));
    let none = Facts::default();
    assert!(moves_stated_settings("vllm serve MODEL --gpu-memory-utilization 0.95", RaiseLimit, &f.case, &none));
    assert!(!moves_stated_settings("vllm serve MODEL --gpu-memory-utilization 0.90", RaiseLimit, &f.case, &none));
    assert!(!moves_stated_settings("LLM(model='m', gpu_memory_utilization=0.9)", RaiseLimit, &f.case, &none));
    assert!(moves_stated_settings("vllm serve MODEL --max-model-len 8192 --gpu-memory-utilization 0.85", EngineSetting, &f.case, &none));
    assert!(!moves_stated_settings("vllm serve MODEL --gpu-memory-utilization 0.92", EngineSetting, &f.case, &none));
}

/// https://github.com/lllyasviel/Fooocus/issues/1139: the MPS allocator's own hint "Use
/// PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit" is a hint, not the user's setting.
#[test]
fn the_mps_watermark_hint_is_not_a_stated_setting() {
    let f = first("RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause system failure).");
    assert!(f.case.settings.is_empty(), "{:?}", f.case);
    assert_eq!(f.case.hinted, vec!["PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0"]);
}

/// https://github.com/lllyasviel/Fooocus/issues/1139 — PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 let
/// the job run (also Fooocus#980, an 8 GB M1). With 0.0 the MPS allocator skips its high-watermark
/// check (MPSAllocator.mm `setHighWatermarkRatio`, `alloc_buffer`): a fix of last resort, not a
/// dead end.
#[test]
fn disabling_the_mps_watermark_is_a_fix_not_a_dead_end() {
    let f = first("RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: 172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause system failure).");
    assert!(f.fixes.iter().any(|x| x.id == "disable-watermark" && x.code.as_deref() == Some("export PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0")), "{:?}", fix_ids(&f));
    assert!(!f.dead_ends.iter().any(|d| d.action.contains("HIGH_WATERMARK_RATIO=0.0")), "{:?}", f.dead_ends);
}

/// https://github.com/pytorch/xla/pull/9470 — raising the kernel's vmem_limit_bytes (computed
/// from its block sizes) fixed it. The message states no sizes, so nothing shows the need is
/// beyond the chip's VMEM: no "above physical VMEM" dead end and no "beyond any limit" fix.
#[test]
fn a_vmem_need_not_shown_to_exceed_the_chip_is_not_called_beyond_any_limit() {
    let f = first("ValueError: Ran out of memory in memory space vmem while allocating on stack for %quantized_matmul_int8");
    assert!(!f.dead_ends.iter().any(|d| d.category.as_str() == "raise-limit"), "{:?}", f.dead_ends);
    assert!(!fix_ids(&f).contains(&"shrink-beyond-chip"), "{:?}", fix_ids(&f));
}

/// https://github.com/knaw-huc/loghi/issues/55 — TF_GPU_ALLOCATOR=cuda_malloc_async fixed it. The
/// BFC warning has no statistics, so a full pool is not shown: the async allocator is offered
/// (hedged) and not listed as a dead end, and the warning's own hint is not the user's setting.
#[test]
fn cuda_malloc_async_is_no_dead_end_without_statistics_showing_a_full_pool() {
    let f = first("9:07:50.044545: W external/local_xla/xla/tsl/framework/bfc_allocator.cc:501] Allocator (GPU_0_bfc) ran out of memory trying to allocate 34.10MiB (rounded to 35758080)requested by op StatefulPartitionedCall/model_new14_1/batch_normalization_36_1/moments/SquaredDifference\nIf the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation.");
    assert!(f.case.settings.is_empty(), "{:?}", f.case);
    assert!(!f.dead_ends.iter().any(|d| d.action.contains("cuda_malloc_async")), "{:?}", f.dead_ends);
    assert!(categories(&f).iter().take(3).any(|c| *c == "allocator-setting"), "{:?}", fix_ids(&f));
    assert!(f.cause.as_deref().unwrap().contains("cannot tell a full pool"), "{:?}", f.cause);
}

/// XLA's PjRt client wording (`Execution of replica N failed`) is JAX's runtime, not
/// TensorFlow's: a BFC report that names no framework but carries it gets no TensorFlow-only
/// allocator variable. Real message: google-deepmind/alphafold#355.
#[test]
fn the_pjrt_client_wording_is_not_tensorflow() {
    let f = first("Allocator (GPU_0_bfc) ran out of memory trying to allocate 34.71GiB (rounded to 37274034432)requested by op\nExecution of replica 0 failed: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 37274034352 bytes.\n");
    let tf_only = f.fixes.iter().filter(|fx| fx.code.as_deref().unwrap_or("").contains("TF_GPU_ALLOCATOR") || fx.title.contains("TF_GPU_ALLOCATOR")).count();
    assert_eq!(tf_only, 0, "{:?}", fix_ids(&f));
}

/// A kernel's scoped-VMEM failure whose message states no sizes still offers raising the
/// kernel's limit (without a computed value): it is what fixed pytorch/xla#9470, whose message
/// is this one line.
#[test]
fn a_vmem_failure_without_sizes_still_offers_a_higher_limit() {
    let f = first("ValueError: Ran out of memory in memory space vmem while allocating on stack for %quantized_matmul_int8\n");
    assert!(fix_ids(&f).iter().take(3).any(|id| *id == "raise-vmem-limit-unsized"), "{} {:?}", f.id, fix_ids(&f));
}

/// A "Largest program allocations" entry pasted without its heading names no memory; its
/// allocation type does: scoped allocations make up a VMEM requirement, so this fragment of
/// vllm-project/tpu-inference#2803 (a VMEM OOM fixed by smaller block sizes) is VMEM, not HBM.
#[test]
fn a_headless_list_of_scoped_allocations_is_vmem() {
    let f = first("(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]      Allocation type: scoped\n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]      ==========================\n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184] \n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]   5. Size: 4.00M\n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]      Operator: op_name=\"jit(step_fun)/jit(_jax_attn_func)/jit(ragged_paged_attention)/jit(run)/RPAm-p_256-bq_512_256-bkv_2048_512/pallas_call\" stack_frame_id=459\n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]      Shape: bf16[8,2048,128]{2,1,0:T(16,128)(2,1)}\n(EngineCore pid=106339) ERROR 06-03 07:41:11 [core.py:1184]      Unpadded size: 4.00M");
    assert_eq!(f.memory_space.as_deref(), Some("vmem"), "{} {:?}", f.id, f.memory_space);
}

/// https://github.com/ProGamerGov/neural-dream/pull/6 — torch.load restored a checkpoint's CUDA storages onto a full GPU; map_location
/// fixed it. The traceback runs through torch/serialization.py: loading on the CPU comes first.
#[test]
fn an_oom_inside_torch_load_offers_map_location_first() {
    let f = first("Traceback (most recent call last):\n  File \"neural_dream.py\", line 793, in <module>\n    main()\n  File \"neural_dream.py\", line 121, in main\n    cnn, layerList = loadCaffemodel(params.model_file, params.pooling, params.gpu, params.disable_check, True)\n  File \"/home/xxx/neural-dream/neural_dream/CaffeLoader.py\", line 412, in loadCaffemodel\n    cnn.load_state_dict(torch.load(model_file)['state_dict'], strict=(not disable_check))\n  File \"/home/xxx/.local/lib/python3.7/site-packages/torch/serialization.py\", line 529, in load\n    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)\n  File \"/home/xxx/.local/lib/python3.7/site-packages/torch/serialization.py\", line 702, in _legacy_load\n    result = unpickler.load()\n  File \"/home/xxx/.local/lib/python3.7/site-packages/torch/serialization.py\", line 665, in persistent_load\n    deserialized_objects[root_key] = restore_location(obj, location)\nRuntimeError: CUDA error: out of memory");
    assert_eq!(fix_ids(&f).first(), Some(&"load-checkpoint-on-cpu"), "{} {:?}", f.id, fix_ids(&f));
}

/// https://github.com/sgrvinod/a-PyTorch-Tutorial-to-Image-Captioning/issues/57 — validate() built autograd graphs; torch.no_grad() fixed it. The raw CUDA error
/// (no sizes) in a validation frame gets the evaluation fix first, as the allocator's message does.
#[test]
fn a_raw_cuda_error_in_validation_offers_no_grad_first() {
    let f = first("Traceback (most recent call last):\n  File \"train.py\", line 349, in <module>\n    main()\n  File \"train.py\", line 127, in main\n    criterion=criterion)\n  File \"train.py\", line 282, in validate\n    scores_copy = scores.clone()\nRuntimeError: CUDA error: out of memory");
    assert_eq!(fix_ids(&f).first(), Some(&"no-grad-in-evaluation"), "{} {:?}", f.id, fix_ids(&f));
}

/// https://github.com/simonmeister/UnFlow/issues/32 — another process held the GPU; freeing it fixed it (a smaller batch had not). The
/// failing node is under a variable's `Initializer` scope, before any batch is on the GPU: the
/// first fix looks for what fills the GPU, and a smaller batch is a dead end.
#[test]
fn a_tensorflow_oom_in_a_variable_initializer_is_not_the_batch() {
    let f = first("ResourceExhaustedError (see above for traceback): OOM when allocating tensor of shape [1024] and type float\n         [[Node: flownet_c/conv6/biases/Adam/Initializer/zeros = Const[_class=[\"loc:@flownet_c/conv6/biases\"], dtype=DT_FLOAT, value=Tensor<type: float shape: [1024] values: 0 0 0...>, _device=\"/job:localhost/replica:0/task:0/gpu:0\"]()]]");
    assert_eq!(fix_ids(&f).first(), Some(&"full-before-the-first-batch"), "{} {:?}", f.id, fix_ids(&f));
    assert!(!categories(&f).contains(&"smaller-working-set"), "{:?}", fix_ids(&f));
    assert!(f.dead_ends.iter().any(|d| d.category.as_str() == "smaller-working-set"), "{:?}", f.dead_ends);
}

/// https://github.com/vllm-project/tpu-inference/pull/508 — raising the ragged paged attention kernel's vmem_limit_bytes fixed the bare
/// VMEM message (no sizes): a higher limit is offered among the first fixes, without a value.
#[test]
fn a_bare_vmem_program_failure_offers_a_higher_kernel_limit() {
    let f = first("jaxlib._jax.XlaRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem ");
    assert!(fix_ids(&f).iter().take(3).any(|id| *id == "raise-kernel-vmem-limit-unsized"), "{} {:?}", f.id, fix_ids(&f));
}

/// https://github.com/pytorch/helion/pull/2321 — "Estimated X exceeds Y vmem capacity" (decimal MB: 67.11MB is a TPU7x core's
/// 64 MiB) is read for its sizes: the need is four times the core's VMEM, so no higher limit is
/// offered and raising it is a dead end (smaller blocks fixed it).
#[test]
fn an_estimate_beyond_the_vmem_capacity_is_read_and_gets_no_higher_limit() {
    let f = first("RuntimeError: XLA:TPU compile permanent error.\nRan out of memory in memory space vmem.\nEstimated 268.96MB exceeds 67.11MB vmem capacity.");
    assert_eq!(f.sizes.limit, Some(67_110_000), "{:?}", f.sizes);
    assert!(!categories(&f).contains(&"raise-limit"), "{:?}", fix_ids(&f));
    assert!(f.dead_ends.iter().any(|d| d.category.as_str() == "raise-limit"), "{:?}", f.dead_ends);
}

/// https://github.com/Vaibhavs10/insanely-fast-whisper/issues/162 — 4.48 GiB of the 11 GiB card free against a 60 MiB request: the device was not
/// full when the message was written. The cause says so, hedged, instead of "the device is full".
#[test]
fn free_memory_above_the_request_is_not_called_a_full_device() {
    let f = first("CUDA out of memory. Tried to allocate 60.00 MiB. GPU 0 has a total capacty of 11.00 GiB of which 4.48 GiB is free. Of the allocated memory 5.19 GiB is allocated by PyTorch, and 283.84 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
    let cause = f.cause.as_deref().unwrap_or("");
    assert!(!cause.contains("device is full") && cause.contains("was not full"), "{cause}");
    assert_eq!(f.cause_confidence.as_deref(), Some("hedged"));
}

/// https://github.com/jungomi/math-formula-recognition/issues/7 — a 1 MB host allocation failed because other processes had filled the RAM;
/// closing them fixed it. Freeing what others hold is among the first three fixes.
#[test]
fn a_host_allocator_failure_offers_freeing_ram_held_elsewhere() {
    let f = first("RuntimeError: [enforce fail at ..\\c10\\core\\CPUAllocator.cpp:72] data. DefaultCPUAllocator: not enough memory: you trie\nd to allocate 1179648 bytes. Buy new RAM!");
    assert!(categories(&f).iter().take(3).any(|c| *c == "release-other-memory"), "{} {:?}", f.id, fix_ids(&f));
}

/// https://github.com/studioml/studio/issues/202 — the glog prefixes (`E tensorflow/stream_executor/cuda/cuda_dnn.cc:371]`) are the
/// only sign of TensorFlow; they are stripped from the text but still name the framework, so the
/// first fix is TensorFlow's memory growth (what fixed it), not JAX's XLA_PYTHON_CLIENT_* variables.
#[test]
fn a_glog_prefix_names_tensorflow_for_the_case() {
    let f = first("2017-09-15 14:20:28.430411: E tensorflow/stream_executor/cuda/cuda_dnn.cc:371] could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n2017-09-15 14:20:28.430460: E tensorflow/stream_executor/cuda/cuda_dnn.cc:338] could not destroy cudnn handle: CUDNN_STATUS_BAD_PARAM\n2017-09-15 14:20:28.430468: F tensorflow/core/kernels/conv_ops.cc:672] Check failed: stream->parent()->GetConvolveAlgorithms( conv_parameters.ShouldIncludeWinogradNonfusedAlgo<T>(), &algorithms)");
    assert!(f.case.has("tensorflow"), "{:?}", f.case);
    assert_eq!(fix_ids(&f).first(), Some(&"tf-memory-growth"), "{:?}", fix_ids(&f));
}

/// https://github.com/jax-ml/jax/issues/788 — jaxlib of 2019 logged from `external/org_tensorflow/...` (TensorFlow's code built into
/// jaxlib as a Bazel dependency): that prefix is not a TensorFlow job.
#[test]
fn an_external_org_tensorflow_prefix_is_not_tensorflow() {
    let f = first("2019-06-08 03:44:36.084180: E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:828] failed to allocate 3.39G (3640655872 bytes) from devic\ne: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n2019-06-08 03:44:36.087182: E external/org_tensorflow/tensorflow/compiler/xla/service/gpu/cudnn_conv_algorithm_picker.cc:555] Resource exhausted: Failed to allo\ncate request for 3.39GiB (3640655872B) on device ordinal 0");
    assert!(!f.case.has("tensorflow"), "{:?}", f.case);
}

/// A bare cuDNN status with no framework in the log (tensorflow#39989's title: TensorFlow, fixed
/// by memory growth): the first fix gives both frameworks' forms instead of asserting JAX.
#[test]
fn a_cudnn_status_without_a_framework_gets_both_frameworks_forms() {
    let f = first("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED");
    assert_eq!(fix_ids(&f).first(), Some(&"on-demand-allocation"), "{} {:?}", f.id, fix_ids(&f));
    assert!(!f.cause.as_deref().unwrap_or("").starts_with("JAX"), "{:?}", f.cause);
}

/// https://github.com/ymoslem/OpenNMT-Tutorial/issues/6 — Colab's memory cgroup killed a DataLoader worker (its pid in both lines); num_workers 0
/// fixed it. The log names the process that died and the cgroup that killed it: both fixes are singled out (the first two),
/// and the entry's measured evidence orders them.
#[test]
fn a_killed_dataloader_worker_gets_fewer_workers_first() {
    let f = first("RuntimeError: DataLoader worker (pid 629) is killed by signal: Killed.\n```\n\nAs verified by running `dmesg -T` this is a RAM out of memory error.\n```\nMemory cgroup out of memory: Killed process 629 (onmt_train) total-vm:14119556kB, anon-rss:6538204kB, file-rss:80652kB, shmem-rss:16kB, UID:0 pgtables:13432kB oom_score_adj:0");
    assert!(fix_ids(&f).iter().take(2).any(|id| *id == "worker-killed-fewer-workers"), "{} {:?}", f.id, fix_ids(&f));
    assert!(categories(&f).iter().take(2).any(|c| *c == "raise-limit"), "{:?}", fix_ids(&f));
}

/// https://github.com/cupy/cupy/issues/7678 — CuPy up to 12.1 raised at the pool limit without freeing its cached blocks
/// (memory.pyx at v12.1.0; v12.2.0 frees and retries): on the limit path, freeing the blocks first
/// is a fix, not the "it already freed them" dead end of the device path.
#[test]
fn cupy_at_its_pool_limit_gets_free_all_blocks_as_a_fix_not_a_dead_end() {
    let f = first("cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 805,306,368 bytes (allocated so far: 536,870,912 bytes, limit set to: 1,073,741,824 bytes).");
    assert!(fix_ids(&f).contains(&"free-blocks-before-allocating-at-limit"), "{:?}", fix_ids(&f));
    assert!(!f.dead_ends.iter().any(|d| d.id == "free-all-blocks-on-oom"), "{:?}", f.dead_ends);
}

/// https://github.com/dbolya/yolact/issues/680 — fixed by `num_workers=0`: the log names a
/// DataLoader worker, so fewer workers is the first fix.
/// https://github.com/hackingthemarkets/tradekit/issues/2 — a `pip install` killed in Docker's
/// VM (fixed by giving Docker more memory): no worker in the log, no DataLoader advice.
#[test]
fn fewer_workers_only_where_the_log_shows_workers() {
    let f = first("RuntimeError: DataLoader worker (pid 1620) is killed by signal: Killed.");
    assert_eq!(fix_ids(&f).first(), Some(&"worker-killed-fewer-workers"), "{:?}", fix_ids(&f));
    let f = first("Collecting torch\n  Downloading torch-1.7.1-cp38-cp38-manylinux1_x86_64.whl (776.8 MB)\nKilled\nERROR: Service 'web' failed to build : The command '/bin/sh -c pip3 install -r requirements.txt' returned a non-zero code: 137");
    assert!(!fix_ids(&f).contains(&"fewer-workers"), "{:?}", fix_ids(&f));
    assert_eq!(categories(&f).first(), Some(&"raise-limit"), "{:?}", fix_ids(&f));
}

/// https://github.com/ml-explore/mlx/issues/566 — an int32 element count overflowed: no
/// machine has 8446744063349813240 bytes, so the size is the bug, not the memory.
#[test]
fn an_impossible_host_request_points_to_the_size() {
    let f = first("malloc error \"Unable to allocate\" 8446744063349813240 bytes");
    assert_eq!(categories(&f).first(), Some(&"fix-code-or-data"), "{:?}", fix_ids(&f));
}

/// https://github.com/tensorflow/tensorflow/issues/39989 — fixed by TF memory growth. The
/// line alone names no framework: no JAX-only or TF-only fix leads, the neutral one names each.
#[test]
fn an_unknown_framework_gets_the_framework_neutral_allocator_fix() {
    let f = first("Could not create cudnn handle: CUDNN_STATUS_ALLOC_FAILED");
    assert!(f.case.frameworks.is_empty());
    assert_eq!(fix_ids(&f).first(), Some(&"on-demand-allocation"), "{:?}", fix_ids(&f));
    assert!(!fix_ids(&f).contains(&"lower-fraction") && !fix_ids(&f).contains(&"tf-memory-growth"), "{:?}", fix_ids(&f));
}

/// https://github.com/hacksider/Deep-Live-Cam/issues/645 — ONNX Runtime's cuBLAS handle
/// failure: TensorFlow's and JAX's allocator settings do not apply to it.
#[test]
fn onnx_runtime_gets_no_tensorflow_or_jax_settings() {
    let r = diagnose_text("`onnxruntime.capi.onnxruntime_pybind11_state.RuntimeException: [ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : Non-zero status code returned while running Gemm node. Name:'fc1' Status Message: D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:121 onnxruntime::CudaCall D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_call.cc:114 onnxruntime::CudaCall CUBLAS failure 3: CUBLAS_STATUS_ALLOC_FAILED ; GPU=0 ; hostname=TOBI ; file=D:\\a\\_work\\1\\s\\onnxruntime\\core\\providers\\cuda\\cuda_execution_provider.cc ; line=168 ; expr=cublasCreate(&cublas_handle_);`", &Options::default());
    assert!(!r.findings.is_empty());
    for f in &r.findings {
        assert!(f.case.has("onnxruntime"), "{:?}", f.case);
        for fx in &f.fixes {
            let code = fx.code.as_deref().unwrap_or("");
            assert!(!code.contains("set_memory_growth") && !code.contains("XLA_PYTHON_CLIENT"), "{}: {code}", fx.id);
        }
    }
}

/// https://github.com/tony-framework/TonY/pull/486 — fixed by turning on TF memory growth.
/// The glog prefix that names TensorFlow's source is stripped from the message, but it still
/// says which framework logged it: TF's fix, not JAX's.
#[test]
fn a_glog_source_path_names_the_framework() {
    let f = first("2020-11-25 09:06:12.391615: E tensorflow/stream_executor/cuda/cuda_dnn.cc:328] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR");
    assert!(f.case.has("tensorflow"), "{:?}", f.case);
    assert_eq!(fix_ids(&f).first(), Some(&"tf-memory-growth"), "{:?}", fix_ids(&f));
    assert!(!fix_ids(&f).contains(&"lower-fraction"), "{:?}", fix_ids(&f));
}

/// https://github.com/verl-project/verl/issues/302 — vLLM's rollout inside verl (its sleep
/// mode's cumem allocator) ran out of memory; a lower rollout gpu_memory_utilization fixed it.
/// The allocator's source path names vLLM: its budgets are the fix, not a smaller batch.
#[test]
fn vllms_cumem_allocator_gets_vllms_budgets() {
    let f = first("cuda error: out of memory at /workspace/csrc/cumem_allocator.cpp:62");
    assert!(f.case.has("vllm"), "{:?}", f.case);
    assert_eq!(fix_ids(&f).first(), Some(&"vllm-budgets"), "{:?}", fix_ids(&f));
}

/// https://github.com/vllm-project/vllm-ascend/issues/1987 — vLLM on Ascend NPUs (vllm-ascend):
/// torch_npu's message, with vLLM's command line in the report. vllm-ascend's NPU worker sizes
/// the KV cache from gpu_memory_utilization, so vLLM's budgets are offered, not only torch_npu's.
#[test]
fn vllm_on_an_npu_gets_vllms_budgets() {
    let f = first("export PYTORCH_NPU_ALLOC_CONF=expandable_segments:True\n\nvllm serve /root/autodl-tmp/model/ZhipuAI/GLM-4-32B-0414 \\\n  -tp 2\\\n  --trust-remote-code \\\n  --dtype bfloat16 \\\n  --max-model-len 1024 \\\n  --swap-space 16 \\\n  --gpu-memory-utilization 0.6 \\\n  --served-model-name \"glm4\" \\\n  --host 0.0.0.0 \\\n  --port 8001\n\nRuntimeError: NPU out of memory. Tried to allocate 3.47 GiB (NPU 0; 60.97 GiB total capacity; 58.92 GiB already allocated; 58.92 GiB current active; 1.66 GiB free; 58.95 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.");
    assert_eq!(f.id, "npu.out-of-memory");
    assert!(f.case.has("vllm"), "{:?}", f.case);
    assert!(fix_ids(&f).contains(&"vllm-ascend-budgets"), "{:?}", fix_ids(&f));
}

/// https://github.com/Comfy-Org/ComfyUI/issues/1246 — after ComfyUI began keeping models in
/// VRAM, its maintainer added --disable-smart-memory for the old behaviour. A ComfyUI job gets
/// ComfyUI's own memory options.
#[test]
fn comfyui_gets_its_own_memory_options() {
    let f = first("Error occurred when executing KSamplerAdvanced:\n\nAllocation on device 0 would exceed allowed memory. (out of memory)\nCurrently allocated : 7.99 GiB\nRequested : 10.00 MiB\nDevice limit : 15.99 GiB\nFree (according to CUDA): 6.61 GiB\nPyTorch limit (set by user-supplied memory fraction)\n: 8.00 GiB");
    assert!(f.case.has("comfyui"), "{:?}", f.case);
    assert!(fix_ids(&f).contains(&"comfyui-memory-options"), "{:?}", fix_ids(&f));
}

/// https://github.com/VoltaML/voltaML-fast-stable-diffusion/issues/15 — the OutOfMemory errors
/// came with "Skipping tactic": the builder skipped tactics whose workspace did not fit and the
/// engine still built. Where a tactic was skipped, that reading is offered among the fixes.
#[test]
fn skipped_tensorrt_tactics_may_be_only_warnings() {
    let f = first("[12/09/2022-20:25:24] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)\n[12/09/2022-20:25:24] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)\n[12/09/2022-20:25:24] [TRT] [W] Requested amount of GPU memory (17179869184 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.\n[12/09/2022-20:25:25] [TRT] [W] Skipping tactic 8 due to insufficient memory on requested size of 17179869184 detected for tactic 0x000000000000003c.\nTry decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().");
    assert_eq!(f.id, "tensorrt.out-of-memory");
    assert!(fix_ids(&f).contains(&"skipped-tactics-only"), "{:?}", fix_ids(&f));
    assert!(categories(&f).contains(&"not-a-memory-problem"), "{:?}", categories(&f));
}

/// https://github.com/tensorflow/tensorflow/issues/36025 — fixed by memory growth. TensorFlow's
/// conv kernel could not list cuDNN's algorithms (`conv_ops_gpu.cc`: "This is probably because
/// cuDNN failed to initialize"): a masked out-of-memory, likely (a version mismatch reads the
/// same), in TensorFlow, so its memory-growth setting comes first.
#[test]
fn tensorflow_cudnn_failed_to_initialize_is_a_likely_masked_oom_with_memory_growth_first() {
    let f = first("Unknown: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed above.");
    assert_eq!(f.id, "xla-gpu.masked-cudnn");
    assert_eq!(format!("{:?}", f.confidence).to_lowercase(), "likely");
    assert_eq!(fix_ids(&f).first(), Some(&"tf-memory-growth"), "{:?}", fix_ids(&f));
    // TensorFlow's own version-mismatch line above it says the library did not load: no finding.
    // (Both lines copied from one public write-up of a TF-TRT setup, where they came from two
    // runs; joined here to test the guard.)
    let r = diagnose_text(
        "E tensorflow/stream_executor/cuda/cuda_dnn.cc:343] Loaded runtime CuDNN library: 7.1.3 but source was compiled with: 7.2.1. CuDNN library major and minor version needs to match or have higher minor version in case of CuDNN 7.0 or later version.\nUnknownError (see above for traceback): Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so try looking to see if a warning log message was printed above.",
        &Options::default(),
    );
    assert!(r.findings.iter().all(|f| f.id != "xla-gpu.masked-cudnn"), "{:?}", r.findings.iter().map(|f| &f.id).collect::<Vec<_>>());
}

/// https://github.com/TL-System/plato/issues/241 — fixed by the file_system sharing strategy.
/// `unable to open shared memory object … in read-write mode` with no reason after it is a
/// full /dev/shm or the open-file limit, the limit as often as not in public threads (issue
/// 21 §4: too many open files on shared memory is no `oom` finding): alone it is none.
#[test]
fn shm_open_with_no_reason_alone_is_no_finding() {
    assert!(diagnose_text("RuntimeError: unable to open shared memory object </torch_blabla> in read-write mode", &Options::default()).findings.is_empty());
    // With the reason stated (a full /dev/shm) the strategy stays a dead end.
    // (https://github.com/idiap/ESLAM/issues/20, in tests/corpus/families/hosts-2.jsonl)
    let f = first("RuntimeError: unable to write to file </torch_31911_952036340_6686>: No space left on device (28)");
    assert_eq!(f.id, "host.dev-shm");
    assert!(!fix_ids(&f).contains(&"file-system-strategy-fd-limit"), "{:?}", fix_ids(&f));
}

/// Compilers killed for memory, as their drivers report it: GCC's older ICE form
/// (https://github.com/JakobEngel/dso/issues/8, fixed with `make -j4`) and nvcc naming the
/// stage that died (https://github.com/cms-sw/cmssw/issues/43117).
#[test]
fn a_compiler_stage_killed_is_a_compiler_oom() {
    for t in ["c++: internal compiler error: Killed (program cc1plus)", "nvcc error   : 'cudafe++' died due to signal 9 (Kill signal)"] {
        let f = first(t);
        assert_eq!((f.id.as_str(), f.memory_space.as_deref()), ("host.compiler-oom", Some("host")), "{t}");
    }
}

/// https://github.com/huggingface/text-generation-inference/issues/866 — the JSON
/// `outcomes.by_case`: the entry's threads that share a fact of this case (a serving job, a
/// 16 GiB card), one cell per facet (`advise::case_facets`), beside the entry's own counts.
#[test]
fn outcomes_are_split_by_the_facts_of_the_case() {
    let f = first("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 15.77 GiB total capacity; 15.37 GiB already allocated; 13.62 MiB free; 15.77 GiB allowed; 15.40 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n rank=0\nError: ShardCannotStart\n2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start");
    let o = f.outcomes.as_ref().expect("the entry has resolved threads");
    let facets: Vec<&str> = o.by_case.iter().map(|c| c.facet.as_str()).collect();
    assert!(facets.contains(&"workload=inference") && facets.contains(&"device=large"), "{}: {facets:?}", f.id);
    for cell in &o.by_case {
        assert!(cell.threads > 0 && cell.threads <= o.threads, "{cell:?}");
        assert_eq!(cell.categories.iter().map(|c| c.count).max(), cell.categories.first().map(|c| c.count), "most threads first: {cell:?}");
    }
}

/// https://github.com/TavernAI/TavernAI-v1/issues/15 — KoboldAI re-raised PyTorch's OOM as
/// "KoboldAI ran out of memory: …" (aiserver.py @1.19.2); a chat history grown to the context
/// budget was fixed by a smaller context. The engine is read from its own wording, the job
/// serves, and KoboldAI's budget (Max Tokens, GPU layers) is the first fix: the corpus's
/// inference threads of this entry were mostly fixed by an engine's setting. No training-only
/// change (gradient accumulation, checkpointing) is offered.
#[test]
fn koboldai_oom_offers_koboldai_budgets_not_training_fixes() {
    let f = first("    msg: 'KoboldAI ran out of memory: CUDA out of memory. Tried to allocate 26.00 MiB (GPU 0; 14.76 GiB total capacity; 13.65 GiB already allocated; 9.88 MiB free; 13.85 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF',\n    type: 'out_of_memory.gpu.cuda'");
    assert_eq!(f.id, "pytorch.cuda-oom");
    assert!(f.case.has("koboldai"), "{:?}", f.case);
    assert_eq!(f.case.workload.as_deref(), Some("serving"));
    assert_eq!(fix_ids(&f).first(), Some(&"koboldai-budgets"), "{:?}", fix_ids(&f));
    let kobold = &f.fixes[0];
    assert_eq!(kobold.category.as_str(), "engine-setting");
    assert!(kobold.title.contains("--breakmodel_gpulayers") && kobold.title.contains("default 1024"), "{}", kobold.title);
    for training in ["smaller-batch", "activation-checkpointing"] {
        assert!(!fix_ids(&f).contains(&training), "{training} offered to a server: {:?}", fix_ids(&f));
    }
}

/// https://github.com/huggingface/text-generation-inference/issues/866 — Flan-UL2 did not fit
/// one 16 GB V100; `--num-shard 4` fixed it. TGI's launcher says the shard failed to start,
/// which it says before the shard reports ready (launcher/src/main.rs:1677 @v3.3.7), so
/// before the warmup its token budgets size: those budgets are not offered, sharding is.
#[test]
fn tgi_shard_that_failed_to_start_gets_no_token_budgets() {
    let f = first("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 MiB (GPU 0; 15.77 GiB total capacity; 15.37 GiB already allocated; 13.62 MiB free; 15.77 GiB allowed; 15.40 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n rank=0\nError: ShardCannotStart\n2023-08-17T10:23:27.032737Z ERROR text_generation_launcher: Shard 0 failed to start\n2023-08-17T10:23:27.032758Z  INFO text_generation_launcher: Shutting down shards");
    assert!(f.case.has("tgi"), "{:?}", f.case);
    assert_eq!(f.case.workload.as_deref(), Some("serving"));
    assert!(!fix_ids(&f).contains(&"tgi-budgets"), "{:?}", fix_ids(&f));
    assert!(categories(&f).iter().take(4).any(|c| *c == "distribute-or-offload"), "{:?}", fix_ids(&f));
    assert!(!fix_ids(&f).contains(&"smaller-batch"), "{:?}", fix_ids(&f));
}

/// https://github.com/huggingface/text-generation-inference/issues/653 — a running TGI server
/// failed a request's prefill (the router's "Request failed during generation", the launcher's
/// "Method Prefill encountered an error"): after start-up, so TGI's token budgets, with their
/// defaults, are offered.
#[test]
fn tgi_oom_after_start_offers_tgi_budgets() {
    let f = first(":infer:send_error: text_generation_router::infer: router/src/infer.rs:554: Request failed during generation: Server error: CUDA out of memory. Tried to allocate 16.00 MiB (GPU 0; 22.20 GiB total capacity; 20.75 GiB already allocated; 5.12 MiB free; 22.20 GiB allowed; 20.86 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF\n2023-07-19T21:02:09.363221Z ERROR text_generation_launcher: Method Prefill encountered an error.");
    assert!(f.case.has("tgi"), "{:?}", f.case);
    assert_eq!(f.case.workload.as_deref(), Some("serving"));
    let tgi = f.fixes.iter().find(|x| x.id == "tgi-budgets").unwrap_or_else(|| panic!("{:?}", fix_ids(&f)));
    assert_eq!(tgi.category.as_str(), "engine-setting");
    assert!(tgi.detail.as_deref().unwrap().contains("max_input_tokens + 50"), "{:?}", tgi.detail);
    assert!(categories(&f).iter().take(3).any(|c| *c == "engine-setting"), "{:?}", fix_ids(&f));
}

/// https://github.com/oobabooga/textgen/pull/2803 — text-generation-webui's ExLlama_HF loader
/// put the whole model on GPU 0 (fixed by the release that passed --gpu-split on). The
/// install folder names the application: the job serves, training-only fixes are gone, and
/// the webui's own context and GPU-share settings are offered.
#[test]
fn text_generation_webui_is_read_from_its_paths() {
    let f = first("Traceback (most recent call last):\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\server.py\", line 62, in load_model_wrapper\n    shared.model, shared.tokenizer = load_model(shared.model_name, loader)\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\modules\\models.py\", line 66, in load_model\n    output = load_func_map[loader](model_name)\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\modules\\models.py\", line 285, in ExLlama_HF_loader\n    return ExllamaHF.from_pretrained(model_name)\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\modules\\exllama_hf.py\", line 82, in from_pretrained\n    return ExllamaHF(config)\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\modules\\exllama_hf.py\", line 27, in __init__\n    self.ex_model = ExLlama(self.ex_config)\n  File \"F:\\ChatIAs\\oobabooga\\text-generation-webui\\repositories\\exllama\\model.py\", line 711, in __init__\n    tensor = tensor.to(device, non_blocking = True)\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 86.00 MiB. GPU 0 has a total capacty of 23.99 GiB of which 0 bytes is free. Of the allocated memory 22.92 GiB is allocated by PyTorch, and 39.80 MiB is reserved by PyT");
    assert!(f.case.has("text-generation-webui"), "{:?}", f.case);
    assert_eq!(f.case.workload.as_deref(), Some("serving"));
    assert!(fix_ids(&f).contains(&"textgen-webui-budgets"), "{:?}", fix_ids(&f));
    for training in ["smaller-batch", "activation-checkpointing"] {
        assert!(!fix_ids(&f).contains(&training), "{training}: {:?}", fix_ids(&f));
    }
}

/// https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/16114 — Stable Diffusion
/// web UI is no serving engine: no engine is read from its message and no engine budget offered.
#[test]
fn a_pytorch_oom_without_an_engine_gets_no_engine_budgets() {
    let f = first("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 14.00 MiB. GPU 0 has a total capacty of 12.00 GiB of which 4.65 GiB is free");
    assert!(!f.case.inference(), "{:?}", f.case);
    assert!(!fix_ids(&f).iter().any(|id| id.ends_with("-budgets")), "{:?}", fix_ids(&f));
}
