//! The runtimes' own vocabulary: the out-of-memory members of each runtime's status
//! enum, with the numeric value a log prints for them, read from the header or the
//! documentation that defines them (`source`; `checked` says whether the name and value
//! were read there, or are stated from the runtime's other documentation and not
//! re-read). The generic layer recognizes a failure when such a member occurs in an
//! error context, by name (`CUBLAS_STATUS_ALLOC_FAILED`) or, beside one of the
//! runtime's own API calls, by value (`vkAllocateMemory failed -2`,
//! `cudaMalloc returned error 2`, `(2 vs. 0)`, `res=2`, `status=4`).
//!
//! Members that are memory failures only in some contexts (`CUDNN_STATUS_NOT_INITIALIZED`,
//! `CL_OUT_OF_RESOURCES`, `NRT_RESOURCE`) are [`Meaning::Likely`] with the reason the
//! finding reports; members listed as [`Meaning::NotMemory`] (`DXGI_ERROR_DEVICE_REMOVED`,
//! `VK_ERROR_DEVICE_LOST`) keep a numeric reading from ever being taken for one.

use oomdoc_kb::Platform;

/// Where the failed allocation lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    Device,
    Host,
    /// The member does not say (Windows `E_OUTOFMEMORY`): the words around it decide.
    Either,
}

/// What a member means when it occurs in an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meaning {
    /// An allocation failed for lack of memory.
    Oom,
    /// Often a memory failure in disguise: reported with `confidence: likely` and this reason,
    /// and only where `needs_memory_context` is false or a memory line is near.
    Likely { reason: &'static str, needs_memory_context: bool },
    /// Not a memory failure (device lost, hung, removed): never read as one.
    NotMemory,
}

/// A runtime whose status enum has members below.
#[derive(Debug)]
pub struct Runtime {
    /// Stable id, reported in `details.runtime`.
    pub id: &'static str,
    pub platform: Platform,
    /// Regex (no groups) for the runtime's API calls and names on a line; a numeric value
    /// is read only beside one of them.
    pub calls: &'static str,
}

/// One member of a runtime's status enum.
#[derive(Debug)]
pub struct Member {
    pub runtime: &'static str,
    pub name: &'static str,
    /// The value as logs print it (decimal, negative, or hex); `None` where it is printed
    /// by name only or the value was not verified.
    pub value: Option<i64>,
    pub space: Space,
    pub meaning: Meaning,
    /// The header or documentation page that defines it.
    pub source: &'static str,
    /// True when name and value were read at `source`.
    pub checked: bool,
}

pub const RUNTIMES: &[Runtime] = &[
    Runtime { id: "cuda-runtime", platform: Platform::Cuda, calls: r"\bcuda[A-Z]\w*|\bCUDA (?:runtime )?(?:error|Error|ERROR)\b|\bcudaError\w*" },
    Runtime { id: "cuda-driver", platform: Platform::Cuda, calls: r"\bcu(?:Mem|Ctx|Module|Launch|Init|Array|Tex|Graph|Stream)\w*|\bCUresult\b|\bCUDA_ERROR_\w+" },
    Runtime { id: "cudnn", platform: Platform::Cuda, calls: r"(?i:\bcudnn)\w*" },
    Runtime { id: "cublas", platform: Platform::Cuda, calls: r"(?i:\bcublas)\w*" },
    Runtime { id: "cufft", platform: Platform::Cuda, calls: r"(?i:\bcufft)\w*" },
    Runtime { id: "npp", platform: Platform::Cuda, calls: r"\bnppi?[A-Z]\w*|\bNPP\w*|\bnpp[is]_\w+" },
    Runtime { id: "curand", platform: Platform::Cuda, calls: r"(?i:\bcurand)\w*" },
    Runtime { id: "cusolver", platform: Platform::Cuda, calls: r"(?i:\bcusolver)\w*" },
    Runtime { id: "cusparse", platform: Platform::Cuda, calls: r"(?i:\bcusparse)\w*" },
    Runtime { id: "hip", platform: Platform::Rocm, calls: r"\bhip[A-Z]\w*|\bHIP (?:error|Error|ERROR)\b" },
    Runtime { id: "hsa", platform: Platform::Rocm, calls: r"\bhsa_\w+|\bHSA_STATUS_\w+" },
    Runtime { id: "rocblas", platform: Platform::Rocm, calls: r"\brocblas_\w*" },
    Runtime { id: "miopen", platform: Platform::Rocm, calls: r"(?i:\bmiopen)\w*" },
    Runtime { id: "level-zero", platform: Platform::Xpu, calls: r"\bze[A-Z]\w*|\bZE_RESULT_\w+|\bLevel[ _]Zero\b" },
    Runtime { id: "unified-runtime", platform: Platform::Xpu, calls: r"\bur[A-Z]\w*|\bUR_RESULT_\w+|\blevel_zero backend\b|\bNative API\b" },
    Runtime { id: "vulkan", platform: Platform::Other, calls: r"\bvk[A-Z]\w*|\bVK_\w+|\bVulkan\b|\bvulkan\b" },
    Runtime { id: "opencl", platform: Platform::Other, calls: r"\bcl[A-Z][a-z]\w*|\bCL_\w+|\bOpenCL\b" },
    Runtime { id: "windows", platform: Platform::Other, calls: r"\bHRESULT\b|\bhr\b|\bWinError\b|\bos error\b|\bD3D12\w*|\bDXGI\w*|\bDirectML\b|\bDML\w*" },
    Runtime { id: "aws-neuron", platform: Platform::Other, calls: r"\bnrt_\w+|\bNRT\b|\bNRT_\w+|\bneuron\w*|\bNeuron\w*" },
    Runtime { id: "ascend-acl", platform: Platform::Npu, calls: r"\bacl[a-z]*[A-Z]\w*|\bACL_\w+|\bAscend\b|\bnpu\w*" },
    Runtime { id: "rknn", platform: Platform::Npu, calls: r"\brknn_\w+|\bRKNN\w*|\brknpu\w*|\brockchip\w*|\bRockchip\b|\bmpp\b" },
    Runtime { id: "metal", platform: Platform::Metal, calls: r"\bMTL\w+|\bMetal\b|\bkIOGPU\w+" },
    Runtime { id: "onednn", platform: Platform::Cpu, calls: r"\bdnnl_\w+|\boneDNN\b" },
    Runtime { id: "posix", platform: Platform::Cpu, calls: r"\berrno\b|\bmmap\b|\bmalloc\b|\bposix_memalign\b" },
    Runtime { id: "java", platform: Platform::Cpu, calls: r"\bjava\.lang\.\w+" },
    Runtime { id: "dotnet", platform: Platform::Cpu, calls: r"\bSystem\.\w+|\.NET\b" },
    Runtime { id: "duckdb", platform: Platform::Cpu, calls: r"\bduckdb\w*" },
    Runtime { id: "arrow", platform: Platform::Cpu, calls: r"\bpyarrow\w*|\barrow\b" },
];

// Sources, one per header or page, read with the project's search tool.
const CUDART: &str = "https://docs.rs/rcudnn-sys/latest/rcudnn_sys/enum.cudaError_t.html (bindgen of cuda_runtime_api.h); https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html";
const CUDA_DRIVER: &str = "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html (CUresult)";
const CUDNN: &str = "https://docs.rs/cudnn-sys/latest/cudnn_sys/enum.cudnnStatus_t.html (cudnn.h, cuDNN <= 8 numbering)";
const CUBLAS: &str = "https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.cublas.Status.html (cublasStatus_t)";
const CUFFT: &str = "https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.cufft.Result.html (cufftResult)";
const CURAND: &str = "https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.curand.Status.html (curandStatus)";
const CUSOLVER: &str = "https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.cusolver.Status.html (cusolverStatus_t)";
const CUSPARSE: &str = "https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.cusparse.Status.html (cusparseStatus_t)";
const HIP: &str = "https://rocm.docs.amd.com/projects/hipfort/en/latest/doxygen/html/namespacehipfort__enums.html (hipError_t: hipErrorOutOfMemory = 2, hipErrorMemoryAllocation = 2)";
const ROCBLAS: &str = "https://docs.rs/simt_rocblas_sys/0.2.0/simt_rocblas_sys/enum.rocblas_status_.html (rocblas_status, 6th member)";
const MIOPEN: &str = "https://rocm.docs.amd.com/projects/MIOpen/en/latest/reference/ (miopenStatus_t)";
const LEVEL_ZERO: &str = "https://oneapi-src.github.io/level-zero-spec/level-zero/1.2.43/core/api.html#ze-result-t";
const VULKAN: &str = "https://registry.khronos.org/VulkanSC/specs/1.0-extensions/man/html/VkResult.html";
const OPENCL: &str = "https://docs.rs/cl3/0.6.4/cl3/error_codes/constant.CL_MEM_OBJECT_ALLOCATION_FAILURE.html (cl.h error codes)";
const WINERROR: &str = "https://learn.microsoft.com/en-us/windows/win32/debug/system-error-codes--0-499- and --1300-1699- (winerror.h)";
const DXGI: &str = "https://learn.microsoft.com/en-us/windows/desktop/direct3ddxgi/dxgi-error";
const NTSTATUS: &str = "https://learn.microsoft.com/en-us/openspecs/windows_protocols/ms-erref/596a1078-e883-4972-9bbc-49e60bebca55 (NTSTATUS values)";
const UNIFIED_RUNTIME: &str = "oneapi-src/unified-runtime:include/unified-runtime/ur_api.h@578c2a84af3c5a666afb5a0a0657d11f998e914b (ur_result_t)";
const RKNN: &str = "airockchip/rknn-toolkit2:rknpu2/runtime/Linux/librknn_api/include/rknn_api.h@59a913d172e7f5ff03c9076e2ec7b1b1288ffd08 (v2.3.2, RKNN_ERR_*)";
const NEURON: &str = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/api/nrt_status.html (nrt_status.h)";
const ACL: &str = "https://www.hiascend.com/document/detail/en/canncommercial/800/apiref/appdevgapi/aclcppdevg_03_1345.html (aclError; rt_error_codes.h 207xxx resource class)";
const METAL: &str = "https://learn.microsoft.com/en-us/dotnet/api/metal.mtlcommandbuffererror (MTLCommandBufferError: OutOfMemory = 8); https://developer.apple.com/documentation/metal/mtlcommandbuffererror-swift.struct/outofmemory";
const ONEDNN: &str = "https://intel.com/content/www/us/en/docs/onednn/developer-guide-reference/2025-1/enum-dnnl-status-t.html (dnnl_status_t)";
const ERRNO: &str = "https://man7.org/linux/man-pages/man3/errno.3.html (ENOMEM, 12 on Linux: asm-generic/errno-base.h)";
const DUCKDB: &str = "duckdb/duckdb:src/common/exception.cpp (ExceptionType::OUT_OF_MEMORY printed as \"Out of Memory Error\"; Python class OutOfMemoryException)";
const ARROW: &str = "apache/arrow:cpp/src/arrow/status.h (StatusCode::OutOfMemory; Python pyarrow.lib.ArrowMemoryError)";
const VULKAN_HEADER: &str = "KhronosGroup/Vulkan-Headers:include/vulkan/vulkan_core.h@v1.4.359 (VkResult)";
const CUSOLVER_PXD: &str = "NVIDIA/nvmath-python:nvmath/bindings/cycusolver.pxd@v0.9.0 (cusolverStatus_t, as cusolver_common.h)";
const CUFFT_PXD: &str = "NVIDIA/nvmath-python:nvmath/bindings/cycufft.pxd@v0.9.0 (cufftResult, as cufft.h)";
const NPP: &str = "kunzmi/managedCuda:NPP/NPPTypes.cs@1886172aad60647c56614fe5971fbb420e7c8415 (NppStatus, as nppdefs.h: NPP_MEMORY_ALLOCATION_ERR = -9)";
const MANAGEDCUDA: &str = "kunzmi/managedCuda:ManagedCUDA/BasicTypesEnum.cs@1886172aad60647c56614fe5971fbb420e7c8415 (CUResult, .NET names of CUresult: ErrorOutOfMemory = 2)";
/// .NET's exception of the same name as DuckDB's Python class.
pub const DOTNET_OOM: &str = "https://learn.microsoft.com/en-us/dotnet/api/system.outofmemoryexception (System.OutOfMemoryException: not enough memory to continue the execution of a program)";
const JAVA: &str = "https://docs.oracle.com/en/java/javase/17/troubleshoot/troubleshooting-memory-leaks.html (java.lang.OutOfMemoryError details)";

const NOT_INIT: &str = "the library could not create its handle; with no other error, that is the GPU out of memory when the library initialises";
const CUDNN_CTX: &str = "cuDNN reports an allocation it could not make inside a kernel call this way; a memory line near it says it was memory";
const CUDNN_CTX_FFT: &str = "cuFFT reports a work area it could not allocate during planning this way; a memory line near it says it was memory (on its own it is also a CUDA/cuFFT version mismatch)";
const CL_RES: &str = "CL_OUT_OF_RESOURCES is any device resource the OpenCL implementation could not allocate; device memory is the usual one";
const UR_RES: &str = "UR_RESULT_ERROR_OUT_OF_RESOURCES is any resource the SYCL/Unified Runtime adapter could not allocate; device memory is the usual one";
const HSA: &str = "ROCm/ROCR-Runtime:src/inc/hsa.h (hsa_status_t: HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008, 'The HSA runtime failed to allocate the necessary resources'), read in the code index's copies, not at a tag";
const HSA_RES: &str = "HSA_STATUS_ERROR_OUT_OF_RESOURCES: the ROCm (HSA) runtime could not allocate a resource (device or host memory, or the threads and OS events it creates); memory is the usual one";
const VK_OBJECTS: &str = "VK_ERROR_TOO_MANY_OBJECTS from vkAllocateMemory: the driver's count of memory allocations (maxMemoryAllocationCount) is used up; many small allocations, or memory not freed, reach it before the bytes run out";
const HANDLE_INTERNAL: &str = "the library's status is an internal error; where it fails creating its handle, which allocates device memory, with no other error that is the GPU out of memory (a driver or library mismatch reads the same)";
const NRT_RES: &str = "NRT_RESOURCE: the Neuron runtime could not allocate a resource for the operation; device memory is the usual one";

use Meaning::{Likely, NotMemory, Oom};
use Space::{Device, Either, Host};

/// Every member, by runtime. Names are matched as whole words.
pub const MEMBERS: &[Member] = &[
    Member { runtime: "cuda-runtime", name: "cudaErrorMemoryAllocation", value: Some(2), space: Device, meaning: Oom, source: CUDART, checked: true },
    Member { runtime: "cuda-driver", name: "CUDA_ERROR_OUT_OF_MEMORY", value: Some(2), space: Device, meaning: Oom, source: CUDA_DRIVER, checked: false },
    Member { runtime: "cudnn", name: "CUDNN_STATUS_ALLOC_FAILED", value: Some(2), space: Device, meaning: Oom, source: CUDNN, checked: true },
    Member { runtime: "cudnn", name: "CUDNN_STATUS_NOT_INITIALIZED", value: Some(1), space: Device, meaning: Likely { reason: NOT_INIT, needs_memory_context: false }, source: CUDNN, checked: true },
    Member { runtime: "cudnn", name: "CUDNN_STATUS_INTERNAL_ERROR", value: Some(4), space: Device, meaning: Likely { reason: CUDNN_CTX, needs_memory_context: true }, source: CUDNN, checked: true },
    Member { runtime: "cudnn", name: "CUDNN_STATUS_EXECUTION_FAILED", value: Some(8), space: Device, meaning: Likely { reason: CUDNN_CTX, needs_memory_context: true }, source: CUDNN, checked: true },
    Member { runtime: "cublas", name: "CUBLAS_STATUS_ALLOC_FAILED", value: Some(3), space: Device, meaning: Oom, source: CUBLAS, checked: true },
    Member { runtime: "cublas", name: "CUBLAS_STATUS_NOT_INITIALIZED", value: Some(1), space: Device, meaning: Likely { reason: NOT_INIT, needs_memory_context: false }, source: CUBLAS, checked: true },
    Member { runtime: "cufft", name: "CUFFT_ALLOC_FAILED", value: Some(2), space: Device, meaning: Oom, source: CUFFT, checked: true },
    Member { runtime: "curand", name: "CURAND_STATUS_ALLOCATION_FAILED", value: Some(102), space: Device, meaning: Oom, source: CURAND, checked: true },
    Member { runtime: "cusolver", name: "CUSOLVER_STATUS_ALLOC_FAILED", value: Some(2), space: Device, meaning: Oom, source: CUSOLVER, checked: true },
    Member { runtime: "cusolver", name: "CUSOLVER_STATUS_NOT_INITIALIZED", value: Some(1), space: Device, meaning: Likely { reason: NOT_INIT, needs_memory_context: false }, source: CUSOLVER_PXD, checked: true },
    Member { runtime: "cusolver", name: "CUSOLVER_STATUS_INTERNAL_ERROR", value: Some(7), space: Device, meaning: Likely { reason: HANDLE_INTERNAL, needs_memory_context: true }, source: CUSOLVER_PXD, checked: true },
    Member { runtime: "cufft", name: "CUFFT_INTERNAL_ERROR", value: Some(5), space: Device, meaning: Likely { reason: CUDNN_CTX_FFT, needs_memory_context: true }, source: CUFFT_PXD, checked: true },
    Member { runtime: "npp", name: "NPP_MEMORY_ALLOCATION_ERR", value: Some(-9), space: Device, meaning: Oom, source: NPP, checked: true },
    Member { runtime: "cuda-driver", name: "ErrorOutOfMemory", value: None, space: Device, meaning: Oom, source: MANAGEDCUDA, checked: true },
    Member { runtime: "cusparse", name: "CUSPARSE_STATUS_ALLOC_FAILED", value: Some(2), space: Device, meaning: Oom, source: CUSPARSE, checked: true },
    Member { runtime: "hip", name: "hipErrorOutOfMemory", value: Some(2), space: Device, meaning: Oom, source: HIP, checked: true },
    Member { runtime: "hip", name: "hipErrorMemoryAllocation", value: Some(2), space: Device, meaning: Oom, source: HIP, checked: true },
    Member { runtime: "rocblas", name: "rocblas_status_memory_error", value: Some(5), space: Device, meaning: Oom, source: ROCBLAS, checked: true },
    Member { runtime: "miopen", name: "miopenStatusAllocFailed", value: None, space: Device, meaning: Oom, source: MIOPEN, checked: false },
    Member { runtime: "level-zero", name: "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY", value: Some(0x7000_0002), space: Host, meaning: Oom, source: LEVEL_ZERO, checked: true },
    Member { runtime: "level-zero", name: "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", value: Some(0x7000_0003), space: Device, meaning: Oom, source: LEVEL_ZERO, checked: true },
    Member { runtime: "level-zero", name: "ZE_RESULT_ERROR_DEVICE_LOST", value: Some(0x7000_0001), space: Device, meaning: NotMemory, source: LEVEL_ZERO, checked: true },
    // The Unified Runtime (SYCL's adapter layer over Level Zero, OpenCL, CUDA, HIP) has its own numbering.
    Member { runtime: "unified-runtime", name: "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", value: Some(39), space: Device, meaning: Oom, source: UNIFIED_RUNTIME, checked: true },
    Member { runtime: "unified-runtime", name: "UR_RESULT_ERROR_OUT_OF_HOST_MEMORY", value: Some(38), space: Host, meaning: Oom, source: UNIFIED_RUNTIME, checked: true },
    Member { runtime: "unified-runtime", name: "UR_RESULT_ERROR_OUT_OF_RESOURCES", value: Some(40), space: Device, meaning: Likely { reason: UR_RES, needs_memory_context: false }, source: UNIFIED_RUNTIME, checked: true },
    Member { runtime: "unified-runtime", name: "UR_RESULT_ERROR_DEVICE_LOST", value: Some(20), space: Device, meaning: NotMemory, source: UNIFIED_RUNTIME, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_OUT_OF_HOST_MEMORY", value: Some(-1), space: Host, meaning: Oom, source: VULKAN, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_OUT_OF_DEVICE_MEMORY", value: Some(-2), space: Device, meaning: Oom, source: VULKAN, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_TOO_MANY_OBJECTS", value: Some(-10), space: Device, meaning: Likely { reason: VK_OBJECTS, needs_memory_context: false }, source: VULKAN_HEADER, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_MEMORY_MAP_FAILED", value: Some(-5), space: Device, meaning: NotMemory, source: VULKAN_HEADER, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_DEVICE_LOST", value: Some(-4), space: Device, meaning: NotMemory, source: VULKAN, checked: true },
    Member { runtime: "vulkan", name: "VK_ERROR_INITIALIZATION_FAILED", value: Some(-3), space: Device, meaning: NotMemory, source: VULKAN, checked: true },
    Member { runtime: "opencl", name: "CL_MEM_OBJECT_ALLOCATION_FAILURE", value: Some(-4), space: Device, meaning: Oom, source: OPENCL, checked: true },
    Member { runtime: "opencl", name: "CL_OUT_OF_RESOURCES", value: Some(-5), space: Device, meaning: Likely { reason: CL_RES, needs_memory_context: false }, source: OPENCL, checked: true },
    Member { runtime: "opencl", name: "CL_OUT_OF_HOST_MEMORY", value: Some(-6), space: Host, meaning: Oom, source: OPENCL, checked: true },
    // HRESULT_FROM_WIN32(ERROR_OUTOFMEMORY = 14); D3D12 and DirectML return it for video memory too.
    Member { runtime: "windows", name: "E_OUTOFMEMORY", value: Some(0x8007_000E), space: Either, meaning: Oom, source: WINERROR, checked: false },
    Member { runtime: "windows", name: "ERROR_NOT_ENOUGH_MEMORY", value: Some(8), space: Host, meaning: Oom, source: WINERROR, checked: false },
    Member { runtime: "windows", name: "ERROR_COMMITMENT_LIMIT", value: Some(1455), space: Host, meaning: Oom, source: WINERROR, checked: false },
    Member { runtime: "windows", name: "STATUS_NO_MEMORY", value: Some(0xC000_0017), space: Host, meaning: Oom, source: NTSTATUS, checked: false },
    Member { runtime: "windows", name: "DXGI_ERROR_DEVICE_REMOVED", value: Some(0x887A_0005), space: Device, meaning: NotMemory, source: DXGI, checked: true },
    Member { runtime: "windows", name: "DXGI_ERROR_DEVICE_HUNG", value: Some(0x887A_0006), space: Device, meaning: NotMemory, source: DXGI, checked: true },
    Member { runtime: "windows", name: "DXGI_ERROR_DEVICE_RESET", value: Some(0x887A_0007), space: Device, meaning: NotMemory, source: DXGI, checked: true },
    Member { runtime: "hsa", name: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", value: Some(0x1008), space: Device, meaning: Likely { reason: HSA_RES, needs_memory_context: false }, source: HSA, checked: false },
    Member { runtime: "aws-neuron", name: "NRT_RESOURCE", value: Some(4), space: Device, meaning: Likely { reason: NRT_RES, needs_memory_context: false }, source: NEURON, checked: true },
    Member { runtime: "aws-neuron", name: "NRT_FAIL_HOST_MEM_ALLOC", value: Some(11), space: Host, meaning: Oom, source: NEURON, checked: true },
    Member { runtime: "aws-neuron", name: "NRT_LOAD_NOT_ENOUGH_NC", value: Some(9), space: Device, meaning: NotMemory, source: NEURON, checked: true },
    Member { runtime: "rknn", name: "RKNN_ERR_MALLOC_FAIL", value: Some(-4), space: Device, meaning: Oom, source: RKNN, checked: true },
    Member { runtime: "rknn", name: "RKNN_ERR_DEVICE_UNAVAILABLE", value: Some(-3), space: Device, meaning: NotMemory, source: RKNN, checked: true },
    Member { runtime: "ascend-acl", name: "ACL_ERROR_RT_MEMORY_ALLOCATION", value: Some(207_001), space: Device, meaning: Oom, source: ACL, checked: false },
    Member { runtime: "ascend-acl", name: "ACL_ERROR_BAD_ALLOC", value: Some(200_000), space: Either, meaning: Oom, source: ACL, checked: false },
    Member { runtime: "metal", name: "MTLCommandBufferErrorOutOfMemory", value: Some(8), space: Device, meaning: Oom, source: METAL, checked: true },
    // The IOGPU driver's name for the same command-buffer status, as macOS prints it in
    // `Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)`; its siblings
    // (`...ErrorTimeout`, `...ErrorImpactingInteractivity`, `...ErrorSubmissionsIgnored`) are not memory.
    Member { runtime: "metal", name: "kIOGPUCommandBufferCallbackErrorOutOfMemory", value: None, space: Device, meaning: Oom, source: METAL, checked: false },
    Member { runtime: "onednn", name: "dnnl_out_of_memory", value: Some(1), space: Host, meaning: Oom, source: ONEDNN, checked: true },
    Member { runtime: "posix", name: "ENOMEM", value: Some(12), space: Host, meaning: Oom, source: ERRNO, checked: false },
    Member { runtime: "java", name: "OutOfMemoryError", value: None, space: Host, meaning: Oom, source: JAVA, checked: false },
    Member { runtime: "duckdb", name: "OutOfMemoryException", value: None, space: Host, meaning: Oom, source: DUCKDB, checked: false },
    Member { runtime: "arrow", name: "ArrowMemoryError", value: None, space: Host, meaning: Oom, source: ARROW, checked: false },
];

/// The text a runtime or its wrapper prints for a member instead of its name (a string table
/// of the runtime's own, an exception message of a binding), with where that table is. The
/// generic layer reads it as the member: (member, printed text, source).
pub const DESCRIPTIONS: &[(&str, &str, &str)] = &[
    // Boost.Compute's `opencl_error::to_string` (and the Khronos C++ bindings' style) spell the status out.
    ("CL_MEM_OBJECT_ALLOCATION_FAILURE", "memory object allocation failure", "boostorg/compute:include/boost/compute/exception/opencl_error.hpp@boost-1.87.0 (case CL_MEM_OBJECT_ALLOCATION_FAILURE: return \"Memory Object Allocation Failure\")"),
    // FormatMessage's text for ERROR_OUTOFMEMORY (14), which `E_OUTOFMEMORY` (0x8007000E) wraps.
    ("E_OUTOFMEMORY", "not enough memory resources are available to complete this operation", "https://learn.microsoft.com/en-us/windows/win32/debug/system-error-codes--0-499- (ERROR_OUTOFMEMORY 14: \"Not enough memory resources are available to complete this operation.\")"),
    // ManagedCuda throws this NPPException when `nppiMalloc_*` returns no pointer (NPPImage_*.cs constructors).
    // The detail messages of the JVM's `java.lang.OutOfMemoryError` kinds (JVM_KINDS): Gradle and
    // Maven print them without the class ("> GC overhead limit exceeded").
    ("OutOfMemoryError", "gc overhead limit exceeded", JVM_KINDS),
    ("OutOfMemoryError", "java heap space", JVM_KINDS),
    ("OutOfMemoryError", "requested array size exceeds vm limit", JVM_KINDS),
    ("NPP_MEMORY_ALLOCATION_ERR", "device allocation error", "kunzmi/managedCuda:NPP/NPPImage_8uC1.cs@1886172aad60647c56614fe5971fbb420e7c8415 (throw new NPPException(\"Device allocation error\", null) after nppiMalloc)"),
];

/// What host runtimes call their own memory when it runs out: names that make an
/// out-of-memory message a host one where no device or host word stands beside it. Each is
/// defined by the runtime (`source`); none is a sentence seen in a log.
#[derive(Debug)]
pub struct HostName {
    pub runtime: &'static str,
    /// Regex (no groups).
    pub pattern: &'static str,
    pub source: &'static str,
}

const V8: &str = "v8/v8:src/api/api.cc (V8::FatalProcessOutOfMemory: a heap OOM is reported as 'JavaScript heap out of memory', otherwise 'process out of memory'; Node's OOMErrorHandler prints 'FATAL ERROR: <location> Allocation failed - <detail>'; the heap's limits 'Reached heap limit', 'CALL_AND_RETRY_LAST', 'Ineffective mark-compacts near heap limit'), as printed in Node's fatal-error reports, not re-read at a tag";
const JVM_KINDS: &str = "https://docs.oracle.com/en/java/javase/17/troubleshoot/troubleshooting-memory-leaks.html (the detail messages of java.lang.OutOfMemoryError: Java heap space, GC Overhead limit exceeded, Requested array size exceeds VM limit, Metaspace, Compressed class space, unable to create new native thread; Direct buffer memory from java.nio.Bits)";
const RUST_ALLOC: &str = "rust-lang/rust:src/liballoc/allocator.rs (Rust 1.20-1.27: AllocErr::Exhausted's description 'allocator memory exhausted', printed by std's OOM abort as 'fatal runtime error: ...'; read in the code index's copy, not at a tag; since 1.28 std::alloc::handle_alloc_error prints 'memory allocation of N bytes failed')";
const PY_HOST_LIBS: &str = "the packages' own module paths (numpy, pandas, scipy, sklearn, statsmodels, polars, pyarrow, duckdb, z3, networkx, h5py, PIL): libraries that allocate only host memory, so an exception class under them is a host allocation";

pub const HOST_NAMES: &[HostName] = &[
    HostName { runtime: "v8", pattern: r"(?i:JavaScript heap out of memory)|\bFatalProcessOutOfMemory\b|\bReached heap limit\b|\bCALL_AND_RETRY_LAST\b|\bIneffective mark-compacts near heap limit\b|\bprocess out of memory\b", source: V8 },
    HostName { runtime: "java", pattern: r"(?i:\bJava heap space\b)|\bGC overhead limit exceeded\b|\bRequested array size exceeds VM limit\b|\bOutOfMemoryError: Metaspace\b|\bCompressed class space\b|\bunable to create (?:new )?native thread\b|\bDirect buffer memory\b", source: JVM_KINDS },
    HostName { runtime: "rust-std", pattern: r"\ballocator memory exhausted\b", source: RUST_ALLOC },
    HostName { runtime: "python-host-library", pattern: r"\b(?:numpy|pandas|scipy|sklearn|statsmodels|polars|pyarrow|duckdb|z3|networkx|h5py|PIL)(?:\.\w+)*\.\w*(?:Error|Exception)\b", source: PY_HOST_LIBS },
];

/// One regex of every host name (no groups).
pub fn host_names_pattern() -> String {
    HOST_NAMES.iter().map(|h| format!("(?:{})", h.pattern)).collect::<Vec<_>>().join("|")
}

/// A framework's own out-of-memory exception class, as a traceback or a title names it
/// (`torch.OutOfMemoryError: ...`, `cupy.cuda.memory.OutOfMemoryError`): the class says the
/// framework's allocator failed even where its message is cut, so each is a fallback ranked after
/// the framework's message grammars. The framework's recognizer reads the rows of its own
/// `framework` (through [`oom_class_pattern`]); what it reports when only the class is there is
/// `entry` on `platform` in `space`, `likely`. A class that the framework also raises for what is
/// not memory (TensorFlow's `ResourceExhaustedError`: quotas, full disks) is [`Meaning::Likely`]
/// with `needs_memory_context`: a memory failure only where its own message says memory.
#[derive(Debug)]
pub struct OomClass {
    /// The recognizer that reads the row (`pytorch`, `cupy`, `tensorflow`).
    pub framework: &'static str,
    /// Regex (no groups) of the qualified name as printed; matched between ASCII word ends.
    pub class: &'static str,
    /// The knowledge-base entry for the class alone.
    pub entry: &'static str,
    pub platform: Platform,
    pub space: Space,
    pub meaning: Meaning,
    /// Where the class is defined, at a tag.
    pub source: &'static str,
}

const TF_RESOURCE: &str = "TensorFlow raises ResourceExhaustedError for any exhausted resource (a per-user quota, a full file system), an allocation among them: a memory failure where its message says memory";

/// Every framework's own out-of-memory class (other host runtimes' names, the JVM's
/// `java.lang.OutOfMemoryError` kinds, .NET's `System.OutOfMemoryException`, DuckDB's and
/// Arrow's classes, NumPy's `_ArrayMemoryError` under the `numpy` module, are in [`MEMBERS`] and
/// [`HOST_NAMES`]; Ray's memory-monitor classes in `cluster.rs`).
pub const OOM_CLASSES: &[OomClass] = &[
    // From 1.13; raised by the CUDA caching allocator (and by ROCm builds' HIP allocator under the same name).
    OomClass { framework: "pytorch", class: r"torch\.cuda\.OutOfMemoryError", entry: "generic.device-oom", platform: Platform::Cuda, space: Device, meaning: Oom, source: "https://pytorch.org/docs/stable/generated/torch.cuda.OutOfMemoryError.html (exception torch.cuda.OutOfMemoryError: 'Exception raised when device is out of memory')" },
    // From 2.5 the same class under `torch.`, raised by the CUDA/HIP, XPU and MPS allocators.
    OomClass { framework: "pytorch", class: r"torch\.OutOfMemoryError", entry: "generic.device-oom", platform: Platform::Cuda, space: Device, meaning: Oom, source: "https://docs.pytorch.org/cppdocs/_sources/api/classc10_1_1_out_of_memory_error.rst.txt (c10::OutOfMemoryError in c10/util/Exception.h, bound to Python as torch.OutOfMemoryError since 2.5)" },
    OomClass { framework: "cupy", class: r"cupy\.cuda\.memory\.OutOfMemoryError", entry: "cupy.out-of-memory", platform: Platform::Cuda, space: Device, meaning: Oom, source: "cupy/cupy:cupy/cuda/memory.pyx@v14.2.0 (class OutOfMemoryError(MemoryError): size about to be allocated, total allocated so far, limit; raised by the memory pool)" },
    OomClass { framework: "tensorflow", class: r"(?:tensorflow\.python\.framework\.errors_impl\.|tf\.errors\.)?ResourceExhaustedError", entry: "tensorflow.oom-tensor", platform: Platform::Cuda, space: Device, meaning: Likely { reason: TF_RESOURCE, needs_memory_context: true }, source: "tensorflow/tensorflow:tensorflow/python/framework/errors_impl.py@v2.21.0#L367-L380 (ResourceExhaustedError, error code RESOURCE_EXHAUSTED: 'For example, this error might be raised if a per-user quota is exhausted, or perhaps the entire file system is out of space'), read at https://www.tensorflow.org/api_docs/python/tf/errors/ResourceExhaustedError" },
];

/// One regex (no groups) of a framework's classes, between ASCII word ends (a class name in a
/// Chinese sentence follows a CJK character with no space).
pub fn oom_class_pattern(framework: &str) -> String {
    let alts: Vec<&str> = OOM_CLASSES.iter().filter(|c| c.framework == framework).map(|c| c.class).collect();
    format!(r"(?-u:\b)(?:{})(?-u:\b)", alts.join("|"))
}

/// The row whose class the printed name is.
pub fn oom_class(printed: &str) -> Option<&'static OomClass> {
    OOM_CLASSES.iter().find(|c| regex::Regex::new(&format!("^(?:{})$", c.class)).is_ok_and(|r| r.is_match(printed)))
}

/// The member of that name.
pub fn member(name: &str) -> Option<&'static Member> {
    MEMBERS.iter().find(|m| m.name == name)
}

pub fn runtime(id: &str) -> Option<&'static Runtime> {
    RUNTIMES.iter().find(|r| r.id == id)
}

/// The runtime's members whose printed value is `v`.
pub fn by_value(runtime: &str, v: i64) -> impl Iterator<Item = &'static Member> + '_ {
    MEMBERS.iter().filter(move |m| m.runtime == runtime && m.value.is_some_and(|x| x == v || (x > i32::MAX as i64 && x as i32 as i64 == v)))
}

/// A printed value: decimal (signed) or hex (`0x8007000E`, also as a 32-bit signed HRESULT).
pub fn parse_value(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    s.parse::<i64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_member_names_a_runtime_and_a_source() {
        for m in MEMBERS {
            assert!(runtime(m.runtime).is_some(), "{}: no runtime {}", m.name, m.runtime);
            // A documentation page, or a source file as `owner/repo:path`.
            let (repo, _) = m.source.split_once(':').unwrap_or(("", ""));
            assert!(m.source.starts_with("https://") || repo.matches('/').count() == 1, "{}: {}", m.name, m.source);
        }
        let names: std::collections::BTreeSet<_> = MEMBERS.iter().map(|m| m.name).collect();
        assert_eq!(names.len(), MEMBERS.len(), "a name is listed twice");
    }

    #[test]
    fn host_names_are_the_runtimes_own() {
        for h in HOST_NAMES {
            assert!(regex::Regex::new(h.pattern).is_ok(), "{}: {}", h.runtime, h.pattern);
            assert!(!h.source.is_empty(), "{}", h.runtime);
        }
        let all = regex::Regex::new(&host_names_pattern()).unwrap();
        for t in ["FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory", "java.lang.OutOfMemoryError: GC overhead limit exceeded", "fatal runtime error: allocator memory exhausted", "z3.z3types.Z3Exception: out of memory", "pandas.errors.ParserError: Error tokenizing data. C error: out of memory"] {
            assert!(all.is_match(t), "{t}");
        }
        // Another library's class of a like name, or a GPU library, is not a host library's.
        for t in ["cupy.cuda.memory.OutOfMemoryError: out of memory", "torch.OutOfMemoryError: CUDA out of memory", "mynumpy_ext.Error: out of memory"] {
            assert!(!all.is_match(t), "{t}");
        }
    }

    #[test]
    fn oom_classes_are_cited_and_distinct() {
        for c in OOM_CLASSES {
            assert!(regex::Regex::new(&oom_class_pattern(c.framework)).is_ok(), "{}", c.class);
            assert!(c.source.starts_with("https://") || c.source.split_once(':').is_some_and(|(r, _)| r.matches('/').count() == 1), "{}", c.class);
            assert!(c.source.contains('@') || c.source.starts_with("https://"), "{}: no tag", c.class);
        }
        let torch = regex::Regex::new(&oom_class_pattern("pytorch")).unwrap();
        assert!(torch.is_match("torch.OutOfMemoryError: CUDA out of memory") && torch.is_match("torch.cuda.OutOfMemoryError: ..."));
        assert!(!torch.is_match("mytorch.OutOfMemoryErrors"));
        assert_eq!(oom_class("cupy.cuda.memory.OutOfMemoryError").map(|c| c.entry), Some("cupy.out-of-memory"));
        assert_eq!(oom_class("tf.errors.ResourceExhaustedError").map(|c| c.framework), Some("tensorflow"));
    }

    #[test]
    fn values_as_logs_print_them() {
        assert_eq!(parse_value("0x8007000E"), Some(0x8007_000E));
        assert_eq!(parse_value("-2"), Some(-2));
        // An HRESULT printed as a signed 32-bit integer is the same member.
        assert_eq!(by_value("windows", -2147024882).next().map(|m| m.name), Some("E_OUTOFMEMORY"));
        assert_eq!(by_value("vulkan", -2).next().map(|m| m.name), Some("VK_ERROR_OUT_OF_DEVICE_MEMORY"));
        assert_eq!(by_value("level-zero", 0x7000_0003).next().map(|m| m.space), Some(Space::Device));
    }
}
