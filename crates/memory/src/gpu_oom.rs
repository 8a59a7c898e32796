pub struct GpuOomReport; pub struct GpuPeakBuffer; pub fn parse_buffer_assignment_oom_report(_t: &str) -> Option<GpuOomReport> { None }
