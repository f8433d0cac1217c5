"""Simulated operations tools for the runbook benchmark's second fresh part (`fresh2/*.md`).

The same pattern as `tools.py`, `heldout_tools.py` and `fresh_tools.py`, in the same world:
every tool is async and waits its seeded latency through the shared `WORLD` (reads 0.2–0.7 s,
actions 0.6–1.5 s), answers from a fixed table of facts per CI runner and job, batch host and
cron job, alert, customer and privacy request, or Kubernetes workload, and tools that change
the world are `side_effects=True` and record what they did with `WORLD.act`.  Importing this
module adds its facts to `tools.FACTS` (so `WORLD.reset()` keeps them), its latencies to
`tools.LATENCY` and its tools to `tools.TOOLS` (so `tools_named` finds them);
`benchmarks.runbooks` imports it whenever the catalog is loaded.  The fresh2 runbooks were
written after the fresh ones, by someone who never saw the compile prompts or the compiler,
and nothing is tuned on them.
"""

from __future__ import annotations

from typing import Any, TypedDict

from planweave.tools import Tool, tool

from . import tools as _ops
from .tools import WORLD

__all__ = ["FRESH2_FACTS", "FRESH2_LATENCY", "FRESH2_TOOLS"]

# The facts the fresh2 runbooks' parameter sets read, two of each kind, so that across the two
# parameter sets of a runbook each side of its branch is taken once.
FRESH2_FACTS: dict[str, dict[str, Any]] = {
    # CI runners and their jobs (stuck runner)
    "gha-linux-07": {"state": "busy", "job_id": 88123, "job_minutes": 214,
                     "labels": ["linux", "x64", "large"], "queued": 37},
    "gha-arm-02": {"state": "busy", "job_id": 88391, "job_minutes": 18,
                   "labels": ["linux", "arm64"], "queued": 12},
    "ci-job-88123": {"runner": "gha-linux-07", "pipeline": "android-release", "state": "running"},
    "ci-job-88391": {"runner": "gha-arm-02", "pipeline": "edge-proxy-build", "state": "running"},
    # batch hosts and their cron jobs, as host/job (missed cron run)
    "batch-2": {"crond": "inactive"},
    "etl-1": {"crond": "active"},
    "batch-2/invoice-reminders": {"started_at": "2026-12-04T02:00:00Z", "hours_ago": 31,
                                  "exit_code": 0, "owner": "billing"},
    "etl-1/ledger-export": {"started_at": "2026-12-03T05:15:00Z", "hours_ago": 52,
                            "exit_code": 2, "owner": "finance-data"},
    # alerts (noisy alert review)
    "orders-api-gc-pause": {"fires": 142, "acked_pct": 6, "median_open_min": 4,
                            "expr": "jvm_gc_pause_seconds:p99{app=\"orders-api\"} > 0.2",
                            "threshold": 0.2, "for_min": 1, "owner": "orders",
                            "silenced_days": 0},
    "ceph-osd-latency-p99": {"fires": 14, "acked_pct": 86, "median_open_min": 22,
                             "expr": "ceph_osd_apply_latency_ms:p99 > 250",
                             "threshold": 250.0, "for_min": 10, "owner": "storage",
                             "silenced_days": 0},
    # customers and privacy requests (data export)
    "cus_8842": {"verified": True, "email": "m.okafor@example.net", "region": "eu-west",
                 "total_gb": 3.4, "systems": ["orders-db", "support-desk", "clickstream"],
                 "export_id": "exp_5c19", "export": None},
    "cus_2207": {"verified": False, "email": "j.lindqvist@example.org", "region": "eu-north",
                 "total_gb": 0.8, "systems": ["orders-db", "newsletter"],
                 "export_id": "exp_7a02", "export": None},
    "PRIV-1931": {"customer": "cus_8842", "replies": [], "registered": False},
    "PRIV-1944": {"customer": "cus_2207", "replies": [], "registered": False},
    # Kubernetes workloads, as namespace/workload (CrashLoopBackOff)
    "media/thumbnailer": {"restarts": 47, "exit_code": 137, "reason": "OOMKilled",
                          "memory_limit": "512Mi",
                          "logs": "resizing upload IMG_0231.HEIC (48 MP, 9 frames)...\n"
                                  "allocating 1.1 GiB decode buffer"},
    "pricing/quote-engine": {"restarts": 112, "exit_code": 1, "reason": "Error",
                             "memory_limit": "1Gi",
                             "logs": "loading config from env\n"
                                     "panic: PRICING_DB_URL is not set"},
}  # fmt: skip

# Base latency per tool, seconds: reads are fast, actions slow.
FRESH2_LATENCY: dict[str, float] = {
    "ci_runner_status": 0.3, "ci_queued_jobs": 0.4, "cancel_ci_job": 0.7,
    "restart_runner_agent": 1.2, "last_cron_run": 0.4, "crond_state": 0.3, "start_crond": 0.9,
    "run_cron_job_now": 1.1, "alert_fire_history": 0.6, "alert_rule": 0.2,
    "create_silence": 0.6, "customer_profile": 0.3, "customer_data_footprint": 0.7,
    "start_dsar_export": 1.4, "email_export_link": 0.8, "reply_to_request": 0.6,
    "register_privacy_request": 0.7, "workload_restarts": 0.4, "previous_container_logs": 0.5,
    "set_memory_limit": 1.0, "rollout_restart": 1.5,
}  # fmt: skip

_ops.add_facts("fresh2", FRESH2_FACTS, FRESH2_LATENCY)


class RunnerStatus(TypedDict):
    """A CI runner as the runner fleet API reports it."""

    runner: str
    state: str  # "idle", "busy" or "offline"
    job_id: int  # the job it is running (0 when idle)
    job_minutes: int  # minutes it has spent on that job
    labels: list[str]


# --- reads ------------------------------------------------------------------------------------


@tool
async def ci_runner_status(runner_name: str) -> RunnerStatus:
    """Status of a self-hosted CI runner from the runner fleet API: state, job_id of the job it
    is running, job_minutes spent on it, and its labels."""
    await WORLD.wait("ci_runner_status", runner_name)
    f = WORLD.of(runner_name)
    return RunnerStatus(
        runner=runner_name,
        state=f["state"],
        job_id=f["job_id"],
        job_minutes=f["job_minutes"],
        labels=list(f["labels"]),
    )


@tool
async def ci_queued_jobs(runner_name: str) -> int:
    """How many queued CI jobs are waiting for a runner with this runner's labels."""
    await WORLD.wait("ci_queued_jobs", runner_name)
    return int(WORLD.of(runner_name)["queued"])


@tool
async def last_cron_run(host: str, job_name: str) -> dict[str, Any]:
    """The last run of a crontab entry on a host, from the cron log and the dead-man's-switch
    monitor: started_at, hours_ago, exit_code, and owner (the team named in the crontab
    comment)."""
    await WORLD.wait("last_cron_run", f"{host}/{job_name}")
    f = WORLD.of(f"{host}/{job_name}")
    return {
        "job": job_name,
        "started_at": f["started_at"],
        "hours_ago": f["hours_ago"],
        "exit_code": f["exit_code"],
        "owner": f["owner"],
    }


@tool
async def crond_state(host: str) -> str:
    """systemd state of the cron daemon on a host: "active", "inactive" or "failed"."""
    await WORLD.wait("crond_state", host)
    return str(WORLD.of(host)["crond"])


@tool
async def alert_fire_history(alert_name: str, days: int = 7) -> dict[str, Any]:
    """Firing history of an alert over the last `days` days from the paging system: fires
    (times it fired), acked_pct (share of its pages acknowledged, percent) and
    median_open_minutes."""
    await WORLD.wait("alert_fire_history", alert_name)
    f = WORLD.of(alert_name)
    return {
        "alert": alert_name,
        "fires": f["fires"],
        "acked_pct": f["acked_pct"],
        "median_open_minutes": f["median_open_min"],
    }


@tool
async def alert_rule(alert_name: str) -> dict[str, Any]:
    """An alert's rule definition: expr (the query), threshold, for_minutes and owner (the team
    that owns the rule)."""
    await WORLD.wait("alert_rule", alert_name)
    f = WORLD.of(alert_name)
    return {
        "expr": f["expr"],
        "threshold": f["threshold"],
        "for_minutes": f["for_min"],
        "owner": f["owner"],
    }


@tool
async def customer_profile(customer_id: str) -> dict[str, Any]:
    """A customer's account in the customer data platform: identity_verified (bool), email on
    file, region and status."""
    await WORLD.wait("customer_profile", customer_id)
    f = WORLD.of(customer_id)
    return {
        "customer_id": customer_id,
        "identity_verified": f["verified"],
        "email": f["email"],
        "region": f["region"],
        "status": "active",
    }


@tool
async def customer_data_footprint(customer_id: str) -> dict[str, Any]:
    """The personal data held about a customer across all systems: total_gb and systems (the
    systems holding any)."""
    await WORLD.wait("customer_data_footprint", customer_id)
    f = WORLD.of(customer_id)
    return {"total_gb": f["total_gb"], "systems": list(f["systems"])}


@tool
async def workload_restarts(namespace: str, workload: str) -> dict[str, Any]:
    """Restart summary of a Kubernetes workload's pods.

    Returns:
        restarts (total over its pods), last_exit_code, last_reason (why the last container
        terminated: "OOMKilled", "Error", "Completed"...), memory_limit (e.g. "512Mi").
    """
    await WORLD.wait("workload_restarts", f"{namespace}/{workload}")
    f = WORLD.of(f"{namespace}/{workload}")
    return {
        "restarts": f["restarts"],
        "last_exit_code": f["exit_code"],
        "last_reason": f["reason"],
        "memory_limit": f["memory_limit"],
    }


@tool
async def previous_container_logs(namespace: str, workload: str, lines: int = 20) -> str:
    """The last `lines` log lines of the previous (terminated) container of a workload's most
    recently restarted pod."""
    await WORLD.wait("previous_container_logs", f"{namespace}/{workload}")
    logs = str(WORLD.of(f"{namespace}/{workload}")["logs"]).splitlines()
    return "\n".join(logs[-lines:])


# --- actions ----------------------------------------------------------------------------------


@tool(side_effects=True)
async def cancel_ci_job(job_id: int) -> str:
    """Cancel a running CI job by id (its runner is told to stop it)."""
    await WORLD.wait("cancel_ci_job", str(job_id))
    f = WORLD.of(f"ci-job-{job_id}")
    WORLD.act(f"cancel_ci_job {job_id}")
    f["state"] = "cancelled"
    return f"cancelled job {job_id} ({f['pipeline']})"


@tool(side_effects=True)
async def restart_runner_agent(runner_name: str) -> str:
    """Restart the runner agent service on a self-hosted CI runner; it registers again idle."""
    await WORLD.wait("restart_runner_agent", runner_name)
    f = WORLD.of(runner_name)
    WORLD.act(f"restart_runner_agent {runner_name}")
    f.update(state="idle", job_id=0, job_minutes=0)
    return f"{runner_name} agent restarted, idle"


@tool(side_effects=True)
async def start_crond(host: str) -> str:
    """Start (and unmask) the cron daemon on a host."""
    await WORLD.wait("start_crond", host)
    f = WORLD.of(host)
    WORLD.act(f"start_crond {host}")
    f["crond"] = "active"
    return f"crond active on {host}"


@tool(side_effects=True)
async def run_cron_job_now(host: str, job_name: str) -> str:
    """Run a crontab entry on a host now, outside its schedule, as its crontab user."""
    await WORLD.wait("run_cron_job_now", f"{host}/{job_name}")
    f = WORLD.of(f"{host}/{job_name}")
    WORLD.act(f"run_cron_job_now {host} {job_name}")
    f.update(hours_ago=0, started_at="now")
    return f"{job_name} started on {host}"


@tool(side_effects=True)
async def create_silence(alert_name: str, days: int) -> str:
    """Silence an alert in Alertmanager for `days` days. Returns the silence id."""
    await WORLD.wait("create_silence", alert_name)
    f = WORLD.of(alert_name)
    WORLD.act(f"create_silence {alert_name} {days}")
    f["silenced_days"] = days
    return f"silence-{alert_name}-{days}d"


@tool(side_effects=True)
async def start_dsar_export(customer_id: str) -> str:
    """Start a full data-subject-access export of a customer's personal data from every system.
    Returns the export id."""
    await WORLD.wait("start_dsar_export", customer_id)
    f = WORLD.of(customer_id)
    WORLD.act(f"start_dsar_export {customer_id}")
    f["export"] = f["export_id"]
    return str(f["export_id"])


@tool(side_effects=True)
async def email_export_link(customer_id: str, export_id: str) -> str:
    """Email the download link of a customer's data export to the address on file."""
    await WORLD.wait("email_export_link", customer_id)
    f = WORLD.of(customer_id)
    if f["export"] != export_id:
        raise ValueError(f"no export {export_id!r} for customer {customer_id!r}")
    WORLD.act(f"email_export_link {customer_id} {export_id}")
    return f"sent the link of {export_id} to {f['email']}"


@tool(side_effects=True)
async def reply_to_request(request_id: str, message: str) -> str:
    """Reply to the customer on a privacy request (e.g. "PRIV-1200") in the privacy desk."""
    await WORLD.wait("reply_to_request", request_id)
    f = WORLD.of(request_id)
    WORLD.act(f"reply_to_request {request_id}")
    f["replies"] = [*f["replies"], message]
    return f"replied on {request_id}"


@tool(side_effects=True)
async def register_privacy_request(request_id: str, customer_id: str, data_gb: float) -> str:
    """Record a privacy request in the privacy register (starts its 30-day clock)."""
    await WORLD.wait("register_privacy_request", request_id)
    f = WORLD.of(request_id)
    if f["customer"] != customer_id:
        raise ValueError(f"request {request_id!r} is not about customer {customer_id!r}")
    WORLD.act(f"register_privacy_request {request_id}")
    f["registered"] = True
    return f"{request_id} registered ({data_gb} GB)"


@tool(side_effects=True)
async def set_memory_limit(namespace: str, workload: str, limit: str) -> str:
    """Set the memory limit (and request) of a workload's containers, e.g. "2Gi"; the pods
    keep their old limit until they restart."""
    await WORLD.wait("set_memory_limit", f"{namespace}/{workload}")
    f = WORLD.of(f"{namespace}/{workload}")
    WORLD.act(f"set_memory_limit {namespace}/{workload} {limit}")
    f["memory_limit"] = limit
    return f"{workload} memory limit set to {limit}"


@tool(side_effects=True)
async def rollout_restart(namespace: str, workload: str) -> str:
    """Rolling restart of a workload's pods (kubectl rollout restart)."""
    await WORLD.wait("rollout_restart", f"{namespace}/{workload}")
    f = WORLD.of(f"{namespace}/{workload}")
    WORLD.act(f"rollout_restart {namespace}/{workload}")
    f["restarts"] = 0
    return f"restarted {namespace}/{workload}"


FRESH2_TOOLS: dict[str, Tool] = _ops.add_tools("fresh2", globals())
