"""The benchmark's tools as a module-level registry, for `planweave serve --tools
benchmarks.replica_tools:TOOLS` in a replica process (`benchmarks.replicas`).  The latency
profile is `BENCH_TOOL_PROFILE` (default `web`)."""

from __future__ import annotations

import os

from .workloads import bench_tools

TOOLS = bench_tools(os.environ.get("BENCH_TOOL_PROFILE", "web"))
