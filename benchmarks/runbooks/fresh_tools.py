"""Simulated operations tools for the runbook benchmark's fresh runbooks (`fresh/*.md`).

The same pattern as `tools.py` and `heldout_tools.py`, in the same world: every tool is async
and waits its seeded latency through the shared `WORLD` (reads 0.2–0.7 s, actions 0.6–1.5 s),
answers from a fixed table of facts per queue, cloud account, feature flag, load-balancer
target, instance or user, and tools that change the world are `side_effects=True` and record
what they did with `WORLD.act`.  Importing this module adds its facts to `tools.FACTS` (so
`WORLD.reset()` keeps them), its latencies to `tools.LATENCY` and its tools to `tools.TOOLS`
(so `tools_named` finds them); `benchmarks.runbooks` imports it whenever the catalog is loaded.
The fresh runbooks were written after the held-out ones, by someone who never saw the compile
prompts, and nothing is tuned on them.
"""

from __future__ import annotations

from typing import Any

from planweave.tools import Tool, tool

from . import tools as _ops
from .tools import WORLD

__all__ = ["FRESH_FACTS", "FRESH_LATENCY", "FRESH_TOOLS"]

# The facts the fresh runbooks' parameter sets read, two of each kind, so that across the two
# parameter sets of a runbook each side of its branch is taken once.
FRESH_FACTS: dict[str, dict[str, Any]] = {
    # queues (dead-letter backlog)
    "payment-callbacks": {"dlq": 3_412, "oldest_min": 95, "owner": "payments",
                          "top_error": {"error": "HTTP 503 from ledger-api", "count": 3_390,
                                        "retryable": True},
                          "left_after_redrive": 18},
    "email-outbound": {"dlq": 781, "oldest_min": 2_880, "owner": "comms",
                       "top_error": {"error": "ValidationError: to is not a valid address",
                                     "count": 779, "retryable": False},
                       "left_after_redrive": 781},
    # cloud accounts (budget alert)
    "ml-research": {"spent_usd": 41_870.0, "budget_usd": 40_000.0, "forecast_pct": 148.0,
                    "top": {"resource_id": "i-0a7f3c9e21b4d5f60", "service": "EC2 p4d.24xlarge",
                            "env": "sandbox", "daily_usd": 786.4}},
    "retail-core": {"spent_usd": 61_200.0, "budget_usd": 75_000.0, "forecast_pct": 112.0,
                    "top": {"resource_id": "db-retail-orders-2", "service": "RDS db.r6g.8xlarge",
                            "env": "production", "daily_usd": 301.9}},
    # feature flags, as project/flag (stale flag)
    "checkout/new-tax-engine": {"enabled": True, "rollout_pct": 100, "days_unchanged": 143,
                                "owner": "checkout", "refs": 7, "stale": False},
    "search/semantic-ranking": {"enabled": True, "rollout_pct": 35, "days_unchanged": 97,
                                "owner": "search-relevance", "refs": 12, "stale": False},
    # load-balancer targets, as target group/instance, and instances (unhealthy target)
    "web-public/i-0b5e7a19c3d2f8e41": {"state": "unhealthy", "reason": "Target.Timeout",
                                       "unhealthy_min": 14, "registered": True},
    "api-internal/i-07d3c2b8a6e1f0954": {"state": "unhealthy",
                                         "reason": "Target.ResponseCodeMismatch",
                                         "unhealthy_min": 6, "registered": True},
    "i-0b5e7a19c3d2f8e41": {"system": "impaired", "instance": "impaired", "running": True},
    "i-07d3c2b8a6e1f0954": {"system": "ok", "instance": "ok", "running": True},
    # users (locked account)
    "dchen": {"locked": True, "mfa": ["totp"], "last_login": "2 days ago",
              "failed": {"attempts": 3, "distinct_ips": 1}},
    "rkapoor": {"locked": True, "mfa": ["webauthn", "totp"], "last_login": "6 hours ago",
                "failed": {"attempts": 214, "distinct_ips": 37}},
}  # fmt: skip

# Base latency per tool, seconds: reads are fast, actions slow.
FRESH_LATENCY: dict[str, float] = {
    "dlq_stats": 0.3, "dlq_top_error": 0.6, "redrive_dlq": 1.4, "budget_status": 0.5,
    "top_cost_driver": 0.7, "stop_resource": 1.1, "get_flag": 0.2, "flag_code_refs": 0.6,
    "mark_flag_stale": 0.6, "target_health": 0.3, "instance_status_checks": 0.4,
    "deregister_target": 0.9, "terminate_instance": 1.3, "restart_unit": 1.2, "idp_user": 0.3,
    "failed_signins": 0.5, "unlock_user": 0.7, "reset_mfa": 0.8,
}  # fmt: skip

_ops.add_facts("fresh", FRESH_FACTS, FRESH_LATENCY)


# --- reads ------------------------------------------------------------------------------------


@tool
async def dlq_stats(queue: str) -> dict[str, Any]:
    """Stats of a queue's dead-letter queue: messages (how many are parked there),
    oldest_age_minutes and owner (the team that owns the queue)."""
    await WORLD.wait("dlq_stats", queue)
    f = WORLD.of(queue)
    return {
        "queue": queue,
        "messages": f["dlq"],
        "oldest_age_minutes": f["oldest_min"],
        "owner": f["owner"],
    }


@tool
async def dlq_top_error(queue: str) -> dict[str, Any]:
    """Sample the dead-lettered messages of a queue and return the most common failure:
    error (message), count (messages with it) and retryable (bool, set by the consumer)."""
    await WORLD.wait("dlq_top_error", queue)
    return dict(WORLD.of(queue)["top_error"])


@tool
async def budget_status(account: str) -> dict[str, Any]:
    """Month-to-date spend of a cloud account against its monthly budget.

    Returns:
        spent_usd, budget_usd, forecast_pct (projected month-end spend, % of budget).
    """
    await WORLD.wait("budget_status", account)
    f = WORLD.of(account)
    return {
        "account": account,
        "spent_usd": f["spent_usd"],
        "budget_usd": f["budget_usd"],
        "forecast_pct": f["forecast_pct"],
    }


@tool
async def top_cost_driver(account: str) -> dict[str, Any]:
    """The resource costing the most in an account over the last 7 days, as resource_id,
    service, env (its env tag) and daily_usd."""
    await WORLD.wait("top_cost_driver", account)
    return dict(WORLD.of(account)["top"])


@tool
async def get_flag(project: str, flag_key: str) -> dict[str, Any]:
    """Look up a feature flag in the flag service.

    Returns:
        key, enabled, rollout_pct (0-100), days_since_change, owner (owning team), stale.
    """
    await WORLD.wait("get_flag", f"{project}/{flag_key}")
    f = WORLD.of(f"{project}/{flag_key}")
    return {
        "key": flag_key,
        "enabled": f["enabled"],
        "rollout_pct": f["rollout_pct"],
        "days_since_change": f["days_unchanged"],
        "owner": f["owner"],
        "stale": f["stale"],
    }


@tool
async def flag_code_refs(project: str, flag_key: str) -> int:
    """Number of code references to a flag key across a project's repositories."""
    await WORLD.wait("flag_code_refs", f"{project}/{flag_key}")
    return int(WORLD.of(f"{project}/{flag_key}")["refs"])


@tool
async def target_health(target_group: str, instance_id: str) -> dict[str, Any]:
    """Health of one target in a load-balancer target group.

    Returns:
        state ("healthy", "unhealthy", "draining", "unused"), reason (ELB reason code),
        unhealthy_minutes.
    """
    await WORLD.wait("target_health", f"{target_group}/{instance_id}")
    f = WORLD.of(f"{target_group}/{instance_id}")
    return {
        "instance_id": instance_id,
        "state": f["state"],
        "reason": f["reason"],
        "unhealthy_minutes": f["unhealthy_min"],
    }


@tool
async def instance_status_checks(instance_id: str) -> dict[str, str]:
    """EC2 status checks of an instance: system_status (the host) and instance_status (the
    guest OS), each "ok", "impaired" or "initializing"."""
    await WORLD.wait("instance_status_checks", instance_id)
    f = WORLD.of(instance_id)
    return {"system_status": f["system"], "instance_status": f["instance"]}


@tool
async def idp_user(username: str) -> dict[str, Any]:
    """A user's record in the identity provider: locked, mfa_factors, last_login."""
    await WORLD.wait("idp_user", username)
    f = WORLD.of(username)
    return {
        "username": username,
        "locked": f["locked"],
        "mfa_factors": list(f["mfa"]),
        "last_login": f["last_login"],
    }


@tool
async def failed_signins(username: str, hours: int = 1) -> dict[str, int]:
    """Failed sign-in attempts for a user over the last `hours` hours: attempts and
    distinct_ips."""
    await WORLD.wait("failed_signins", username)
    return dict(WORLD.of(username)["failed"])


# --- actions ----------------------------------------------------------------------------------


@tool(side_effects=True)
async def redrive_dlq(queue: str) -> int:
    """Move all messages from a queue's DLQ back onto the queue. Returns how many were moved."""
    await WORLD.wait("redrive_dlq", queue)
    f = WORLD.of(queue)
    WORLD.act(f"redrive_dlq {queue}")
    moved = f["dlq"]
    f.update(dlq=f["left_after_redrive"], oldest_min=3)
    return int(moved)


@tool(side_effects=True)
async def stop_resource(account: str, resource_id: str) -> str:
    """Stop (not delete) a compute or database resource in a cloud account."""
    await WORLD.wait("stop_resource", f"{account}/{resource_id}")
    f = WORLD.of(account)
    if f["top"]["resource_id"] != resource_id:
        raise ValueError(f"no resource {resource_id!r} in account {account!r}")
    WORLD.act(f"stop_resource {account} {resource_id}")
    f["top"] = {**f["top"], "daily_usd": 0.0}
    return f"stopping {resource_id}"


@tool(side_effects=True)
async def mark_flag_stale(project: str, flag_key: str) -> str:
    """Mark a feature flag as stale in the flag service (it keeps serving as it is)."""
    await WORLD.wait("mark_flag_stale", f"{project}/{flag_key}")
    f = WORLD.of(f"{project}/{flag_key}")
    WORLD.act(f"mark_flag_stale {project}/{flag_key}")
    f["stale"] = True
    return f"{flag_key} marked stale"


@tool(side_effects=True)
async def deregister_target(target_group: str, instance_id: str) -> str:
    """Deregister an instance from a load-balancer target group (connections drain first)."""
    await WORLD.wait("deregister_target", f"{target_group}/{instance_id}")
    f = WORLD.of(f"{target_group}/{instance_id}")
    WORLD.act(f"deregister_target {target_group} {instance_id}")
    f.update(state="unused", registered=False)
    return f"deregistered {instance_id} from {target_group}"


@tool(side_effects=True)
async def terminate_instance(instance_id: str) -> str:
    """Terminate an EC2 instance. If it belongs to an autoscaling group, a replacement is
    launched."""
    await WORLD.wait("terminate_instance", instance_id)
    f = WORLD.of(instance_id)
    WORLD.act(f"terminate_instance {instance_id}")
    f["running"] = False
    return f"terminating {instance_id}"


@tool(side_effects=True)
async def restart_unit(instance_id: str, unit: str) -> str:
    """Restart a systemd unit (e.g. "web") on an instance, over SSM."""
    await WORLD.wait("restart_unit", f"{instance_id}/{unit}")
    WORLD.of(instance_id)
    WORLD.act(f"restart_unit {instance_id} {unit}")
    return f"{unit} restarted on {instance_id}"


@tool(side_effects=True)
async def unlock_user(username: str) -> str:
    """Unlock a locked user account in the identity provider."""
    await WORLD.wait("unlock_user", username)
    f = WORLD.of(username)
    WORLD.act(f"unlock_user {username}")
    f["locked"] = False
    return f"{username} unlocked"


@tool(side_effects=True)
async def reset_mfa(username: str) -> str:
    """Remove all of a user's MFA factors; they must enroll again at their next sign-in."""
    await WORLD.wait("reset_mfa", username)
    f = WORLD.of(username)
    WORLD.act(f"reset_mfa {username}")
    f["mfa"] = []
    return f"MFA reset for {username}"


FRESH_TOOLS: dict[str, Tool] = _ops.add_tools("fresh", globals())
