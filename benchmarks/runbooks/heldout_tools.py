"""Simulated operations tools for the runbook benchmark's held-out runbooks (`heldout/*.md`).

The same pattern as `tools.py`, in the same world: every tool is async and waits its seeded
latency through the shared `WORLD` (reads 0.2–0.7 s, actions 0.6–1.5 s), answers from a fixed
table of facts per consumer group, topic, deployment, API key, service, database or bucket,
and tools that change the world are `side_effects=True` and record what they did with
`WORLD.act`.  Importing this module adds its facts to `tools.FACTS` (so `WORLD.reset()` keeps
them), its latencies to `tools.LATENCY` and its tools to `tools.TOOLS` (so `tools_named` finds
them); `benchmarks.runbooks` imports it whenever the catalog is loaded.
"""

from __future__ import annotations

from typing import Any

from planweave.tools import Tool, tool

from . import tools as _ops
from .tools import WORLD

__all__ = ["HELDOUT_FACTS", "HELDOUT_LATENCY", "HELDOUT_TOOLS"]

# The facts the held-out runbooks' parameter sets read, two of each kind, so that across the
# two parameter sets of a runbook each side of its branch is taken once.
HELDOUT_FACTS: dict[str, dict[str, Any]] = {
    # consumer groups and topics (consumer lag)
    "invoice-writer": {"lag": {"invoices": 48_210}, "running": False, "members": 0,
                       "state": "Empty"},
    "clickstream-etl": {"lag": {"page-views": 23_950}, "running": True, "members": 6,
                        "state": "Stable"},
    "invoices": {"rate": 140.0},
    "page-views": {"rate": 2_310.0},
    # deployments, as namespace/deployment (stuck rollout)
    "prod/checkout-web": {"ready": 2, "desired": 6, "revision": 41, "previous": 40,
                          "event": 'Failed to pull image "registry.internal/checkout-web:41": '
                                   "not found (x58)"},
    "payments/ledger-api": {"ready": 4, "desired": 4, "revision": 17, "previous": 16,
                            "event": "Readiness probe failed: HTTP 503 (x3)"},
    # API keys, as service/provider (key rotation)
    "payments/stripe": {"key_id": "sk_live_4f2a", "age_days": 23, "last_used": "2 minutes ago",
                        "leaked": True, "new_key": "sk_live_9d1e"},
    "mailer/sendgrid": {"key_id": "SG.91c0", "age_days": 64, "last_used": "11 minutes ago",
                        "leaked": False, "new_key": "SG.b7e3"},
    # connection pools (services) and databases (connection pool exhausted)
    "invoicing": {"in_use": 50, "max": 50, "waiting": 312},
    "profile-api": {"in_use": 40, "max": 40, "waiting": 87},
    "billing-db": {"longest": {"pid": 48113, "seconds": 1840,
                               "query": "SELECT * FROM invoice_lines WHERE customer_id = $1"}},
    "accounts-db": {"longest": {"pid": 9021, "seconds": 12,
                                "query": "UPDATE sessions SET seen_at = now() WHERE id = $1"}},
    # buckets (public bucket)
    "hr-exports": {"public": True, "owner": "people-ops", "classification": "confidential",
                   "anonymous_reads": 1_372},
    "press-kit": {"public": True, "owner": "marketing", "classification": "public",
                  "anonymous_reads": 5_208},
}  # fmt: skip

# Base latency per tool, seconds: reads are fast, actions slow.
HELDOUT_LATENCY: dict[str, float] = {
    "consumer_lag": 0.4, "consumer_group_state": 0.3, "topic_rate": 0.3,
    "restart_consumers": 1.3, "rollout_status": 0.4, "pod_events": 0.6, "undo_rollout": 1.5,
    "api_key_info": 0.3, "leak_scan": 0.7, "create_api_key": 0.8, "store_secret": 0.6,
    "revoke_api_key": 0.7, "pool_stats": 0.3, "longest_query": 0.5, "kill_query": 0.6,
    "bucket_access": 0.4, "bucket_classification": 0.2, "anonymous_reads": 0.7,
    "block_public_access": 1.1,
}  # fmt: skip

_ops.add_facts("held-out", HELDOUT_FACTS, HELDOUT_LATENCY)


# --- reads ------------------------------------------------------------------------------------


@tool
async def consumer_lag(group: str, topic: str) -> int:
    """How many messages a consumer group is behind on a topic, summed over its partitions."""
    await WORLD.wait("consumer_lag", f"{group}@{topic}")
    lags = WORLD.of(group)["lag"]
    if topic not in lags:
        raise ValueError(f"consumer group {group!r} does not read topic {topic!r}")
    return int(lags[topic])


@tool
async def consumer_group_state(group: str) -> dict[str, Any]:
    """A consumer group's state: running (true when its consumers are up), members (how many
    consumers) and state ("Stable", "Empty", ...)."""
    await WORLD.wait("consumer_group_state", group)
    f = WORLD.of(group)
    return {"group": group, "running": f["running"], "members": f["members"], "state": f["state"]}


@tool
async def topic_rate(topic: str) -> float:
    """The rate messages are produced to a topic, in messages per second."""
    await WORLD.wait("topic_rate", topic)
    return float(WORLD.of(topic)["rate"])


@tool
async def rollout_status(deployment: str, namespace: str) -> dict[str, Any]:
    """A Kubernetes deployment's rollout: ready (replicas ready), desired (replicas wanted) and
    revision (the revision being rolled out)."""
    await WORLD.wait("rollout_status", f"{namespace}/{deployment}")
    f = WORLD.of(f"{namespace}/{deployment}")
    return {
        "deployment": deployment,
        "ready": f["ready"],
        "desired": f["desired"],
        "revision": f["revision"],
    }


@tool
async def pod_events(deployment: str, namespace: str) -> str:
    """The most frequent warning event of a deployment's pods in the last 15 minutes."""
    await WORLD.wait("pod_events", f"{namespace}/{deployment}")
    return str(WORLD.of(f"{namespace}/{deployment}")["event"])


@tool
async def api_key_info(service: str, provider: str) -> dict[str, Any]:
    """The API key a service uses with a provider (such as "stripe"): key_id, age_days (days
    since it was created) and last_used."""
    await WORLD.wait("api_key_info", f"{service}/{provider}")
    f = WORLD.of(f"{service}/{provider}")
    return {"key_id": f["key_id"], "age_days": f["age_days"], "last_used": f["last_used"]}


@tool
async def leak_scan(service: str, provider: str) -> bool:
    """Ask the secret scanner about a service's API key for a provider: true when the key has
    been found leaked (in a public repository, paste or log)."""
    await WORLD.wait("leak_scan", f"{service}/{provider}")
    return bool(WORLD.of(f"{service}/{provider}")["leaked"])


@tool
async def pool_stats(service: str) -> dict[str, Any]:
    """A service's database connection pool: in_use (connections), max (the pool's size) and
    waiting (requests waiting for a connection)."""
    await WORLD.wait("pool_stats", service)
    f = WORLD.of(service)
    return {"service": service, "in_use": f["in_use"], "max": f["max"], "waiting": f["waiting"]}


@tool
async def longest_query(database: str) -> dict[str, Any]:
    """The longest-running query on a database: pid (its process id), seconds (how long it has
    been running) and query (its text)."""
    await WORLD.wait("longest_query", database)
    return dict(WORLD.of(database)["longest"])


@tool
async def bucket_access(bucket: str) -> dict[str, Any]:
    """An object-storage bucket's access settings: public (true when anyone may read it
    without credentials) and owner (the owning team)."""
    await WORLD.wait("bucket_access", bucket)
    f = WORLD.of(bucket)
    return {"bucket": bucket, "public": f["public"], "owner": f["owner"]}


@tool
async def bucket_classification(bucket: str) -> str:
    """The data classification of a bucket: "public", "internal" or "confidential"."""
    await WORLD.wait("bucket_classification", bucket)
    return str(WORLD.of(bucket)["classification"])


@tool
async def anonymous_reads(bucket: str) -> int:
    """How many objects of a bucket were read without credentials in the last 24 hours."""
    await WORLD.wait("anonymous_reads", bucket)
    return int(WORLD.of(bucket)["anonymous_reads"])


# --- actions ----------------------------------------------------------------------------------


@tool(side_effects=True)
async def restart_consumers(group: str) -> str:
    """Restart the consumers of a consumer group (they resume from the committed offsets)."""
    await WORLD.wait("restart_consumers", group)
    f = WORLD.of(group)
    WORLD.act(f"restart_consumers {group}")
    f.update(running=True, members=3, state="Stable")
    return f"restarted the consumers of {group}; 3 members running"


@tool(side_effects=True)
async def undo_rollout(deployment: str, namespace: str) -> str:
    """Roll a Kubernetes deployment back to its previous revision."""
    await WORLD.wait("undo_rollout", f"{namespace}/{deployment}")
    f = WORLD.of(f"{namespace}/{deployment}")
    WORLD.act(f"undo_rollout {namespace}/{deployment}")
    f.update(revision=f["previous"], ready=f["desired"])
    return f"rolled {deployment} in {namespace} back to revision {f['previous']}"


@tool(side_effects=True)
async def create_api_key(service: str, provider: str) -> str:
    """Create a new API key for a service with a provider; the old key stays valid until it is
    revoked.  Returns the new key's id."""
    await WORLD.wait("create_api_key", f"{service}/{provider}")
    f = WORLD.of(f"{service}/{provider}")
    WORLD.act(f"create_api_key {service} {provider}")
    f["created"] = f["new_key"]
    return str(f["new_key"])


@tool(side_effects=True)
async def store_secret(path: str, key_id: str) -> str:
    """Store an API key, by its key id, in the vault at a path such as "payments/stripe" (the
    service reads its key from there)."""
    await WORLD.wait("store_secret", path)
    WORLD.act(f"store_secret {path} {key_id}")
    return f"stored {key_id} in the vault at {path}"


@tool(side_effects=True)
async def revoke_api_key(service: str, provider: str, key_id: str) -> str:
    """Revoke one of a service's API keys with a provider, by its key id."""
    await WORLD.wait("revoke_api_key", f"{service}/{provider}")
    WORLD.of(f"{service}/{provider}")
    WORLD.act(f"revoke_api_key {service} {provider} {key_id}")
    return f"revoked {key_id}"


@tool(side_effects=True)
async def kill_query(database: str, pid: int) -> str:
    """Terminate a running query on a database by its process id."""
    await WORLD.wait("kill_query", database)
    f = WORLD.of(database)
    if int(f["longest"]["pid"]) != int(pid):
        raise ValueError(f"no query with pid {pid} is running on {database}")
    WORLD.act(f"kill_query {database} {pid}")
    f["longest"] = {"pid": int(pid) + 7, "seconds": 1, "query": "SELECT 1"}
    return f"terminated query {pid} on {database}"


@tool(side_effects=True)
async def block_public_access(bucket: str) -> str:
    """Block all public (anonymous) access to a bucket."""
    await WORLD.wait("block_public_access", bucket)
    f = WORLD.of(bucket)
    WORLD.act(f"block_public_access {bucket}")
    f["public"] = False
    return f"blocked public access to {bucket}"


HELDOUT_TOOLS: dict[str, Tool] = _ops.add_tools("held-out", globals())
