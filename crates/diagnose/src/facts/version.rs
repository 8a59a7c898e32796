//! What a log tells about a library's version: a printed version, or a range dated by
//! the wording of a message (PyTorch's allocator message changed form at known releases).
//!
//! Printed versions are read wherever a log prints them, which is seldom near the
//! failure: startup banners (vLLM, Ollama, llama.cpp), environment reports pasted into
//! issues (`collect_env`, `transformers-cli env`, `jax.print_environment_info()`),
//! `pip list` / `pip freeze` / `conda list` lines, `x.__version__` echoes, nvidia-smi and
//! nvcc headers, container image tags. [`printed_versions`] reads one text; the engine
//! runs it on each finding's block and once on the log's head.

pub use oomdoc_kb::version::{Requirement, Version};
use crate::grammar;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the log says about one library's version: exact (printed) or a range
/// (`at_least` inclusive, `below` exclusive) dated from a message's wording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionFact {
    /// The version as printed (`2.1.0+cu121`), when the log prints one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Lowest version consistent with the log (inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least: Option<String>,
    /// First version the log rules out (exclusive upper bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below: Option<String>,
    /// `printed` (a version line, pip/conda listing, banner) or `message format`
    /// (the wording of the failure message dates the release).
    pub source: String,
}

impl VersionFact {
    pub fn printed(v: &str) -> VersionFact {
        VersionFact { version: Some(v.to_string()), at_least: None, below: None, source: "printed".into() }
    }
    pub fn range(at_least: Option<&str>, below: Option<&str>, source: &str) -> VersionFact {
        VersionFact { version: None, at_least: at_least.map(str::to_string), below: below.map(str::to_string), source: source.into() }
    }

    /// The lowest and the excluded upper version this fact allows.
    fn bounds(&self) -> (Option<Version>, Option<Version>) {
        if let Some(v) = self.version.as_deref().and_then(Version::parse) {
            // `2.1.0` allows 2.1.0 only; `2.1` allows any 2.1.x.
            let mut next = v.clone();
            if let Some(last) = next.0.last_mut() {
                *last += 1;
            }
            return (Some(v), Some(next));
        }
        (self.at_least.as_deref().and_then(Version::parse), self.below.as_deref().and_then(Version::parse))
    }

    /// True when some version this fact allows lies in `[lo, hi)` (either bound open).
    pub fn overlaps(&self, lo: Option<&Version>, hi: Option<&Version>) -> bool {
        let (a, b) = self.bounds();
        let above_lo = match (lo, &b) {
            (Some(lo), Some(b)) => b > lo,
            _ => true,
        };
        let below_hi = match (hi, &a) {
            (Some(hi), Some(a)) => a < hi,
            _ => true,
        };
        above_lo && below_hi
    }

    /// Exact version inside `[lo, hi)`: a regression range matched only on a printed version.
    pub fn printed_within(&self, lo: Option<&Version>, hi: Option<&Version>) -> bool {
        let Some(v) = self.version.as_deref().and_then(Version::parse) else { return false };
        lo.is_none_or(|lo| v >= *lo) && hi.is_none_or(|hi| v < *hi)
    }
}

// Packages whose versions matter to advice, as listings and banners name them. A name may
// be quoted in backticks (`transformers-cli env`) or carry extras (`jax[cuda12]`), and
// `version` a parenthesised note (`PyTorch version (GPU?): 2.1.0`).
const PACKAGES: &str = r"torch|pytorch|jaxlib|jax|tensorflow(?:-gpu|-macos|-directml|-cpu)?|tf-nightly|vllm|sglang|transformers|triton|diffusers|accelerate|deepspeed|xformers|bitsandbytes|onnxruntime(?:-gpu|-training|-directml)?|tensorrt(?:[_-]llm)?|libtpu(?:-nightly)?|torch[_-]xla|keras|peft|trl|unsloth|flash[_-]attn|llama[_-]cpp[_-]python|paddlepaddle(?:-gpu)?|mxnet|cupy(?:-cuda\w+)?|numba|mlx|ollama|python|text-generation-inference|text-generation-launcher|torch[_-]directml|torch[_-]npu|intel[_-]extension[_-]for[_-]pytorch|lmdeploy|llamafactory|comfyui|pytorch[_-]lightning|lightning|exllamav2|auto[_-]gptq|optimum";

grammar!(
    printed_version,
    &format!(
        r"(?i)(?:^|[^\w.-])`?({PACKAGES})`?(?:\[[\w,.-]+\])?(?:\s*==\s*|\s*=\s*|\s+version(?:\s+is)?(?:\s*\([^)\n]{{0,16}}\))?\s*[:=]?\s*|\s*:\s*|\s+v|\s+)['\x22]?v?(\d+\.\d+(?:\.\d+)*(?:[a-z]+\d*|\+[a-z0-9.]+)?)"
    )
);
// `torch.__version__` echoed by a REPL or a print, on its line or the next one.
grammar!(
    dunder_version,
    r"(?i)\b(torch|jax|jaxlib|tf|tensorflow|transformers|vllm|triton|bitsandbytes|keras|diffusers|accelerate|deepspeed|xformers|peft|cupy|onnxruntime)\.__version__['\x22)\]]*\s*(?:[:=,]\s*|\r?\n\s*(?:Out\[\d+\]:\s*|>>>\s*)?)['\x22]?v?(\d+\.\d+(?:\.\d+)*(?:[a-z]+\d*|\+[a-z0-9.]+)?)"
);
// Engines' own banners: vLLM's API server and engine start lines, Ollama's
// `Listening on … (version X)` (server/routes.go), llama.cpp's `build: N (hash)` and
// older `main: build = N (hash)`, and the engines' container image tags.
grammar!(vllm_banner, r"(?i)vLLM(?: API server)? version:? v?(\d+\.\d+(?:\.\d+)*)|LLM engine \(v(\d+\.\d+(?:\.\d+)*)");
grammar!(ollama_banner, r"Listening on \S+ \(version v?(\d+\.\d+(?:\.\d+)*)");
grammar!(llama_cpp_build, r"\bbuild(?::| =) (\d{3,6}) \([0-9a-f]{6,}\)");
grammar!(
    image_tag,
    r"\b(vllm/vllm-openai|rocm/vllm|text-generation-inference|ollama/ollama|lmsysorg/sglang):v?(\d+\.\d+(?:\.\d+)*)"
);
// CUDA, ROCm and the NVIDIA driver: nvidia-smi's header, `collect_env`, nvcc.
grammar!(
    cuda_version,
    r"(?i)CUDA Version:?\s+(\d+\.\d+)|CUDA runtime version:\s*(\d+\.\d+)|Cuda compilation tools, release (\d+\.\d+)|CUDA used to build PyTorch:\s*(\d+\.\d+)"
);
grammar!(driver_version, r"(?i)\bDriver Version:?\s+(\d{3}\.\d+(?:\.\d+)*)");
grammar!(rocm_version, r"(?i)\bROCm(?: version)?:?\s+v?(\d+\.\d+(?:\.\d+)?)|HIP runtime version:\s*(\d+\.\d+)|ROCM used to build PyTorch:\s*(\d+\.\d+)");

/// One name per package, whatever the listing calls it (`pytorch` → `torch`).
pub fn canonical_package(name: &str) -> String {
    let n = name.to_ascii_lowercase().replace('-', "_");
    match n.as_str() {
        "pytorch" => "torch".into(),
        "tf" | "tensorflow_gpu" | "tensorflow_macos" | "tensorflow_cpu" | "tf_nightly" => "tensorflow".into(),
        "tensorflow_directml" => "tensorflow_directml".into(),
        "onnxruntime_gpu" => "onnxruntime".into(),
        "libtpu_nightly" => "libtpu".into(),
        "paddlepaddle" | "paddlepaddle_gpu" => "paddle".into(),
        "text_generation_inference" | "text_generation_launcher" => "tgi".into(),
        "intel_extension_for_pytorch" => "ipex".into(),
        "pytorch_lightning" => "lightning".into(),
        "tensorrt_llm" => "tensorrt_llm".into(),
        "llama_cpp" => "llama.cpp".into(),
        n if n.starts_with("cupy_cuda") => "cupy".into(),
        _ => n,
    }
}

/// Every version `text` prints, by package (the first one printed wins). A printed
/// torch build (`2.1.0+cu121`, `2.1.0+rocm5.6`) also tells the CUDA or ROCm it was built
/// for, when nothing else states it.
pub fn printed_versions(text: &str) -> BTreeMap<String, VersionFact> {
    let mut out: BTreeMap<String, VersionFact> = BTreeMap::new();
    fn put(out: &mut BTreeMap<String, VersionFact>, name: &str, v: &str) {
        // `python 3` alone or a year-like number is no release.
        if Version::parse(v).is_none() || (name == "python" && !v.starts_with('3') && !v.starts_with('2')) {
            return;
        }
        out.entry(name.to_string()).or_insert_with(|| VersionFact::printed(v));
    }
    for c in vllm_banner().captures_iter(text) {
        if let Some(v) = c.get(1).or(c.get(2)) {
            put(&mut out, "vllm", v.as_str());
        }
    }
    for c in ollama_banner().captures_iter(text) {
        put(&mut out, "ollama", &c[1]);
    }
    for c in image_tag().captures_iter(text) {
        let name = match &c[1] {
            "text-generation-inference" => "tgi",
            "ollama/ollama" => "ollama",
            "lmsysorg/sglang" => "sglang",
            _ => "vllm",
        };
        put(&mut out, name, &c[2]);
    }
    for c in llama_cpp_build().captures_iter(text) {
        put(&mut out, "llama.cpp", &format!("b{}", &c[1]));
    }
    for c in dunder_version().captures_iter(text) {
        put(&mut out, &canonical_package(&c[1]), &c[2]);
    }
    for c in printed_version().captures_iter(text) {
        put(&mut out, &canonical_package(&c[1]), &c[2]);
    }
    for c in cuda_version().captures_iter(text) {
        if let Some(v) = (1..=4).find_map(|i| c.get(i)) {
            put(&mut out, "cuda", v.as_str());
        }
    }
    for c in driver_version().captures_iter(text) {
        put(&mut out, "nvidia_driver", &c[1]);
    }
    for c in rocm_version().captures_iter(text) {
        if let Some(v) = (1..=3).find_map(|i| c.get(i)) {
            put(&mut out, "rocm", v.as_str());
        }
    }
    if let Some(local) = out.get("torch").and_then(|t| t.version.as_deref()).and_then(|v| v.split_once('+')).map(|(_, l)| l.to_string()) {
        if let Some(cu) = local.strip_prefix("cu").filter(|d| d.len() >= 3 && d.chars().all(|c| c.is_ascii_digit())) {
            // `cu121` → 12.1, `cu118` → 11.8: the last digit is the minor release.
            put(&mut out, "cuda", &format!("{}.{}", &cu[..cu.len() - 1], &cu[cu.len() - 1..]));
        } else if let Some(r) = local.strip_prefix("rocm") {
            put(&mut out, "rocm", r);
        }
    }
    out
}

/// True when the fact rules the requirement out (the case's version certainly lies outside it).
pub fn rules_out(fact: &VersionFact, req: &Requirement) -> bool {
    !fact.overlaps(req.at_least.as_ref(), req.below.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(text: &str) -> BTreeMap<String, String> {
        printed_versions(text).into_iter().map(|(k, v)| (k, v.version.unwrap_or_default())).collect()
    }

    #[test]
    fn reads_environment_reports_and_listings() {
        // torch.utils.collect_env, as pasted in PyTorch and vLLM issues.
        let v = printed(
            "PyTorch version: 2.1.2+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\nROCM used to build PyTorch: N/A\n\
             Python version: 3.10.12 (main, Nov 20 2023, 15:14:05) [GCC 11.4.0] (64-bit runtime)\nCUDA runtime version: 12.1.105\n\
             Nvidia driver version: 535.104.05\n[pip3] numpy==1.26.3\n[pip3] torch==2.1.2\n[pip3] transformers==4.36.2\n[conda] vllm 0.2.7 pypi_0 pypi",
        );
        assert_eq!(v["torch"], "2.1.2+cu121");
        assert_eq!(v["python"], "3.10.12");
        assert_eq!(v["cuda"], "12.1");
        assert_eq!(v["nvidia_driver"], "535.104.05");
        assert_eq!(v["transformers"], "4.36.2");
        assert_eq!(v["vllm"], "0.2.7");
        // transformers-cli env / llamafactory-cli env.
        let v = printed("- `transformers` version: 4.41.2\n- Platform: Linux-5.15.0-x86_64-with-glibc2.35\n- PyTorch version (GPU?): 2.3.0+cu121 (True)\n- `llamafactory` version: 0.8.1");
        assert_eq!((v["transformers"].as_str(), v["torch"].as_str(), v["llamafactory"].as_str()), ("4.41.2", "2.3.0+cu121", "0.8.1"));
        assert_eq!(v["cuda"], "12.1", "from the torch build tag");
        // jax.print_environment_info(), pip list, conda list, a REPL echo.
        let v = printed("jax:    0.4.23\njaxlib: 0.4.23\nnumpy:  1.26.2\npython: 3.11.7 | packaged by conda-forge |");
        assert_eq!((v["jax"].as_str(), v["jaxlib"].as_str(), v["python"].as_str()), ("0.4.23", "0.4.23", "3.11.7"));
        let v = printed("Package            Version\n------------------ ----------\nbitsandbytes       0.41.1\ntorchvision        0.16.0\npytorch-lightning  2.1.0\npytorch                   2.0.1           py3.10_cuda11.8_cudnn8.7.0_0    pytorch");
        assert_eq!((v["bitsandbytes"].as_str(), v["lightning"].as_str(), v["torch"].as_str()), ("0.41.1", "2.1.0", "2.0.1"));
        assert!(!v.contains_key("torchvision"));
        let v = printed(">>> import torch\n>>> torch.__version__\n'2.0.0+rocm5.4.2'\n>>> tf.__version__\n'2.15.0'");
        assert_eq!((v["torch"].as_str(), v["rocm"].as_str(), v["tensorflow"].as_str()), ("2.0.0+rocm5.4.2", "5.4.2", "2.15.0"));
        // nvidia-smi's header and nvcc.
        let v = printed("| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |");
        assert_eq!((v["nvidia_driver"].as_str(), v["cuda"].as_str()), ("535.104.05", "12.2"));
        let v = printed("Cuda compilation tools, release 11.8, V11.8.89");
        assert_eq!(v["cuda"], "11.8");
    }

    #[test]
    fn reads_engine_banners_and_image_tags() {
        let v = printed("INFO 06-12 10:01:02 api_server.py:177] vLLM API server version 0.4.3");
        assert_eq!(v["vllm"], "0.4.3");
        let v = printed("INFO 01-02 03:04:05 llm_engine.py:73] Initializing an LLM engine (v0.6.3.post1) with config: model='m'");
        assert_eq!(v["vllm"], "0.6.3");
        // Ollama's server start line (server/routes.go) and `ollama -v`.
        let v = printed("time=2024-04-02T10:00:00.000Z level=INFO source=routes.go:1118 msg=\"Listening on 127.0.0.1:11434 (version 0.1.30)\"");
        assert_eq!(v["ollama"], "0.1.30");
        assert_eq!(printed("ollama version is 0.1.32")["ollama"], "0.1.32");
        // llama.cpp's build banner, new and old form.
        assert_eq!(printed("build: 3265 (72272b83) with cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu")["llama.cpp"], "b3265");
        assert_eq!(printed("main: build = 1450 (d6e2b6b)")["llama.cpp"], "b1450");
        let v = printed("docker run --gpus all ghcr.io/huggingface/text-generation-inference:1.0.3 --model-id m");
        assert_eq!(v["tgi"], "1.0.3");
        assert_eq!(printed("image: vllm/vllm-openai:v0.5.0")["vllm"], "0.5.0");
    }

    #[test]
    fn ignores_what_is_no_release() {
        let v = printed("File \"/usr/lib/python3.10/site-packages/torch/nn/modules/module.py\", line 1501\nCUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity)\ntorchvision==0.16.0");
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn ranges_rule_out_requirements() {
        let torch_2_1 = Requirement::parse("torch>=2.1").unwrap();
        assert!(rules_out(&VersionFact::range(Some("1.4"), Some("2.1"), "message format"), &torch_2_1));
        assert!(!rules_out(&VersionFact::range(Some("2.1"), None, "message format"), &torch_2_1));
        assert!(rules_out(&VersionFact::printed("2.0.1+cu118"), &torch_2_1));
        assert!(!rules_out(&VersionFact::printed("2.1.0"), &torch_2_1));
        assert!(!rules_out(&VersionFact::printed("2.1"), &torch_2_1));
        let window = Requirement::parse("vllm>=0.6,<0.6.4").unwrap();
        assert!(VersionFact::printed("0.6.3").printed_within(window.at_least.as_ref(), window.below.as_ref()));
        assert!(!VersionFact::printed("0.6.4").printed_within(window.at_least.as_ref(), window.below.as_ref()));
    }
}
