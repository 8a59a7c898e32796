//! Resource managers and notebooks that kill a job for the memory it used: YARN's container
//! monitor, Kubernetes' kubelet eviction, Ray's memory monitor, Dask's nanny, SLURM's step
//! memory limit, systemd-oomd, Colab's runtime and a Jupyter kernel that died. The job's
//! own log only shows the kill; these messages say which limit it crossed, with numbers.
//!
//! Formats, from the sources that print them:
//! - Hadoop YARN `ContainersMonitorImpl` ("Container [pid=..] is running beyond physical memory
//!   limits. Current usage: 2.1 GB of 2 GB physical memory used"), as Spark relays it: "Container
//!   killed by YARN for exceeding memory limits. 8.2 GB of 8 GB physical memory used";
//!   binary units (Hadoop's TraditionalBinaryPrefix).
//! - kubelet eviction manager: "The node was low on resource: memory. [Threshold quantity: 100Mi,
//!   available: 20948Ki.] Container X was using 30332Ki, which exceeds its request of 0."
//!   (Kubernetes quantities: Ki/Mi/Gi are binary). A pod evicted or refused for a node
//!   condition: `nodeConditionMessageFmt` "The node had condition: [MemoryPressure]. "
//!   (pkg/kubelet/eviction/helpers.go).
//! - Ray memory monitor: "Task was killed due to the node running low on memory. Memory on the node
//!   (IP: ..) where the task (.., memory used=2.22GB) was running was 59.49GB / 62.58GB (0.950744),
//!   which exceeds the memory usage threshold of 0.95."; raylet: "N Workers (tasks / actors) killed
//!   due to memory pressure (OOM)"; Ray 2.0-2.1's raylet monitor (the line ray-project/ray#27716
//!   added): "System memory low at node with IP 172.17.0.2. Used memory (23.63GB) / total capacity
//!   (33.28GB) (0.709971) exceeds threshold 0.7, killing latest task ...".
//!   Ray <= 2.0's Python monitor (`python/ray/memory_monitor.py`, `RayOutOfMemoryError.get_message`):
//!   "More than 95% of the memory on node <host> is used (11.8 / 12.3 GB)." where "GB" is
//!   GiB (`psutil` bytes / 1024**3). That monitor raises `RayOutOfMemoryError` (its own class,
//!   raised for nothing else); a task that raised it surfaces as `RayTaskError(RayOutOfMemoryError)`
//!   (`python/ray/exceptions.py` names the wrapper class after its cause), and Ray 2.2+'s
//!   `ray.exceptions.OutOfMemoryError` is the memory monitor's kill.
//!   The raylet's kill detail is multi-line: a paste may start at its second line, "Memory on the
//!   node (IP: ..) where the task (..) was running was 219.41GB / 230.40GB (0.952289), which
//!   exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: ..)" (the wording of
//!   Ray's `doc/source/ray-core/scheduling/ray-oom-prevention.rst` and of public pastes; the
//!   source tag was not pinned: the repository is larger than the fetch limit).
//! - Dask's scheduler: "KilledWorker: Attempted to run task 'x' on 4 different workers, but all
//!   those workers died while running it." (a memory kill only where the workers' memory lines
//!   stand beside it);
//! - Dask distributed nanny: "Worker exceeded 95% memory budget. Restarting" (newer: "Worker
//!   tcp://.. (pid=..) exceeded 95% memory budget. Restarting...").
//! - SLURM slurmstepd: "Job 848444 exceeded memory limit (33715636 > 32757760), being killed"
//!   (KiB), "Exceeded job memory limit", "Some of the step tasks have been OOM Killed". Since
//!   20.11 the step is printed with `%ps`, "StepId=7284712.0 exceeded memory limit (1295467052032
//!   > 1288490188800), being killed" (`src/interfaces/jobacct_gather.c` at slurm-25-11-7-1), and
//!   the figures are bytes: `jobacct_mem_limit = mem_limit * 1048576; /* MB to B */` since 18.08
//!   (SchedMD/slurm b502d1790a, "working off bytes instead of KB"; `* 1024 /* MB to KB */` at
//!   slurm-17-02-11-1). So the `StepId=` form is bytes, and the older forms are bytes where the
//!   limit is a whole number of MiB of at least 1 GiB, KiB otherwise.
//! - systemd-oomd: "Killed <cgroup> due to memory pressure for <cgroup> being 51.07% > 50.00% for
//!   > 20s with reclaim activity" (journalctl cuts it at the terminal width: "... for <cgroup> be>"),
//!   "Memory pressure for <cgroup> is 74.23% > 20.00% for > 2s with reclaim activity" before
//!   "oomd attempting to kill <pid> with KILL", and systemd's own "<unit>: systemd-oomd killed 12
//!   process(es) in this unit." (the wordings of public journal pastes), and the swap/usage kill
//!   of `src/oom/oomd-manager.c`: "Killed %s due to memory used (%PRIu64) / total (%PRIu64) and
//!   swap used (...) / total (...) being more than N%" (newer: "Marked %s for killing due to
//!   ...") after "Considered N cgroups for killing, top candidates were:" (read in the source
//!   text through the code index; the tag was not pinned). `dump_kill_candidates`
//!   (`src/oom/oomd-util.c`) prints that candidate list when oomd acts on a cgroup over its
//!   pressure or swap limit, each candidate with `Path:` and `Current Memory Usage: 43.3G` (pressure)
//!   or `Swap Usage: 477.8M` (swap), sizes from `format_bytes` (IEC, 1024-based); when no kill
//!   succeeds it logs "Failed to kill any cgroups based on swap: %m" / "Failed to kill any cgroups
//!   under %s based on pressure: %m" (`oomd-manager.c`). The list alone (the kill line cut off, or
//!   the kill failed) is read as a likely kill, with the first candidate's usage.
//! - Colab: "Your session crashed after using all available RAM."; Kaggle: "Your notebook tried
//!   to allocate more memory than is available. It has restarted." (the wordings users paste;
//!   neither service publishes its source); Jupyter: "The kernel appears
//!   to have died. It will restart automatically." (a kill without a traceback: likely memory),
//!   and the server's own log line when the kernel process is gone, `KernelRestarter: restarting
//!   kernel (1/5), keep random ports` (jupyter_client `restarter.py`, v8.9.1).

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (each contains a scanner anchor).
pub const TRIGGERS: &[&str] = &[
    "for exceeding memory limits",
    "beyond physical memory limits",
    "beyond virtual memory limits",
    "low on resource: memory",
    "running low on memory",
    "due to memory pressure",
    "memory budget",
    "exceeded memory limit",
    "Exceeded job memory limit",
    "Exceeded step memory limit",
    "using all available RAM",
    "kernel appears to have died",
    "KernelRestarter: restarting kernel",
    "RayOutOfMemoryError: More than",
    "systemd-oomd killed",
    "oomd attempting to kill",
    "Memory pressure for",
    "KilledWorker: Attempted to run task",
    "ipynb appears to have died",
    "System memory low at node",
    "condition: [MemoryPressure]",
    "due to memory used",
    "cgroups for killing",
    "allocate more memory than is available",
    "exceeds the memory usage threshold",
    "RayTaskError(RayOutOfMemoryError)",
    "ray.exceptions.OutOfMemoryError",
    "memory_monitor.RayOutOfMemoryError",
    "Failed to kill any cgroups",
    "how to address the out of memory issue",
];

grammar!(
    yarn,
    r"(?:Container killed by YARN for exceeding memory limits\.?\s*|is running beyond (?:physical|virtual) memory limits\.\s*Current usage:\s*)(?P<used>{SZ}) of (?P<lim>{SZ}) (?P<kind>physical|virtual) memory used"
);
// A Kubernetes quantity (`resource.Quantity`'s canonical form): digits, an optional fraction and an
// optional suffix. A sentence's full stop after it ("request of 0.") is not a fraction.
const K8S_Q: &str = r"\d+(?:\.\d+)?(?:[KMGTPE]i|[kMGTPE]|m)?\b";
grammar!(
    k8s_evicted,
    &r"The node was low on resource: memory\.(?:\s*Threshold quantity:\s*(?P<thr>{Q}), available:\s*(?P<avail>{Q})\.?)?(?:\s*Container (?P<c>[\w.-]+) was using (?P<used>{Q}), (?:which exceeds its request of (?P<req>{Q})|request is (?P<req2>{Q})))?".replace("{Q}", K8S_Q)
);
// kubelet's eviction message names every container over its request (pkg/kubelet/eviction/helpers.go,
// `containerMessageFmt` "Container %s was using %s, request is %s, has larger consumption of %s"; older
// "Container %s was using %s, which exceeds its request of %s"), one after another.
grammar!(
    k8s_container,
    &r"Container (?P<c>[\w.-]+) was using (?P<used>{Q}), (?:which exceeds its request of (?P<req>{Q})|request is (?P<req2>{Q}))".replace("{Q}", K8S_Q)
);
grammar!(
    ray_task,
    r"(?:\d+ worker\(s\) were killed|Task was killed) due to the node running low on memory(?:\.|(?m:$))(?:\s*Memory on the node \([^)\n]*\)(?: where the (?:task|lease|actor)[^\n]*?memory used=(?P<task>[\d.]+GB)\))?[^\n]*? was (?P<used>[\d.]+GB) / (?P<total>[\d.]+GB) \((?P<frac>[\d.]+)\), which exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?))?"
);
grammar!(
    ray_legacy,
    r"RayOutOfMemoryError: More than (?P<pct>\d+)% of the memory on node (?P<node>\S+) is used \((?P<used>[\d.]+) / (?P<total>[\d.]+) GB\)"
);
grammar!(
    ray_system_low,
    r"System memory low at node with IP (?P<ip>[\w.:]+)\. Used memory \((?P<used>[\d.]+GB)\) / total capacity \((?P<total>[\d.]+GB)\) \((?P<frac>[\d.]+)\) exceeds threshold (?P<thr>[\d.]+)"
);
// The kill detail without its first line ("Task was killed due to the node running low on memory.").
grammar!(
    ray_node_detail,
    r"Memory on the node \([^)\n]*\)(?: where the (?:task|lease|actor)[^\n]*?memory used=(?P<task>[\d.]+GB)\))?[^\n]*? was (?P<used>[\d.]+GB) / (?P<total>[\d.]+GB) \((?P<frac>[\d.]+)\),?\s+which exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?)"
);
// The monitor's exception by its class name (Ray's own names, raised for nothing but the monitor).
grammar!(ray_oom_class, r"RayTaskError\(RayOutOfMemoryError\)|\bray\.memory_monitor\.RayOutOfMemoryError\b|\bray\.exceptions\.OutOfMemoryError\b");
grammar!(k8s_condition, r"The node had condition: \[(?P<conds>[^\]\n]*\bMemoryPressure\b[^\]\n]*)\]");
// systemd-oomd's swap-based kill (and, newer, its mark before the kill); the size is bytes.
grammar!(
    oomd_used,
    r"(?:Killed|Marked) (?P<cg>/\S+) (?:for killing )?due to memory used \((?P<used>\d+)\)(?: / total \((?P<total>\d+)\))?"
);
// Its kill after the candidate list: "Considered N cgroups for killing, top candidates were:" …
// "Killed <cgroup>" (systemd 253+); the kill line alone says nothing of memory.
grammar!(oomd_considered, r"Considered \d+ cgroups for killing, top candidates were:");
grammar!(oomd_killed_line, r"systemd-oomd\[\d+\]: Killed (?P<cg>/\S+)");
// The first candidate of the list: its path and its memory or swap usage (format_bytes: "43.3G").
// Journal lines of one length may reach here joined (a terminal wrap is assumed), so no line
// structure is required, and the path is taken only where its line ends after it.
grammar!(
    oomd_candidate,
    r"Path: (?P<cg>/\S+)(?P<eol>\n)?[\s\S]{0,400}?(?:(?P<mem>Current Memory Usage)|(?P<swap>Swap Usage)): (?P<v>\d+(?:\.\d+)?[KMGTPE]?)"
);
grammar!(oomd_failed, r"Failed to kill any cgroups (?:under \S+ )?based on (?P<what>swap|pressure)(?:: [^\n]{1,80})?");
// The raylet's advice that closes each of its memory-monitor kill messages, the task's error and
// the raylet's summary alike ("Refer to the documentation on how to address the out of memory
// issue: https://docs.ray.io/…/ray-oom-prevention.html. Consider provisioning more memory …
// `RAY_memory_usage_threshold` …"; printed from the raylet's node_manager.cc, Ray 2.2+, as in
// ray-oom-prevention.rst and public pastes). It stands alone where the kill lines were cut.
grammar!(ray_advice, r"Refer to the documentation on how to address the out of memory issue\b");
grammar!(ray_raylet, r"(?P<n>\d+) Workers \(tasks / actors\) killed due to memory pressure \(OOM\)");
// The scheduler's verdict when every worker that ran a task died: why they died is in the
// workers' own lines, so it is read as a memory kill only beside them.
grammar!(dask_killed_worker, r"KilledWorker: Attempted to run task [^\n]{1,300}? on (?P<n>\d+) different workers, but all those workers died while running it\.?");
grammar!(dask_memory_evidence, r"Worker memory limit|exceeded \d+% memory budget|Unmanaged memory use is high|Memory use is high but worker has no data");
// The nanny restarts the worker on this line's threshold; "Restarting" may be cut or wrapped away.
grammar!(dask, r"Worker (?:[\w:/.\-]+ \(pid=\d+\) )?exceeded (?P<pct>\d+)% memory budget\.(?:\s*Restarting\.*)?");
grammar!(
    slurm_limit,
    r"(?:(?:Job|Step) [\d.]+(?:\.\w+)?|(?P<stepid>StepId=)\d+(?:\.\w+)*) exceeded memory limit \((?P<used>\d+) > (?P<lim>\d+)\), being killed|Exceeded (?:job|step) memory limit|Some of the step tasks have been OOM Killed"
);
grammar!(
    oomd,
    r"Killed (?P<cg>/\S+) due to memory pressure for (?P<parent>/[^\s>]+)(?: being (?P<p>[\d.]+)% > (?P<lim>[\d.]+)% for > (?P<dur>\d+\w*)\b(?: with reclaim activity)?| be>)?"
);
// The decision before the kill, and systemd's note on the unit it killed.
grammar!(oomd_pressure, r"Memory pressure for (?P<cg>/\S+) is (?P<p>[\d.]+)% > (?P<lim>[\d.]+)% for > (?P<dur>\w+) with reclaim activity(?:[\s\S]{0,300}?oomd attempting to kill \d+ with KILL)?");
grammar!(oomd_unit, r"(?P<unit>[\w@.\-]+): systemd-oomd killed (?P<n>\d+) process\(es\) in this unit\.?");
grammar!(colab, r"[Yy]our session crashed after using all available RAM\.?|Your notebook tried to allocate more memory than is available\.(?: It has restarted\.?)?");
grammar!(kernel_died, r"(?:Kernel Restarting\s+)?The kernel (?:for [^\n]{1,200} )?appears to have died\.(?: It will restart automatically\.?)?|KernelRestarter: restarting kernel \(\d+/\d+\)(?:, (?:keep|new) random ports)?");

/// What Ray's kill message says of the node (`Memory on the node (…) … was U / T (F), which
/// exceeds the memory usage threshold of X`), read from [`ray_task`] or [`ray_node_detail`].
fn ray_node_memory(h: &mut Hit, c: &regex::Captures) {
    h.cap_size(SizeKey::Used, c, "used").cap_size(SizeKey::Total, c, "total");
    if let Some(v) = c.name("task") {
        h.detail("task_memory_used", v.as_str());
    }
    if let Some(v) = c.name("thr").and_then(|v| v.as_str().parse::<f64>().ok()) {
        h.detail("usage_threshold", v);
    }
}

fn host(id: &'static str, start: usize, end: usize) -> Hit {
    Hit::new(id, start, end).on(Platform::Cpu).during(Phase::Runtime).in_space("host").ranked(18)
}

/// A Kubernetes quantity in bytes: plain, or with a binary (Ki, Mi, Gi, Ti) or decimal (k, M, G) suffix.
pub(crate) fn k8s_bytes(q: &str) -> Option<u64> {
    let i = q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len());
    let n: u64 = q[..i].parse().ok()?;
    let mult: u64 = match &q[i..] {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "memory limits") {
        for c in yarn().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.yarn-memory-limit", m.start(), m.end());
            h.cap_size(SizeKey::Used, &c, "used").cap_size(SizeKey::Limit, &c, "lim");
            h.detail("memory_kind", &c["kind"]);
            hits.push(h);
        }
    }
    if has(t, "low on resource: memory") {
        for c in k8s_evicted().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.k8s-eviction", m.start(), m.end());
            if let Some(u) = c.name("used") {
                if let Some(b) = k8s_bytes(u.as_str()) {
                    h.bytes(SizeKey::Used, b, u.as_str().to_string());
                }
            }
            if let Some(r) = c.name("req").or(c.name("req2")) {
                h.detail("memory_request", r.as_str());
                h.detail("memory_request_bytes", k8s_bytes(r.as_str()));
            }
            if let Some(c) = c.name("c") {
                h.culprit.op = Some(format!("container {}", c.as_str()));
            }
            for (g, k) in [("thr", "eviction_threshold"), ("avail", "node_available")] {
                if let Some(v) = c.name(g) {
                    h.detail(k, v.as_str());
                }
            }
            // Every container the message names, each with its usage and request, up to the message's end.
            let mut containers = Vec::new();
            let mut end = m.end();
            let mut at = m.start();
            while let Some(k) = k8s_container().captures_at(t, at) {
                let km = k.get(0).unwrap();
                // Only the same message: the first container is the one the eviction line read; after it,
                // what stands between is white space (a fold, a wrap) and the sentence's full stop.
                let joined = if containers.is_empty() { km.start() < m.end() } else { t[end..km.start()].trim().trim_start_matches('.').trim().is_empty() };
                if !joined {
                    break;
                }
                let used = &k["used"];
                let req = k.name("req").or(k.name("req2")).map_or("", |r| r.as_str());
                containers.push(serde_json::json!({"container": &k["c"], "used": used, "used_bytes": k8s_bytes(used), "request": req, "request_bytes": k8s_bytes(req)}));
                end = km.end();
                at = km.end();
            }
            if containers.len() > 1 {
                h.detail("containers", serde_json::Value::Array(containers));
                h.end = h.end.max(end);
            }
            hits.push(h);
        }
    }
    if has(t, "running low on memory") {
        for c in ray_task().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            ray_node_memory(&mut h, &c);
            hits.push(h);
        }
    }
    if has(t, "exceeds the memory usage threshold") {
        for c in ray_node_detail().captures_iter(t) {
            let m = c.get(0).unwrap();
            if hits.iter().any(|h| h.id == "cluster.ray-memory-monitor" && h.start < m.end() && m.start() < h.end) {
                continue;
            }
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            ray_node_memory(&mut h, &c);
            hits.push(h);
        }
    }
    if has(t, "RayOutOfMemoryError") || has(t, "exceptions.OutOfMemoryError") {
        for m in ray_oom_class().find_iter(t) {
            // The class heads the monitor's own message where that was read ("…OutOfMemoryError: Task was killed …").
            if hits.iter().any(|h| h.id == "cluster.ray-memory-monitor" && h.start < m.end() + 200 && m.start() < h.end) {
                continue;
            }
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            h.detail("exception", m.as_str());
            h.priority = 30;
            hits.push(h);
        }
    }
    if has(t, "System memory low at node") {
        for c in ray_system_low().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            h.cap_size(SizeKey::Used, &c, "used").cap_size(SizeKey::Total, &c, "total");
            h.detail("usage_threshold", c["thr"].parse::<f64>().ok());
            hits.push(h);
        }
    }
    if has(t, "condition: [") {
        for c in k8s_condition().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.k8s-eviction", m.start(), m.end());
            h.detail("node_condition", &c["conds"]);
            hits.push(h);
        }
    }
    if has(t, "RayOutOfMemoryError") {
        for c in ray_legacy().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            for (g, k) in [("used", SizeKey::Used), ("total", SizeKey::Total)] {
                // Printed as "GB", computed as bytes / 1024**3.
                h.size(k, &format!("{} GiB", &c[g]));
            }
            h.detail("usage_threshold", c["pct"].parse::<u64>().ok().map(|p| p as f64 / 100.0));
            hits.push(h);
        }
    }
    if has(t, "oomd") {
        for c in oomd_pressure().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "systemd-oomd").detail("memory_pressure", format!("{}% > {}% for > {}", &c["p"], &c["lim"], &c["dur"]));
            h.culprit.op = Some(c["cg"].to_string());
            hits.push(h);
        }
        for c in oomd_unit().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "systemd-oomd").detail("processes_killed", c["n"].parse::<u64>().ok());
            h.culprit.op = Some(c["unit"].to_string());
            h.priority = 25;
            hits.push(h);
        }
    }
    if has(t, "due to memory used") {
        for c in oomd_used().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "systemd-oomd");
            for (g, k) in [("used", SizeKey::Used), ("total", SizeKey::Total)] {
                if let Some(v) = c.name(g).and_then(|v| v.as_str().parse::<u64>().ok()) {
                    h.bytes(k, v, v.to_string());
                }
            }
            h.culprit.op = Some(c["cg"].to_string());
            hits.push(h);
        }
    }
    if has(t, "cgroups for killing") || has(t, "Failed to kill any cgroups") {
        oomd_candidates(t, hits);
    }
    if has(t, "cgroups for killing") {
        if let Some(first) = oomd_considered().find(t) {
            for c in oomd_killed_line().captures_iter(&t[first.end()..]) {
                let m = c.get(0).unwrap();
                let (s, e) = (first.end() + m.start(), first.end() + m.end());
                let mut h = host("host.oom-killer", s, e);
                h.detail("killer", "systemd-oomd");
                h.culprit.op = Some(c["cg"].to_string());
                h.priority = 25;
                hits.push(h);
            }
        }
    }
    if has(t, "due to memory pressure") {
        for c in ray_raylet().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            h.detail("workers_killed", c["n"].parse::<u64>().ok());
            hits.push(h);
        }
        for c in oomd().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "systemd-oomd");
            if let (Some(p), Some(lim), Some(dur)) = (c.name("p"), c.name("lim"), c.name("dur")) {
                h.detail("memory_pressure", format!("{}% > {}% for > {}", p.as_str(), lim.as_str(), dur.as_str()));
            }
            h.culprit.op = Some(c["cg"].to_string());
            hits.push(h);
        }
    }
    if has(t, "how to address the out of memory issue") && !hits.iter().any(|h| h.id == "cluster.ray-memory-monitor") {
        if let Some(m) = ray_advice().find(t) {
            let mut h = host("cluster.ray-memory-monitor", m.start(), m.end());
            h.detail("note", "Ray's memory monitor killed a worker (its advice line; the kill line is not in the text)");
            h.priority = 30;
            hits.push(h);
        }
    }
    if has(t, "KilledWorker") && dask_memory_evidence().is_match(t) {
        for c in dask_killed_worker().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.dask-worker-memory", m.start(), m.end());
            h.detail("workers_died", c["n"].parse::<u64>().ok());
            h.likely("every worker that ran the task died; the workers' own lines beside it show their memory at its limit, and the nanny restarts a worker that passes it");
            h.priority = 30;
            hits.push(h);
        }
    }
    if has(t, "memory budget") {
        for c in dask().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = host("cluster.dask-worker-memory", m.start(), m.end());
            h.detail("budget_fraction", c["pct"].parse::<u64>().ok().map(|p| p as f64 / 100.0));
            hits.push(h);
        }
    }
    if has(t, "memory limit") || has(t, "OOM Killed") {
        for c in slurm_limit().captures_iter(t) {
            let m = c.get(0).unwrap();
            // "Exceeded step memory limit at some point." is slurmstepd's note on a step that
            // went on (memory may have been swapped out), not a kill.
            if t[m.end()..].starts_with(" at some point") {
                continue;
            }
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "slurm");
            // Bytes since 18.08 (always in the `StepId=` form of 20.11+), KiB before: a limit
            // of whole MiB and at least 1 GiB is bytes (see the module's notes).
            let lim = c.name("lim").and_then(|v| v.as_str().parse::<u64>().ok());
            let in_bytes = c.name("stepid").is_some() || lim.is_some_and(|l| l % (1 << 20) == 0 && l >= 1 << 30);
            for (g, k) in [("used", SizeKey::Used), ("lim", SizeKey::Limit)] {
                if let Some(v) = c.name(g).and_then(|v| v.as_str().parse::<u64>().ok()) {
                    if in_bytes {
                        h.bytes(k, v, format!("{v} bytes"));
                    } else {
                        h.bytes(k, v.saturating_mul(1024), format!("{v} KiB"));
                    }
                }
            }
            hits.push(h);
        }
    }
    if has(t, "using all available RAM") || has(t, "allocate more memory than is available") {
        for m in colab().find_iter(t) {
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", if m.as_str().starts_with("Your notebook") { "kaggle" } else { "colab" });
            hits.push(h);
        }
    }
    if has(t, "appears to have died") || has(t, "KernelRestarter") {
        for m in kernel_died().find_iter(t) {
            let mut h = host("host.oom-killer", m.start(), m.end());
            h.detail("killer", "jupyter");
            h.likely("a notebook kernel that dies without a traceback was most often killed for the memory it used; a crash in native code looks the same");
            h.priority = 45;
            hits.push(h);
        }
    }
}

/// systemd-oomd's candidate list (and its failed kill) where no kill line of its own was read.
fn oomd_candidates(t: &str, hits: &mut Vec<Hit>) {
    let considered = oomd_considered().find(t);
    let failed = oomd_failed().captures(t);
    let Some((start, end)) = considered.map(|m| (m.start(), m.end())).or_else(|| failed.as_ref().map(|c| (c.get(0).unwrap().start(), c.get(0).unwrap().end()))) else {
        return;
    };
    // A kill line after the list is its own finding (above, and the pressure and usage grammars).
    let killed = hits.iter().any(|h| h.id == "host.oom-killer" && h.start + 4000 > start && h.details.get("killer").is_some_and(|k| k == "systemd-oomd"));
    if killed || oomd_killed_line().is_match(&t[start..]) || oomd_used().is_match(&t[start..]) || oomd().is_match(&t[start..]) {
        return;
    }
    let mut h = host("host.oom-killer", start, end);
    h.detail("killer", "systemd-oomd");
    h.priority = 28;
    if let Some(c) = oomd_candidate().captures(super::window(t, end, 2000)) {
        if c.name("eol").is_some() {
            h.culprit.op = Some(c["cg"].to_string());
        }
        // format_bytes: "43.3G" is 43.3 GiB, a bare number is bytes.
        let text = c["v"].to_string();
        if c.name("mem").is_some() {
            h.size(SizeKey::Used, &text);
        } else if let Some(p) = oomdoc_units::parse_size(&text) {
            h.detail("swap_used_bytes", p.bytes).detail("swap_used", text.as_str());
        }
        h.end = h.end.max(end + c.get(0).unwrap().end());
    }
    if let Some(c) = failed.as_ref() {
        h.detail("kill_failed", c.get(0).unwrap().as_str());
        h.likely("systemd-oomd chose cgroups to kill for memory pressure or swap use, and says the kill failed");
    } else {
        h.likely("systemd-oomd lists kill candidates when a cgroup passed its memory-pressure or swap limit; the kill line itself is not in the text");
    }
    hits.push(h);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(t: &str) -> Hit {
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        assert_eq!(hits.len(), 1, "{t}");
        hits.remove(0)
    }

    #[test]
    fn eviction_reads_every_container_and_a_request_before_a_full_stop() {
        // nforgeio/neonKUBE#1897: the message folded by YAML (`message: >-`).
        let t = "  message: >-\n    The node was low on resource: memory. Container cstor-pool-mgmt was using\n    27484Ki, which exceeds its request of 0. Container maya-exporter was using\n    9736Ki, which exceeds its request of 0. Container cstor-pool was using\n    51480Ki, which exceeds its request of 0. \n  reason: Evicted\n";
        let h = one(t);
        assert_eq!(h.get(SizeKey::Used), Some(27484 << 10));
        assert_eq!(h.details["memory_request"], "0");
        assert_eq!(h.details["memory_request_bytes"], 0);
        let cs = h.details["containers"].as_array().expect("containers");
        let used: Vec<u64> = cs.iter().map(|c| c["used_bytes"].as_u64().unwrap()).collect();
        assert_eq!(used, vec![27484 << 10, 9736 << 10, 51480 << 10]);
        assert_eq!(cs[2]["container"], "cstor-pool");
        // A fractional quantity keeps its fraction.
        let h = one("The node was low on resource: memory. Container a was using 1.5Gi, request is 512Mi, has larger consumption of memory.");
        assert_eq!(h.details["memory_request_bytes"], 512u64 << 20);
    }

    #[test]
    fn systemd_oomd_line_cut_before_its_tail() {
        // zenn.dev/ykesamaru (journal line cut at "with rec"); the defining part is the kill for pressure.
        let t = "1217 10:04:41 user systemd-oomd[588]: Killed /user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice/vte-spawn-f6518140-41fe-4a13-b828-55c5b8738fb8.scope due to memory pressure for /user.slice/user-1000.slice/user@1000.service being 57.97% > 50.00% for > 20s with rec\n";
        let h = one(t);
        assert_eq!(h.id, "host.oom-killer");
        assert_eq!(h.details["memory_pressure"], "57.97% > 50.00% for > 20s");
        let h = one("systemd-oomd[1]: Killed /a.scope due to memory pressure for /user.slice being 5");
        assert_eq!(h.details["killer"], "systemd-oomd");
    }

    #[test]
    fn kubernetes_quantities() {
        assert_eq!(k8s_bytes("30332Ki"), Some(30332 << 10));
        assert_eq!(k8s_bytes("12Gi"), Some(12 << 30));
        assert_eq!(k8s_bytes("0"), Some(0));
        assert_eq!(k8s_bytes("12x"), None);
    }
}
