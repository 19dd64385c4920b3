//! The embedded target server: the studies' workloads and faults, for demo, tests, benchmarks.
