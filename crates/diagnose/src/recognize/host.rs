//! Host RAM: CPU allocators (PyTorch DefaultCPUAllocator, posix_memalign, XLA:CPU),
//! std::bad_alloc, Python MemoryError, the Linux OOM killer, containers (OOMKilled,
//! exit 137), torchrun's SIGKILLed workers, macOS `Killed: 9`, compilers killed for RAM
//! and DataLoader shared memory.
//!
//! Formats, from the sources that print them:
//! - `c10/core/impl/alloc_cpu.cpp` (`c10/core/CPUAllocator.cpp` before 1.5): POSIX prints
//!   `DefaultCPUAllocator: can't allocate memory: you tried to allocate N bytes. Error code E (strerror)`,
//!   Windows and Android `DefaultCPUAllocator: not enough memory: you tried to allocate N bytes.`;
//!   before 2019 `posix_memalign(&data, gAlignment, nbytes) == 0. 12 vs 0`.
//! - XLA:CPU (`xla/pjrt/cpu/tracked_cpu_device_buffer.cc`): `RESOURCE_EXHAUSTED: Out of memory allocating %d bytes.`
//!   (older XLA:GPU printed the same words for device memory, so GPU context rules it out);
//!   the YNNPACK path logs `allocate of <N> failed.` before `YNNPACK operation failed`.
//! - libstdc++: `terminate called after throwing an instance of 'std::bad_alloc'` / `what():  std::bad_alloc`.
//! - NumPy (`_ArrayMemoryError`, since 1.17): `Unable to allocate 3.2 GiB for an array with shape (..) and data type float64`,
//!   also with the exception's name on a line of its own above the message (Django's error page).
//! - Linux `mm/oom_kill.c`: `Out of memory: Killed process N (comm) total-vm:..kB, anon-rss:..kB, ...`,
//!   `oom-kill:constraint=...`, `Memory cgroup out of memory: ...`.
//! - torch.distributed.elastic: `failed (exitcode: -9) local_rank: ...`, `Signal 9 (SIGKILL) received by PID N`.
//! - Windows ERROR_COMMITMENT_LIMIT (1455) as each runtime prints it: `[WinError 1455]`, Rust's
//!   `(os error 1455)`, Go's `VirtualAlloc ... errno=1455`, Java's `CreateProcess error=1455` and
//!   `(DOS error/errno=1455)`, the HRESULT `0x800705AF`, or the message text alone (.NET, hcsshim,
//!   `DLL load failed: ...`), in the language Windows prints it: [`PAGEFILE_TEXTS`].
//! - ENOMEM as runtimes print it: Python `[Errno 12] Cannot allocate memory`, Rust's `io::Error`
//!   `Cannot allocate memory (os error 12)` (`library/std/src/io/error.rs`: "{desc} (os error {code})").
//! - PyTorch's DataLoader (`torch/csrc/DataLoader.cpp`, since pytorch/pytorch#25730): a worker
//!   killed by SIGBUS is reported with "It is possible that dataloader's workers are out of shared
//!   memory"; the bare `is killed by signal: Bus error` is the same report cut short. Users retype
//!   these sentences in other casing (`Unexpected bus ERROR ... insufficient Shared memory (SHM)`):
//!   they are read case-insensitively.
//! - Shells reporting a SIGKILLed job: bash `Killed` (`line N: PID Killed  cmd`), macOS `Killed: 9`,
//!   zsh's job table `[1]  + 31330 killed     python`. (fish 4.8's `fish: Job 1, 'cmd' terminated by
//!   signal SIGKILL (Forced quit)`, `share/functions/fish_job_summary.fish`, is not read as a memory
//!   kill: the one real paste collected is macOS killing an unsigned binary at start.)
//! - Docker builds: the legacy builder's `The command '%s' returned a non-zero code: %d`
//!   (`daemon/builder/dockerfile/dispatchers.go`) and BuildKit's `exit code: %d`
//!   (`frontend/gateway/pb/exit.go`), read at docker-v29.7.2.
//! - cgroup v1 memory controller (`mm/memcontrol.c`, `mem_cgroup_print_oom_info` before 4.19):
//!   `Task in /A killed as a result of limit of /B`, `memory: usage 102360kB, limit 102400kB, failcnt N`.
//! - Arrow's memory pool (`cpp/src/arrow/memory_pool.cc`): `malloc of size N failed`, `realloc of size N failed`.
//! - kubelet's OOM watcher (`pkg/kubelet/oom`): events `System OOM encountered, victim process: P,
//!   pid: N` (and `Cgroup OOM encountered, …`, kubernetes/kubernetes#100487); systemd's unit notes
//!   `<unit>: A process of this unit has been killed by the OOM killer.`, `Failed with result 'oom-kill'`;
//!   earlyoom (rfjakob/earlyoom): before 1.0 `Out of memory! avail: N MiB < min: M MiB` then `Killing
//!   process N name`, at v1.9.0 `low memory! at or below SIGKILL limits: …` and `sending SIGKILL to
//!   process N uid U "name": oom_score S, oom_score_adj A, VmRSS R MiB` (`kill.c`, `main.c`).
//! - macOS (xnu `no_paging_space_action`): `low swap: killing largest compressed process with pid N
//!   (name) and size M MB` (M: the process's compressed memory, MiB).
//! - `kubectl describe pod`: a container's `Reason: OOMKilled` with its `Limits:` `memory: 128Mi` below.
//! - Netty's direct-memory counter (`common/.../PlatformDependent.java`, `incrementMemoryCounter`,
//!   netty-4.1.128.Final): `OutOfDirectMemoryError: failed to allocate N byte(s) of direct memory
//!   (used: U, max: M)`, U being the use before the request and M the limit (`io.netty.maxDirectMemory`,
//!   by default the JVM's `-XX:MaxDirectMemorySize`); shaded copies rename the package.
//! - MSVC's `std::bad_alloc::what()` is `bad allocation` (LightGBM, CatBoost on Windows).
//! - DuckDB's buffer manager (`standard_buffer_manager.cpp`): `Out of Memory Error: failed to
//!   allocate data of size X (Y/Z used)`, Z being `memory_limit`; `SET memory_limit` below what is
//!   in use: `Failed to change memory limit to %lld: could not free up enough memory for the new
//!   limit` (`src/storage/buffer/buffer_pool.cpp`, v1.5.5).
//! - Launchers and runtimes reporting SIGKILL: kubelet's JSON (`"exitCode": 137`, `"reason": "OOM
//!   Killed"`), `Subprocess return code: 137`, DeepSpeed's `exits with return code = -9`, gunicorn's
//!   arbiter (`Worker (pid:N) was sent SIGKILL! Perhaps out of memory?`), MPICH's hydra (`BAD
//!   TERMINATION OF ONE OF YOUR APPLICATION PROCESSES` … `EXIT CODE: 9`, the killing signal).
//!   Argo Workflows states a failed container as `<reason> (exit code N)` (`workflow/controller/
//!   operator.go` at v4.1.2, `fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)`), the reason
//!   being Kubernetes' `OOMKilled`: that status reads as a report wherever it stands.
//! - The Linux page allocator (`mm/page_alloc.c`, `warn_alloc` in `__alloc_pages_slowpath`):
//!   `<comm>: page allocation failure: order:N, mode:0x…(GFP_…)`. Above order 3
//!   (`PAGE_ALLOC_COSTLY_ORDER`) or without direct reclaim (atomic, NOWAIT) it can fail with
//!   free memory left (fragmentation, a burst): then `likely`.
//! - macOS libmalloc: `malloc: *** mach_vm_map(size=N) failed (error code=E)` / `*** error:
//!   can't allocate region` (`src/magazine_malloc.c` at libmalloc-53.1.1, `src/vm.c` at
//!   libmalloc-140.1.1); libmalloc-792.41.1 prints `mach_vm_map(size=N, flags: F)`: N is the
//!   request in bytes, never the flags.
//! - HotSpot at start-up (`share/memory/universe.cpp`, `Universe::reserve_heap`): `Error occurred
//!   during initialization of VM` / `Could not reserve enough space for NKB object heap` (older
//!   releases without the size): the heap's address space could not be reserved (`-Xmx` above what
//!   `ulimit -v` or a 32-bit JVM allows); bash's `ulimit -a` lists that limit as `virtual memory
//!   (kbytes, -v) N`.

use super::{has, Hit};
use crate::finding::{Confidence, SizeKey};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "DefaultCPUAllocator",
    "enforce fail at CPUAllocator",
    "enforce fail at alloc_cpu",
    "posix_memalign",
    "Out of memory allocating",
    "allocate of <",
    "bad_alloc",
    "MemoryError",
    "Unable to allocate",
    "exitcode: -9",
    // A parent reporting its child's return code as Python's subprocess gives it (minus the signal
    // number): Neuron's "Compile command returned: -9", DIGITS' "ERROR: error code -9".
    "returned: -9",
    "error code -9",
    // `docker events`: the daemon's "oom" action for a container (moby daemon/monitor.go:204
    // `LogContainerEvent(c, events.ActionOOM)`, api/types/events/events.go `ActionOOM Action = "oom"`,
    // checked at docker-v29.7.2-150-gb985e2313a).
    "container oom",
    "SIGKILL",
    "Killed: 9",
    "internal compiler error: Killed",
    "Memory cgroup out of memory",
    "invoked oom-killer",
    "[Errno 12]",
    "insufficient shared memory",
    // The same DataLoader sentence retyped by a user in other casing ("insufficient Shared memory (SHM)"):
    // its abbreviation in either case (the grammar reads the sentence case-insensitively).
    "memory (shm)",
    "memory (SHM)",
    "WinError 1455",
    "error 1455",
    "error=1455",
    "errno=1455",
    "paging file",
    "bad allocation",
    "No space left on device",
    // NCCL's segment it could not create or attach to in /dev/shm. (PyTorch's bare "unable to open shared memory
    // object" is no trigger: alone it is the open-file limit more often than a full /dev/shm.)
    "shared memory segment",
    "Code\": 137",
    "code\": 137",
    "code: 137",
    "sigkill_handler",
    "was sent SIGKILL",
    "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
    "paging fi",
    "fichier de pagination est insuffisant",
    "archivo de paginación es demasiado",
    "arquivo de paginação é muito pequeno",
    "Auslagerungsdatei ist zu klein",
    "file di paging è troppo piccolo",
    "0x800705AF",
    "0x800705af",
    "is killed by signal: Bus error",
    " killed ",
    "returned a non-zero code: 137",
    "killed as a result of limit of",
    "Failed to change memory limit",
    "OutOfDirectMemoryError",
    " OOM encountered, victim process",
    "killed by the OOM killer",
    "low memory! at or below",
    "sending SIGKILL to process",
    "killing largest compressed process",
    "page allocation failure: order:",
    // libmalloc's line beside `mach_vm_map(size=N)`; HotSpot's first line of a start-up failure.
    "can't allocate region",
    "Error occurred during initialization of VM",
];

/// The text of ERROR_COMMITMENT_LIMIT (1455) in the languages Windows prints it, each as the
/// start of the sentence (a paste may cut it, or wrap it). Only the Latin-script ones can start
/// a block by themselves (the scanner's anchors are ASCII, for its vectorized search); the
/// others are read where anything else in the paste did (the code, the HRESULT, a traceback). English, Spanish, Portuguese and
/// Italian as Microsoft's "System Error Codes (1300-1699)" pages give them (the localized
/// learn.microsoft.com pages, read through the code index); the others as Windows printed
/// them in public pastes: Chinese (simplified) in babysor/MockingBird#486, szad670401/HyperLPR#49;
/// Russian in millerscout/Kenshi-Mod-Manager#717; German in a JVM's
/// `error='Die Auslagerungsdatei ist zu klein, um diesen Vorgang durchzuführen' (DOS
/// error/errno=1455)`; French, Japanese, Korean, Chinese (traditional) in pastes beside
/// `(os error 1455)` / `[WinError 1455]`.
pub const PAGEFILE_TEXTS: &[(&str, &str)] = &[
    ("en", "paging file is too small"),
    ("zh-CN", "页面文件太小"),
    ("zh-TW", "分頁檔太小"),
    ("ja", "ページング ファイルが小さすぎ"),
    ("ko", "페이징 파일이 너무 작"),
    ("de", "Auslagerungsdatei ist zu klein"),
    ("fr", "fichier de pagination est insuffisant"),
    ("es", "archivo de paginación es demasiado pequeño"),
    ("pt", "arquivo de paginação é muito pequeno"),
    ("it", "file di paging è troppo piccolo"),
    ("ru", "Файл подкачки слишком мал"),
];

fn pagefile_pattern() -> String {
    let texts: Vec<String> = PAGEFILE_TEXTS.iter().map(|(_, t)| regex::escape(t)).collect();
    format!(
        r"\[WinError 1455\][^\n]{{0,200}}|\(?\s*os error 1455\s*\)?|\b(?:error|errno)(?:=| )1455\b[^\n]{{0,200}}|\b0x800705[Aa][Ff]\b|(?i:(?:the )?(?:{}))[^\n]{{0,80}}?(?:\s*\(os error 1455\))?",
        texts.join("|")
    )
}

grammar!(
    cpu_alloc,
    r"DefaultCPUAllocator: (?P<kind>can't allocate memory|not enough memory)(?:: you tried to allocate (?P<req>\d+) bytes\.?)?(?: Error code (?P<code>\d+) \((?P<err>[^)\n]{0,80})\))?"
);
grammar!(enforce_loc, r"\[enforce fail at (?:[^\]\n]*[\\/])?(?P<loc>[\w.]+:\d+)\]");
grammar!(
    memalign,
    r"(?:Alloc (?P<req>\d+) error! \[Hint: )?Expected posix_memalign\([^)\n]*\) == 0, but received posix_memalign\([^)\n]*\):(?P<e1>\d+) != 0:0\.?|posix_memalign\([^)\n]*\) == 0\. (?P<e2>\d+) vs 0"
);
// JAX reports a failure in an eager op's dispatch as `INTERNAL: Error dispatching
// computation: Out of memory allocating N bytes.` (jax 0.10, CPU): the same allocator's words.
grammar!(xla_cpu, r"(?:RESOURCE_EXHAUSTED|Resource exhausted|INTERNAL: Error dispatching computation): Out of memory allocating (?P<req>\d+) bytes\.?");
grammar!(accelerator_words, r"(?i)\bgpu|\bcuda|\brocm\b|\bhip\b|\btpu\b|gpu_\d|device:gpu");
grammar!(ynn_alloc, r"allocate of <\d+> failed\.(?:[\s\S]{0,4000}?YNNPACK operation failed[^\n]*)?");
// (`LightGBMError('std::bad_alloc')`: the repr of a Python exception carrying the C++ what();
// ONNX Runtime's `Exception during initialization: bad allocation`, inference_session.cc, the
// what() after the phase it failed in.)
grammar!(
    bad_alloc,
    r"terminate called after throwing an instance of 'std::bad_alloc'(?:\s+what\(\):\s+std::bad_alloc)?|(?:what\(\):|Error:|Exception:|error:)\s*std::bad_alloc\b|\b(?:[\w.]*Error|error|[\w.]*Exception)(?: (?:during|in|while|at) [\w .:]{1,60}?)?:\s*(?:bad allocation|std::bad_alloc)\b|\[(?:Fatal|Warning|Error)\][ \t]*bad allocation\b|\b[\w.]*(?:Error|Exception)\(['\x22]std::bad_alloc['\x22]\)"
);
grammar!(
    numpy_alloc,
    r"(?P<exc>(?:[\w.]+\.)?(?:_ArrayMemoryError|MemoryError))(?::[ \t]*|[ \t]*\n[ \t]*)Unable to allocate (?:(?P<n>\d+(?:\.\d*)?)\s?(?P<u>[KMGTPE]i?B|B|bytes) for (?:an )?)?array with (?:shape|form) \((?P<shape>[\d, ]*)\) and data type (?P<dt>\w+)"
);
// A title or a line cut right after NumPy's opening words.
grammar!(numpy_cut, r"(?m)(?P<exc>(?:[\w.]+\.)?(?:_ArrayMemoryError|MemoryError)): Unable to allocate[ \t]*$");
grammar!(bare_memory_error, r"(?m)^[ \t>]*(?:[\w.]+\.)?MemoryError\b(?:[ \t]*:?[ \t]*$|[ \t]{2,}Traceback \(most recent call last\))");
grammar!(errno12, r"(?P<exc>\b[\w.]*Error)?:?\s*(?:\[Errno 12\] Cannot allocate memory|Cannot allocate memory \(os error 12\))");
grammar!(memcg_v1_task, r"(?:Task in (?P<task>/\S*) killed|(?P<cg>/\S+) killed) as a result of limit of (?P<lim>/\S+)");
grammar!(memcg_v1_usage, r"memory: usage (?P<u>\d+)kB, limit (?P<l>\d+)kB, failcnt \d+");
grammar!(macos_low_swap, r"low swap: killing largest compressed process with pid (?P<pid>\d+) \((?P<name>[^)\n]*)\) and size (?P<mb>\d+) MB");
grammar!(kubelet_oom_event, r"(?:System |Cgroup )?OOM encountered, victim process: (?P<proc>[^,\n]+), pid: (?P<pid>\d+)");
grammar!(systemd_unit_oom, r"(?P<unit>[\w@.\\\-]+): (?:A process (?:of this unit )?has been killed by the OOM killer\.?|Failed with result 'oom-kill'\.?)");
grammar!(
    earlyoom,
    r#"Out of memory! avail: (?P<avail>\d+) MiB < min: \d+ MiB(?:\s*Killing process \d+ \S+)?|low memory! at or below SIGKILL limits: mem [\d.]+ ?%, swap [\d.]+ ?%|sending SIG(?:KILL|TERM) to process \d+ uid \d+ "[^"\n]*": oom_score -?\d+, oom_score_adj -?\d+, VmRSS (?P<rss>\d+) MiB"#
);
grammar!(k8s_limits_memory, r"Limits:[ \t]*\n(?:[ \t]+[\w.\-/]+:[ \t]*\S+[ \t]*\n){0,4}?[ \t]+memory:[ \t]*(?P<q>\d+(?:Ki|Mi|Gi|Ti|k|M|G)?)\b");
grammar!(netty_direct, r"(?:[\w.]+\.)?OutOfDirectMemoryError\b(?::\s*failed to allocate (?P<req>\d+) byte\(s\) of direct memory \(used: (?P<used>\d+), max: (?P<max>\d+)\))?");
grammar!(arrow_alloc, r"(?:malloc|realloc|calloc) of size (?P<n>\d+) failed");
grammar!(killed_process, r"Killed process (?P<pid>\d+) \((?P<name>[^)]+)\)");
grammar!(kb_field, r"(?P<k>total-vm|anon-rss|file-rss|shmem-rss):\s*(?P<v>[\d,]+)\s*kB");
grammar!(
    oom_kill_event,
    r#"oom-kill:constraint=|\bOOMKilled\b|\breason"?:\s*"OOM Killed"|invoked oom-killer|oom[-_]kill events?|\bcontainer oom [0-9a-f]{12,64}\b|srun: error: [^\n]*: Out Of Memory|Memory cgroup out of memory"#
);
grammar!(
    exit137,
    r#"\b(?:[Ee]xit(?:ed|s)?(?: with)?(?: exit)?|returned non-zero exit|status)(?: status)?(?: code)?:? 137\b|(?i:signal 9 \(SIGKILL\))(?: received by PID \d+)?|died with <Signals\.SIGKILL: 9>|killed by signal: Killed|failed \(exitcode: -9\)(?: local_rank: \d+ \(pid: \d+\))?|(?i:exit_?code)"?:\s*137\b|\breturn code(?::| =)? 137\b|\breturned a non-zero code: 137\b|\b(?:executor failed running \[[^\]\n]*\]|did not complete successfully): exit code: 137\b|\bexits with return code = -9\b|\bWorker \(pid:\d+\) was sent SIGKILL!(?: Perhaps out of memory\?)?|BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES[^\n]*\n(?:[^\n]*\n){0,3}?[= ]*EXIT CODE: 9\b"#
);
// (A markdown heading's marks may stand before bash's own job line: an issue titled with it.)
grammar!(shell_killed, r"(?m)^[ \t]*#{1,6}[ \t]+[\w/.\-]+: line \d+: \d+[ \t]+Killed(?:[ \t]+[^\n]{1,2000})?[ \t]*$|(?m)^[ \t]*(?:[\w/.\-]+: (?:line \d+: )?)?(?:\[\d+\][ \t]*[+-]?[ \t]*)?(?:\d+[ \t]+)?(?:Killed|killed)(?::[ \t]*9)?(?:[ \t]+[^\n]{1,2000})?[ \t]*$|(?m)(?:it/s|s/it)\]Killed[ \t]*$");
// What a job prints about its memory before the shell reports it killed.
grammar!(memory_before_kill, r"(?i)\b(?:exceeds? \d+% of (?:free )?system memory|(?:system|host|free|available) memory|memory usage|\bRAM\b|swap|allocat(?:e|ing|ion) (?:of )?\d[\d.,]*\s?(?:[KMGT]i?B|bytes)?)");
const KILL_AFTER_MEMORY: &str = "the shell reports the job killed by SIGKILL, and the lines before it report the job's memory use: the kernel's OOM killer sends SIGKILL to the process that outgrows the machine's memory (dmesg shows 'Killed process' to confirm); a kill by hand or by a scheduler reads the same";
// A parent process reporting its child's return code: a negative one is the signal that ended it
// (Python's `subprocess` returncode -N), -9 SIGKILL.
// (Not `error code: -9`: OpenCL prints its status so, and -9 there is CL_IMAGE_FORMAT_NOT_SUPPORTED.)
grammar!(child_minus9, r"\b(?:[Cc]ommand returned: |[Ee]rror code )-9\b");
const KILL_CHILD: &str = "a parent process reports its child's return code -9: the child was ended by signal 9 (SIGKILL), which the kernel's OOM killer sends to the process that outgrows the machine's memory (dmesg shows 'Killed process' to confirm); a kill by hand or by a scheduler reads the same";
const KILL_BARE: &str = "the shell reports the job killed by SIGKILL; the kernel's OOM killer is the usual sender (dmesg shows 'Killed process' to confirm), but a kill by hand or by a scheduler reads the same";
grammar!(cpu_enforce_only, r"enforce fail at (?:CPUAllocator|alloc_cpu)\.cpp(?::\d+)?");
grammar!(
    dev_shm,
    r"(?i:killed by signal: Bus error\.?[^\n]{0,120}?out of shared memory|DataLoader worker \(pid \d+\) is killed by signal: Bus error\b\.?|Unexpected bus error encountered in worker\. This might be caused by insufficient shared memory(?: \(shm\))?\.?)|No space left on device[^\n]{0,80}/dev/shm|unable to (?:open|write to) shared memory object|unable to write to file </torch_\w+>:? No space left on device(?: \(28\))?"
);
grammar!(
    llvm_oom,
    r"LLVM ERROR: (?:out of memory|Allocation failed|Cannot allocate memory)|'(?:cicc|cudafe\+\+|ptxas|nvlink|fatbinary|nvcc)' died due to signal 9|Killed signal terminated program (?:cc1plus|cc1|cicc|lto1|f951)|internal compiler error: Killed \(program (?:cc1plus|cc1|lto1|f951|cicc)\)|virtual memory exhausted: Cannot allocate memory|cc1plus: out of memory|error: [^\n]{0,300}: Cannot allocate memory"
);

// DuckDB (src/storage/standard_buffer_manager.cpp, EvictBlocksOrThrow): "failed to allocate
// data of size X (Y/Z used)", "could not allocate block of size X (Y/Z used)", before 0.8
// "could not allocate block of N bytes"; Z is the memory limit. Its allocator's own
// "Failed to allocate block of N bytes (bad allocation)" (src/common/allocator/allocator.cpp@v1.5.5,
// AllocateData; v0.9.2 without the parenthesis; "Failed to re-allocate" in ReallocateData) is the
// system refusing memory below that limit: the same entry, under its own condition.
grammar!(
    duckdb_limit,
    r"Out of Memory Error:\s*(?:failed to allocate data of size|could not allocate block of(?: size)?) (?P<req>{SZ})(?: \((?P<used>{SZ})/(?P<lim>{SZ}) used\))?"
);
grammar!(duckdb_allocator, r"Out of Memory Error:\s*Failed to (?:re-)?allocate block of (?P<req>\d+) bytes(?: \(bad allocation\))?");
grammar!(duckdb_set_limit, r"Out of Memory Error: Failed to change memory limit to (?P<lim>\d+): could not free up enough memory for the new limit");
grammar!(duckdb_in_memory, r"launched in in-memory mode and no temporary directory is specified");
grammar!(page_alloc_failure, r"(?P<comm>[^\s:]{1,64}): page allocation failure: order:(?P<order>\d+), mode:(?:0x[0-9a-fA-F]+)?(?:\((?P<gfp>[^)\n]*)\))?");
grammar!(
    mach_vm_map,
    r"(?:malloc: )?\*{3} mach_vm_map\(size=(?P<n>\d+)(?:, flags: [0-9a-fA-Fx]+)?\) failed \(error code=(?P<code>\d+)\)(?:\s*\*{3} error: can't allocate region(?: securely)?)?"
);
grammar!(jvm_heap_reserve, r"(?:Error occurred during initialization of VM\s*)?Could not reserve enough space for (?:(?P<kb>\d+)KB )?object heap");
grammar!(ulimit_v, r"virtual memory[ \t]+\(kbytes, -v\)[ \t]+(?P<kb>\d+)\b");
// A stop the user or the runtime asked for: Docker sends SIGTERM, then SIGKILL after the grace
// period (`docker stop -t`, compose's `stop_grace_period`), and the container exits 137 with no
// memory involved — as does one whose process ignores SIGTERM, or a service restarted inside it
// (`supervisorctl restart all` before compose's "Exited with code 137").
grammar!(
    stop_requested,
    r"(?i)\bdocker(?:-compose| compose)? (?:stop|restart|kill|down|rm -f)\b|\b(?:supervisorctl|systemctl) (?:stop|restart)\b|\bGracefully stopping\b|\bstop(?:s|ped|ping)? gracefully\b|\bgraceful(?:ly)? (?:stop|shut ?down)|\b(?:ignor(?:e|es|ing)|react(?:s|ing)? to|handl(?:e|es|ing)|trap(?:s|ping)?) (?:the )?SIGTERM\b|\bstop_grace_period\b"
);
grammar!(oomkilled_false, r#"\bOOMKilled"?:\s*false\b"#);
grammar!(enospc, r"No space left on device");
// Objects that live in /dev/shm: semaphores, `shm_open` names (PyTorch's `/torch_<pid>_<n>`).
// NCCL's `Error while creating shared memory segment PATH (size N), error: No space left on device (28)`
// (NVIDIA/nccl v2.30.7-1 src/os/linux.cc, v2.7.8-1 src/include/shm.h): its segments live in /dev/shm.
// NCCL's segment that could not be made (NVIDIA/nccl src/include/shm.h:48 at v2.7.8-1, "Error while
// creating shared memory segment %s (size %d)"; src/misc/shmutils.cc at v2.19.3-1 after `WARN("Error:
// failed to extend %s to %ld bytes")` when fallocate fails; src/os/linux.cc:842 at v2.30.7-1, "Error
// while %s shared memory segment %s (size %ld), error: %s (%d)", creating or attaching to). Its
// segments live in /dev/shm, and on tmpfs growing a file fails for want of space: a /dev/shm too
// small (a container's 64 MB default). The reason is on the line before it or after ", error: ".
grammar!(nccl_shm_segment, r"Error while (?:creating|attaching to) shared memory segment (?P<path>\S+?),? \(size (?P<n>\d+)\)(?P<rest>, error: [^\n]*)?");
grammar!(shm_context, r"shared memory segment|/dev/shm|\bSemLock\b|multiprocessing/synchronize\.py|</torch_\w+>|\bshm_open\b|\bsem_open\b|shared memory object|_share_(?:fd|filename)_cpu_");

// Windows ERROR_COMMITMENT_LIMIT (1455): the commit charge (RAM + page file) is used up; Windows
// prints its text in the system's language, so the number is what is read ("[WinError 1455]",
// Rust's "(os error 1455)"), or the English text alone.
grammar!(pagefile, &pagefile_pattern());
// Where the failed commit says how much it asked for: the JVM's `Native memory allocation
// (mmap) failed to map 268435456 bytes`, `(malloc) failed to allocate N bytes`.
grammar!(commit_size, r"failed to (?:map|allocate) (?P<n>\d+) bytes");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    allocators(t, hits);
    if has(t, "1455") || has(t, "800705") || has(t, "aging file") || has(t, "AGING FILE") || PAGEFILE_TEXTS[1..].iter().any(|(_, w)| has(t, w)) {
        for m in pagefile().find_iter(t) {
            if prose_line(t, m.start()) {
                continue;
            }
            let mut h = host_hit("host.windows-pagefile", m.start(), m.end());
            h.detail("windows_error", 1455);
            h.priority = 15;
            // The commit that failed, where the lines after it state its size (a JVM's hs_err
            // summary follows its `os::commit_memory ... (DOS error/errno=1455)` warning).
            if let Some(c) = commit_size().captures(super::window(t, m.start(), 800)) {
                if let Ok(n) = c["n"].parse::<u64>() {
                    h.bytes(SizeKey::Requested, n, format!("{n} bytes"));
                }
            }
            hits.push(h);
        }
    }
    python(t, hits);
    duckdb(t, hits);
    killer(t, hits);
    system_allocators(t, hits);
}

/// The kernel's page allocator, macOS libmalloc and the JVM's heap reservation: host memory
/// (or its address space) refused at the system's own layer.
fn system_allocators(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "page allocation failure") {
        for c in page_alloc_failure().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("generic.host-oom", m.start(), m.end());
            h.priority = 18;
            h.detail("allocator", "Linux page allocator").detail("task", &c["comm"]);
            let order = c["order"].parse::<u64>().ok();
            h.detail("order", order);
            let gfp = c.name("gfp").map_or("", |g| g.as_str());
            if !gfp.is_empty() {
                h.detail("gfp_flags", gfp);
            }
            let reclaims = ["GFP_KERNEL", "GFP_USER", "GFP_HIGHUSER", "GFP_NOIO", "GFP_NOFS", "__GFP_DIRECT_RECLAIM"].iter().any(|f| gfp.contains(f));
            if order.is_some_and(|o| o > 3) {
                h.likely("a high-order kernel allocation (more than 8 contiguous pages) can fail from fragmentation while memory is free");
            } else if !reclaims {
                h.likely("a kernel allocation that may not reclaim (atomic or NOWAIT) can fail in a burst while memory is free");
            }
            hits.push(h);
        }
    }
    if has(t, "mach_vm_map(size=") {
        for c in mach_vm_map().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("generic.host-oom", m.start(), m.end());
            h.priority = 14;
            h.detail("allocator", "macOS libmalloc (mach_vm_map)").detail("kern_return", c["code"].parse::<u64>().ok());
            if let Ok(n) = c["n"].parse::<u64>() {
                h.plausible_bytes(SizeKey::Requested, n);
            }
            hits.push(h);
        }
    }
    if has(t, "object heap") {
        for c in jvm_heap_reserve().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("generic.host-oom", m.start(), m.end());
            h.priority = 14;
            h.detail("runtime", "JVM").detail("operation", "reserve the Java heap at start-up");
            if let Some(kb) = c.name("kb").and_then(|v| v.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Requested, kb.saturating_mul(1024), format!("{kb}KB"));
            }
            // `ulimit -a` pasted beside it: the address-space limit the reservation ran into.
            let around = format!("{}{}", super::window_before(t, m.start(), 2000), super::window(t, m.end(), 2000));
            if let Some(u) = ulimit_v().captures(&around) {
                if let Ok(kb) = u["kb"].parse::<u64>() {
                    h.bytes(SizeKey::Limit, kb.saturating_mul(1024), format!("{kb} kbytes"));
                    h.detail("limit_kind", "ulimit -v (address space)");
                }
            }
            hits.push(h);
        }
    }
}

/// Framework and C/C++ allocators that could not get host memory.
fn allocators(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "DefaultCPUAllocator") {
        for c in cpu_alloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.cpu-allocator", m.start(), m.end());
            h.priority = 10;
            if let Some(r) = c.name("req").and_then(|r| r.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Requested, r, format!("{r} bytes"));
            }
            if let Some(code) = c.name("code") {
                h.detail("errno", code.as_str().parse::<u64>().ok());
            }
            if let Some(e) = c.name("err") {
                h.detail("strerror", e.as_str());
            }
            h.detail("allocator", "DefaultCPUAllocator");
            let line_start = t[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            if let Some(l) = enforce_loc().captures(&t[line_start..m.start()]) {
                h.detail("location", &l["loc"]);
            }
            h.flag("framework_pytorch");
            hits.push(h);
        }
    }
    // The enforce's location without its message (a title, a cut paste): every enforce in
    // PyTorch's CPU allocator is a failed host allocation — the pointer is null, posix_memalign
    // failed, or the size is negative (an overflowed request) (pytorch/pytorch
    // c10/core/CPUAllocator.cpp@014f3e7250b05ccd1528fe433c0f8ef9f55f0528, `alloc_cpu`).
    if has(t, "enforce fail at CPUAllocator") || has(t, "enforce fail at alloc_cpu") {
        for m in cpu_enforce_only().find_iter(t) {
            if hits.iter().any(|h| h.id == "host.cpu-allocator" && h.start <= m.end() + 300 && m.start() <= h.end + 300) {
                continue;
            }
            let mut h = host_hit("host.cpu-allocator", m.start(), m.end());
            h.priority = 12;
            h.likely("PyTorch's CPU allocator failed an allocation check; its message (normally 'DefaultCPUAllocator: can't allocate memory') is not in the text");
            h.detail("allocator", "DefaultCPUAllocator");
            h.flag("framework_pytorch");
            hits.push(h);
        }
    }
    if has(t, "posix_memalign") {
        for c in memalign().captures_iter(t) {
            let errno = c.name("e1").or(c.name("e2")).and_then(|e| e.as_str().parse::<u64>().ok());
            // Only ENOMEM (12) is a memory failure; EINVAL (22) is a bad alignment.
            if errno != Some(12) {
                continue;
            }
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.cpu-allocator", m.start(), m.end());
            h.priority = 10;
            if let Some(r) = c.name("req").and_then(|r| r.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Requested, r, format!("{r}"));
            }
            h.detail("errno", 12).detail("allocator", "posix_memalign");
            hits.push(h);
        }
    }
    if has(t, "Out of memory allocating") {
        for c in xla_cpu().captures_iter(t) {
            let m = c.get(0).unwrap();
            // Older XLA:GPU (MaybeOwningGpuMemory) printed the same words for device memory:
            // where the text around it names an accelerator, it is not the CPU client's.
            let around = format!("{}{}", super::window_before(t, m.start(), 1500), super::window(t, m.end(), 1500));
            if accelerator_words().is_match(&around) {
                continue;
            }
            let mut h = host_hit("host.xla-cpu", m.start(), m.end());
            h.priority = 10;
            if let Some(r) = c["req"].parse::<u64>().ok() {
                h.bytes(SizeKey::Requested, r, format!("{r} bytes"));
            }
            h.flag("framework_jax");
            hits.push(h);
        }
    }
    if has(t, "allocate of <") {
        // YNNPACK repeats the line once per failed buffer; one finding covers the run.
        if let Some(first) = ynn_alloc().find(t) {
            let end = ynn_alloc().find_iter(t).last().map_or(first.end(), |m| m.end());
            let mut h = host_hit("host.xla-cpu", first.start(), end);
            h.priority = 12;
            h.confidence = Confidence::Likely;
            h.detail("allocator", "YNNPACK");
            h.flag("framework_jax");
            hits.push(h);
        }
    }
    if has(t, "[Errno 12]") || has(t, "(os error 12)") {
        // ENOMEM from a system call (fork, mmap, ...). A process line repeats it per worker: one finding.
        for c in errno12().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.enomem", m.start(), m.end());
            h.priority = 12;
            h.detail("errno", 12);
            let ls = t[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            let ctx = super::window_before(t, ls, 400);
            if ctx.contains("fork()") || ctx.contains("_launch") || ctx.contains("Popen") {
                h.detail("syscall", "fork");
            }
            hits.push(h);
        }
    }
    if has(t, "OutOfDirectMemoryError") {
        for c in netty_direct().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("generic.host-oom", m.start(), m.end());
            h.priority = 15;
            h.detail("allocator", "netty direct memory");
            for (g, k) in [("req", SizeKey::Requested), ("used", SizeKey::Used), ("max", SizeKey::Limit)] {
                if let Some(v) = c.name(g).and_then(|v| v.as_str().parse::<u64>().ok()) {
                    h.bytes(k, v, v.to_string());
                }
            }
            hits.push(h);
        }
    }
    // Arrow's pool states the request; one no memory could hold (a corrupt length) is a note.
    if has(t, "ArrowMemoryError") {
        for c in arrow_alloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let ls = t[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            if !t[ls..m.start()].contains("ArrowMemoryError") {
                continue;
            }
            let mut h = host_hit("generic.host-oom", ls + (t[ls..m.start()].len() - t[ls..m.start()].trim_start().len()), m.end());
            h.priority = 25;
            h.detail("allocator", "arrow");
            if let Ok(n) = c["n"].parse::<u64>() {
                h.plausible_bytes(SizeKey::Requested, n);
            }
            hits.push(h);
        }
    }
    if has(t, "bad_alloc") || has(t, "bad allocation") {
        for m in bad_alloc().find_iter(t) {
            // Thrust's bad_alloc what() appends the CUDA runtime's error (thrust/system/detail/bad_alloc.h,
            // 1.9.4+: "bad allocation: cudaErrorMemoryAllocation: out of memory" through pybind11's
            // MemoryError): the device's failure, read by the runtime-status rule in generic.rs.
            if t[m.end()..].starts_with(": cudaErrorMemoryAllocation") {
                continue;
            }
            let mut h = host_hit("host.bad-alloc", m.start(), m.end());
            h.priority = 30;
            hits.push(h);
        }
    }
}

/// Python's MemoryError, with NumPy's sizes when it states them.
fn python(t: &str, hits: &mut Vec<Hit>) {
    if !has(t, "MemoryError") && !has(t, "Unable to allocate") {
        return;
    }
    for c in numpy_alloc().captures_iter(t) {
        let m = c.get(0).unwrap();
        let mut h = host_hit("host.python-memoryerror", m.start(), m.end());
        h.priority = 10;
        if let (Some(n), Some(u)) = (c.name("n"), c.name("u")) {
            // NumPy prints three significant digits and may end the mantissa with a dot ("149. GiB").
            let num = n.as_str().trim_end_matches('.');
            let unit = if u.as_str() == "bytes" { "B" } else { u.as_str() };
            if let Some(p) = oomdoc_units::parse_size(&format!("{num} {unit}")) {
                h.bytes(SizeKey::Requested, p.bytes, format!("{} {}", n.as_str(), u.as_str()));
            }
        }
        let shape = c["shape"].trim().to_string();
        let dims: Vec<u64> = shape.split(',').filter_map(|d| d.trim().parse().ok()).collect();
        let dt = c["dt"].to_string();
        if let (Some(esize), false) = (dtype_bytes(&dt), dims.is_empty()) {
            let prod = dims.iter().try_fold(esize, |acc, d| acc.checked_mul(*d));
            if let Some(total) = prod {
                let formula = format!("{} × {} B ({dt})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("×"), esize);
                h.derive("tensor_bytes", total, formula);
            }
        }
        h.culprit.shape = Some(format!("({shape})"));
        h.culprit.dtype = Some(dt);
        h.detail("exception", &c["exc"]);
        hits.push(h);
    }
    for c in numpy_cut().captures_iter(t) {
        let m = c.get(0).unwrap();
        let mut h = host_hit("host.python-memoryerror", m.start(), m.end());
        h.priority = 12;
        h.detail("exception", &c["exc"]);
        hits.push(h);
    }
    for m in bare_memory_error().find_iter(t) {
        let mut h = host_hit("host.python-memoryerror", m.start(), m.end());
        h.priority = 35;
        hits.push(h);
    }
}

/// DuckDB's buffer manager: a query over the memory limit (`memory_limit`).
fn duckdb(t: &str, hits: &mut Vec<Hit>) {
    if !has(t, "Out of Memory Error") {
        return;
    }
    for c in duckdb_set_limit().captures_iter(t) {
        let m = c.get(0).unwrap();
        let mut h = host_hit("host.duckdb-memory-limit", m.start(), m.end());
        h.priority = 10;
        if let Ok(n) = c["lim"].parse::<u64>() {
            h.bytes(SizeKey::Limit, n, format!("{n}"));
        }
        h.detail("operation", "SET memory_limit");
        hits.push(h);
    }
    for c in duckdb_allocator().captures_iter(t) {
        let m = c.get(0).unwrap();
        let mut h = host_hit("host.duckdb-memory-limit", m.start(), m.end());
        h.priority = 10;
        h.cap_size(SizeKey::Requested, &c, "req");
        h.flag("duckdb_system_allocator");
        hits.push(h);
    }
    for c in duckdb_limit().captures_iter(t) {
        let m = c.get(0).unwrap();
        let mut h = host_hit("host.duckdb-memory-limit", m.start(), m.end());
        h.priority = 10;
        h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Used, &c, "used").cap_size(SizeKey::Limit, &c, "lim");
        if duckdb_in_memory().is_match(super::window(t, m.end(), 400)) {
            h.flag("in_memory_database");
        }
        hits.push(h);
    }
}

fn dtype_bytes(dt: &str) -> Option<u64> {
    Some(match dt {
        "bool" | "uint8" | "int8" => 1,
        "uint16" | "int16" | "float16" => 2,
        "uint32" | "int32" | "float32" => 4,
        "uint64" | "int64" | "float64" | "complex64" => 8,
        "complex128" => 16,
        _ => return None,
    })
}

/// The kernel, a container runtime or a launcher killed the process (SIGKILL).
fn killer(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Killed process") {
        for c in killed_process().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.culprit.op = Some(format!("{} (pid {})", &c["name"], &c["pid"]));
            // The sizes follow on the same (possibly wrapped) line, in KiB ("kB"), sometimes comma-grouped.
            let tail = super::window(t, m.end(), 600);
            let tail = &tail[..tail.find("Killed process").unwrap_or(tail.len())];
            let mut seen = std::collections::BTreeSet::new();
            for f in kb_field().captures_iter(tail) {
                if !seen.insert(f["k"].to_string()) {
                    continue; // a later line (oom_reaper) repeats the fields with other values
                }
                let digits: String = f["v"].chars().filter(|ch| ch.is_ascii_digit()).collect();
                let Some(kib) = digits.parse::<u64>().ok() else { continue };
                let bytes = kib.saturating_mul(1024);
                match &f["k"] {
                    "anon-rss" => {
                        h.bytes(SizeKey::Used, bytes, format!("anon-rss:{}kB", &f["v"]));
                    }
                    k => {
                        h.detail(&format!("{}_bytes", k.replace('-', "_")), bytes);
                    }
                }
                h.end = h.end.max(m.end() + f.get(0).unwrap().end());
            }
            hits.push(h);
        }
    }
    // cgroup v1: the task line names the cgroup whose limit was hit; the usage line after it
    // states that cgroup's usage and limit.
    if has(t, "as a result of limit of") {
        for c in memcg_v1_task().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.priority = 28;
            // A long task line may have been joined with the usage line (a terminal wrap is
            // assumed): the cgroup name then runs into "memory:", and the usage is searched
            // from the line's start.
            h.detail("killer", "memory cgroup (v1)").detail("cgroup", c["lim"].trim_end_matches("memory:"));
            if let Some(u) = memcg_v1_usage().captures(super::window(t, m.start(), 800)) {
                for (g, k) in [("u", SizeKey::Used), ("l", SizeKey::Limit)] {
                    if let Ok(kib) = u[g].parse::<u64>() {
                        h.bytes(k, kib.saturating_mul(1024), format!("{kib}kB"));
                    }
                }
                h.end = h.end.max(m.start() + u.get(0).unwrap().end());
            }
            hits.push(h);
        }
    }
    if has(t, "illed") {
        for m in shell_killed().find_iter(t) {
            // `Killed` glued to a progress bar (a terminal wrap joined the lines): what stands
            // before the bar on that joined line is another line's text, not the kill's.
            let after_bar = m.as_str().starts_with("it/s]") || m.as_str().starts_with("s/it]");
            if !after_bar && prose_line(t, m.start()) {
                continue;
            }
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            // SIGKILL says nothing of why; what the job printed just before it may: its own
            // warnings about memory (TensorFlow's "exceeds 10% of system memory", a loader's sizes).
            let before = super::window_before(t, m.start(), 1500);
            if let Some(w) = memory_before_kill().find_iter(before).last() {
                h.likely(KILL_AFTER_MEMORY);
                h.detail("memory_context", w.as_str());
            } else {
                h.likely(KILL_BARE);
            }
            h.detail("signal", "SIGKILL (shell reported `Killed`)");
            h.priority = 45;
            hits.push(h);
        }
    }
    for m in dev_shm().find_iter(t) {
        // "unable to open shared memory object … : Too many open files (24)" is the descriptor limit.
        let le = t[m.end()..].find('\n').map_or(t.len(), |i| m.end() + i);
        if t[m.start()..le].contains("Too many open files") {
            continue;
        }
        let mut h = host_hit("host.dev-shm", m.start(), m.end());
        // `MapAllocator.cpp` appends strerror(errno) only from PyTorch 1.x's later releases; an
        // `shm_open` failure with no reason is a full /dev/shm or the descriptor limit (the
        // `file_descriptor` sharing strategy holds one per shared tensor), the limit more often
        // in public threads (3 of the 5 bare-line threads in the corpora): alone it starts no
        // block (no trigger), and where another failure line started one it is `likely`, with the
        // descriptor-limit fix first.
        if m.as_str().starts_with("unable to open shared memory object") && !t[m.start()..le].contains("No space left") {
            h.likely("shm_open failed and the message gives no reason: a full /dev/shm, or the process's open-file limit under the file_descriptor sharing strategy, both end this way");
            h.flag("shm_reason_unknown");
        }
        h.priority = 15;
        hits.push(h);
    }
    // ENOSPC where the file is shared memory: POSIX semaphores (`multiprocessing.SemLock`)
    // and `shm_open` objects live in /dev/shm on Linux, so a full /dev/shm fails their
    // creation with "No space left on device" however much disk is free.
    if has(t, "No space left on device") {
        for m in enospc().find_iter(t) {
            if prose_line(t, m.start()) {
                continue;
            }
            let le = t[m.end()..].find('\n').map_or(t.len(), |i| m.end() + i);
            let ls = t[..m.start()].rfind('\n').map_or(0, |i| i + 1);
            // The object that could not be made may be named on the next line (NCCL's
            // `posix_fallocate failed: No space left on device`, then its segment's name).
            let next = super::window(t, le, 400);
            let next = next.get(..next.get(1..).and_then(|n| n.find('\n')).map_or(next.len(), |i| i + 1)).unwrap_or("");
            let around = format!("{}{}{}", super::window_before(t, ls, 1500), &t[ls..le], next);
            if !shm_context().is_match(&around) {
                continue;
            }
            let mut h = host_hit("host.dev-shm", ls + (t[ls..le].len() - t[ls..le].trim_start().len()), le);
            h.priority = 16;
            h.detail("errno", 28);
            hits.push(h);
        }
    }
    if has(t, "shared memory segment") {
        for c in nccl_shm_segment().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.dev-shm", m.start(), m.end());
            // Before the ENOSPC line rule's hit on the same line: this one has the segment's size.
            h.priority = 15;
            h.flag("nccl_segment");
            h.detail("runtime", "nccl");
            h.plausible_bytes(SizeKey::Requested, c["n"].parse().unwrap_or(0));
            h.detail("segment", c["path"].to_string());
            let before = super::window_before(t, m.start(), 3000);
            // The file's length asked of fallocate: the segment plus NCCL's reference count.
            // Every rank prints its own pair: another rank's extension failure speaks for this
            // one's segment where its own line was cut.
            let extend = format!("failed to extend {} to ", &c["path"]);
            let to = |s: &str, at: usize| s[at..].split(' ').next().and_then(|n| n.parse::<u64>().ok());
            let same = before.rfind(&extend).and_then(|i| to(before, i + extend.len()));
            let any = || t.find("failed to extend /dev/shm/").map(|i| i + "failed to extend ".len()).and_then(|i| t[i..].find(" to ").map(|j| i + j + 4)).and_then(|at| to(t, at));
            let extended = same.or_else(any);
            if let Some(n) = extended {
                h.detail("extend_to_bytes", n);
            }
            let reason_before = extended.is_some() || super::window_before(t, m.start(), 400).contains("No space left on device");
            match c.name("rest") {
                Some(r) if r.as_str().contains("No space left on device") => {
                    h.detail("errno", 28);
                }
                // Another stated reason (a segment removed under it: "No such file or directory") is no memory failure.
                Some(r) if !r.as_str().contains("Cannot allocate memory") => continue,
                Some(_) => {
                    h.detail("errno", 12);
                }
                _ if reason_before => {
                    h.detail("errno", 28);
                }
                _ => {
                    h.likely("NCCL could not create its shared-memory segment and the line gives no reason; a full /dev/shm (a container's 64 MiB default) is the usual one");
                }
            }
            hits.push(h);
        }
    }
    if has(t, "killing largest compressed process") {
        for c in macos_low_swap().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.priority = 25;
            h.detail("killer", "macOS (out of compressor/swap space)");
            h.culprit.op = Some(format!("{} (pid {})", &c["name"], &c["pid"]));
            if let Ok(mb) = c["mb"].parse::<u64>() {
                h.detail("compressed_size_bytes", mb << 20);
            }
            hits.push(h);
        }
    }
    if has(t, "OOM encountered, victim process") {
        for c in kubelet_oom_event().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.priority = 28;
            h.detail("killer", "kernel (kubelet's OOM watcher)");
            h.culprit.op = Some(format!("{} (pid {})", c["proc"].trim(), &c["pid"]));
            hits.push(h);
        }
    }
    if has(t, "killed by the OOM killer") || has(t, "'oom-kill'") {
        for c in systemd_unit_oom().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.priority = 30;
            h.detail("killer", "kernel (reported by systemd for the unit)");
            h.culprit.op = Some(c["unit"].to_string());
            hits.push(h);
        }
    }
    if has(t, "Out of memory! avail") || has(t, "low memory! at or below") || has(t, "to process") {
        for c in earlyoom().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.priority = 25;
            h.detail("killer", "earlyoom");
            if let Some(a) = c.name("avail").and_then(|v| v.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Free, a << 20, format!("{a} MiB"));
            }
            if let Some(r) = c.name("rss").and_then(|v| v.as_str().parse::<u64>().ok()) {
                h.bytes(SizeKey::Used, r << 20, format!("{r} MiB"));
            }
            hits.push(h);
        }
    }
    for m in oom_kill_event().find_iter(t) {
        // The bare word in someone's sentence ("not related to OOMKilled") is a mention; the
        // kernel's and slurmstepd's lines address the user themselves ("your processes").
        // Argo's status `OOMKilled (exit code 137)` (reason and exit code) is a report, even quoted in a sentence.
        if m.as_str() == "OOMKilled" && prose_line(t, m.start()) && !t[m.end()..].starts_with(" (exit code ") {
            continue;
        }
        // `docker inspect` prints the flag either way: "OOMKilled": false is not a kill.
        let after = super::window(t, m.end(), 12).trim_start_matches('"').trim_start();
        if after.strip_prefix(':').is_some_and(|v| v.trim_start().starts_with("false")) {
            continue;
        }
        let mut h = host_hit("host.oom-killer", m.start(), m.end());
        h.priority = 30;
        // `kubectl describe`: the container's memory limit is listed below its last state.
        if m.as_str() == "OOMKilled" {
            if let Some(c) = k8s_limits_memory().captures(super::window(t, m.end(), 600)) {
                if let Some(b) = super::cluster::k8s_bytes(&c["q"]) {
                    h.bytes(SizeKey::Limit, b, c["q"].to_string());
                }
            }
        }
        hits.push(h);
    }
    if t.contains("137") || t.contains("SIGKILL") || t.contains("IGKILL") || t.contains("signal: Killed") || t.contains("exitcode: -9") || t.contains("code = -9") || t.contains("EXIT CODE: 9") {
        for m in exit137().find_iter(t) {
            // The launcher's own words may read as prose ("Perhaps out of memory?", MPICH's
            // "YOUR APPLICATION"): only what stands around them on the line is judged.
            if prose_around(t, m.start(), m.end()) {
                continue;
            }
            // `docker inspect` beside the exit code says the kernel did not kill it for memory.
            let around = format!("{}{}", super::window_before(t, m.start(), 600), super::window(t, m.start(), 600));
            if oomkilled_false().is_match(&around) {
                continue;
            }
            // A container stopped on request exits 137 too (SIGKILL after the grace period).
            if stop_requested().is_match(&around) {
                continue;
            }
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.confidence = Confidence::Likely;
            h.detail("exit_status", 137);
            h.priority = 40;
            hits.push(h);
        }
    }
    if t.contains("-9") {
        for m in child_minus9().find_iter(t) {
            if prose_around(t, m.start(), m.end()) || hits.iter().any(|h| h.start < m.end() && m.start() < h.end) {
                continue;
            }
            let mut h = host_hit("host.oom-killer", m.start(), m.end());
            h.likely(KILL_CHILD);
            h.detail("signal", "SIGKILL (a parent reported return code -9)");
            h.priority = 40;
            hits.push(h);
        }
    }
    // nvcc names the stage it ran when the stage dies (`'cudafe++' died due to signal 9 (Kill
    // signal)`); GCC's driver reports a killed compiler proper as `internal compiler error:
    // Killed (program cc1plus)` in older releases and `Killed signal terminated program cc1plus`
    // in newer ones (the driver's execute()) — on a build host that is the OOM killer's SIGKILL.
    if has(t, "LLVM ERROR") || has(t, "signal 9") || has(t, "Cannot allocate memory") || has(t, "Killed signal") || has(t, "cc1plus") || has(t, "error: Killed (program") {
        for m in llvm_oom().find_iter(t) {
            let mut h = host_hit("host.compiler-oom", m.start(), m.end());
            h.phase = Some(Phase::Compile);
            hits.push(h);
        }
    }
}

// The job says it has no accelerator: "no gpus", "CPU only", JAX's CPU device names,
// `JAX_PLATFORMS=cpu`.
grammar!(
    cpu_only_words,
    r"(?i)\bno (?:gpus?|accelerators?|cuda)\b|\bcpu[- ]only\b|\bwithout (?:a |any )?gpus?\b|\bTFRT_CPU_\d|\bCpuDevice\(|\bplatform[=: ]+'?cpu\b|JAX_PLATFORMS=cpu\b|jax_platforms[\s\S]{0,20}cpu"
);

/// The text around a message says the job runs on the CPU alone: it states so and names no
/// accelerator otherwise. XLA's older "Failed to allocate request for N on device ordinal 0"
/// names no device kind, and JAX's CPU client printed it too.
pub fn cpu_only_context(t: &str) -> bool {
    if !cpu_only_words().is_match(t) {
        return false;
    }
    let rest = cpu_only_words().replace_all(t, " ");
    !accelerator_words().is_match(&rest)
}

/// The line around a match (without the match itself) reads as prose.
fn prose_around(t: &str, start: usize, end: usize) -> bool {
    let ls = t[..start].rfind('\n').map_or(0, |i| i + 1);
    let le = t[start..].find('\n').map_or(t.len(), |i| start + i);
    // Only the sentence that holds the match: a launcher's hint after it ("This may have been
    // caused by an OOM error. Check your command's memory usage.") is not a person writing.
    let before = &t[ls..start];
    let bs = before.rfind(". ").map_or(0, |i| i + 2);
    let after = &t[end.min(le)..le];
    let ae = after.find(". ").map_or(after.len(), |i| i + 1);
    let rest = format!("{} {}", &before[bs..], &after[..ae]);
    super::generic::is_prose(&rest)
}

/// A question or a sentence about exit codes, not a report of one.
fn prose_line(t: &str, at: usize) -> bool {
    let ls = t[..at].rfind('\n').map_or(0, |i| i + 1);
    let le = t[at..].find('\n').map_or(t.len(), |i| at + i);
    super::generic::is_prose(&t[ls..le])
}

fn host_hit(id: &'static str, start: usize, end: usize) -> Hit {
    Hit::new(id, start, end).on(Platform::Cpu).during(Phase::Runtime).in_space("host").ranked(20)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(t: &str) -> Vec<Hit> {
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        hits
    }

    #[test]
    fn dataloader_shm_sentence_in_any_casing() {
        // kazuto1011/deeplab-pytorch#17: PyTorch's sentence retyped by the user.
        let t = "Unexpected bus ERROR encountered in worker. This might be caused by insufficient Shared memory (SHM)\n";
        let h = hits(t);
        assert_eq!(h.iter().map(|h| h.id).collect::<Vec<_>>(), vec!["host.dev-shm"]);
        // Its start trigger is there in either casing.
        assert!(TRIGGERS.iter().any(|w| t.contains(w)));
    }

    #[test]
    fn duckdb_allocator_failure_is_duckdbs_under_its_condition() {
        // duckdb/duckdb#9880 (title): the allocator's words, not the buffer manager's limit.
        let h = hits("Out of Memory Error: Failed to allocate block of 13230080 bytes\n");
        assert_eq!(h.len(), 1);
        assert_eq!((h[0].id, h[0].get(SizeKey::Requested)), ("host.duckdb-memory-limit", Some(13230080)));
        assert!(h[0].flags.contains("duckdb_system_allocator"));
        // The limit's own message keeps its reading.
        let h = hits("Out of Memory Error: failed to allocate data of size 256.0 MiB (260.3 MiB/476.8 MiB used)");
        assert!(!h[0].flags.contains("duckdb_system_allocator"));
    }

    #[test]
    fn a_bare_kill_says_why_it_is_likely_memory() {
        // tensorflow/tensorflow#36429: the job warned of its allocations, then the shell reported it killed.
        let h = hits("Allocation of 10616832 exceeds 10% of system memory.\nKilled\n");
        let k = h.iter().find(|h| h.id == "host.oom-killer").expect("kill");
        assert_eq!((k.confidence, k.confidence_reason.as_deref()), (Confidence::Likely, Some(KILL_AFTER_MEMORY)));
        assert_eq!(k.details["memory_context"], "exceeds 10% of system memory");
        // Without such lines it is still likely, for a plainer reason.
        let h = hits("load model begin.\nKilled");
        assert_eq!(h[0].confidence_reason.as_deref(), Some(KILL_BARE));
    }
}
