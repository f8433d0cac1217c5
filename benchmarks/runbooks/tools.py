"""Simulated operations tools for the runbook benchmark.

Every tool is async and sleeps a seeded, realistic latency (reads 0.2–0.7 s, actions 0.6–1.5 s;
`WORLD.scale` multiplies them, 0 for tests) and answers from a fixed table of facts per host,
service, domain, job, user or database, so each runbook with each parameter set has one known
correct outcome.  Tools that change the world are marked `side_effects=True` and record what they
did in `WORLD.actions` ("rotate_logs db-3"), which is how correctness is checked: the actions a run
took must be exactly the expected ones, no more (a branch not taken does nothing) and no fewer.
A read after an action sees its effect (the disk after `rotate_logs` is emptier).
"""

from __future__ import annotations

import asyncio
import copy
import random
from dataclasses import dataclass, field
from typing import Any

from planweave.tools import Tool, tool

__all__ = ["FACTS", "TOOLS", "WORLD", "OpsWorld", "add_facts", "add_tools", "tools_named"]

# The facts each runbook's parameter sets read.  Two of each kind, so that across the two
# parameter sets of a runbook each side of its branch is taken once.
FACTS: dict[str, dict[str, Any]] = {
    # hosts (disk full)
    "db-3": {"disk_pct": 94, "largest_dir": "/var/log", "status": "ok", "load": 3.1},
    "db-7": {"disk_pct": 71, "largest_dir": "/var/lib/postgresql", "status": "ok", "load": 0.8},
    # services (incident triage, deploy check, cache flush)
    "checkout": {"error_pct": 7.4, "deploys": ["checkout v5.2.0 (2 h ago)"],
                 "log": "upstream payments-gw timed out after 30s (x212)"},
    "search": {"error_pct": 12.9, "deploys": [],
               "log": "worker 14 exited: segmentation fault (core dumped) (x37)"},
    "api": {"error_pct": 0.2, "version": "v2.4.1", "smoke": {"passed": True, "failures": 0}},
    "billing": {"error_pct": 3.8, "version": "v1.9.0", "smoke": {"passed": False, "failures": 3}},
    "catalog": {"hit_rate": 0.31, "keys": 1_204_331, "memory_pct": 88},
    "sessions": {"hit_rate": 0.92, "keys": 88_410, "memory_pct": 41},
    # replicas
    "pg-replica-1": {"lag_s": 118, "primary": "pg-primary-1 healthy, 412 tps"},
    "pg-replica-2": {"lag_s": 4, "primary": "pg-primary-1 healthy, 398 tps"},
    # domains (certificates, DNS)
    "shop.example.com": {"days_left": 6, "issuer": "Let's Encrypt R11",
                         "ips": {"8.8.8.8": "203.0.113.10", "1.1.1.1": "203.0.113.10",
                                 "internal": "203.0.113.10"}},
    "docs.example.com": {"days_left": 74, "issuer": "Let's Encrypt R10",
                         "ips": {"8.8.8.8": "203.0.113.20", "1.1.1.1": "203.0.113.20",
                                 "internal": "203.0.113.20"}},
    "api.example.com": {"ips": {"8.8.8.8": "198.51.100.7", "1.1.1.1": "198.51.100.7",
                                "internal": "198.51.100.7"}},
    "legacy.example.com": {"ips": {"8.8.8.8": "198.51.100.40", "1.1.1.1": "198.51.100.40",
                                   "internal": "10.0.8.15"}},
    # jobs
    "nightly-etl": {"state": "failed", "exit_code": 137, "attempts": 1,
                    "log": "Killed: container exceeded memory limit 8Gi"},
    "report-build": {"state": "failed", "exit_code": 1, "attempts": 3,
                     "log": "KeyError: 'region' in build_report.py line 88"},
    "cleanup-tmp": {"state": "failed", "exit_code": 1, "attempts": 1,
                    "log": "ConnectionResetError: storage endpoint reset the connection"},
    # databases (backups)
    "orders": {"age_h": 5, "size_gb": 212, "checksum_ok": True},
    "users": {"age_h": 41, "size_gb": 36, "checksum_ok": True},
}  # fmt: skip

# Base latency per tool, seconds: reads are fast, actions slow.
LATENCY: dict[str, float] = {
    "disk_usage": 0.4, "service_health": 0.5, "rotate_logs": 1.2, "notify": 0.3,
    "error_rate": 0.6, "recent_deploys": 0.5, "read_log": 0.7, "restart_service": 1.5,
    "page_oncall": 0.4, "deployed_version": 0.3, "smoke_test": 1.4, "mark_release": 0.4,
    "rollback": 1.5, "replica_lag": 0.4, "primary_status": 0.5, "restart_replication": 1.3,
    "cert_info": 0.5, "resolve": 0.3, "renew_cert": 1.4, "job_status": 0.3, "job_logs": 0.6,
    "rerun_job": 0.8, "create_account": 0.9, "add_to_group": 0.5, "create_mailbox": 1.0,
    "grant_repo_access": 0.6, "send_welcome": 0.3, "cache_stats": 0.3, "memory_usage": 0.3,
    "flush_cache": 0.9, "warm_cache": 1.2, "open_ticket": 0.5, "latest_backup": 0.4,
    "backup_checksum": 1.1, "run_backup": 1.5, "mark_backup_verified": 0.3,
}  # fmt: skip


@dataclass
class OpsWorld:
    """The simulated estate: facts (changed by actions), the actions taken, and the latency
    scale.  `reset()` before each run puts the facts back and forgets the actions."""

    scale: float = 1.0
    seed: int = 2026
    facts: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(FACTS))
    actions: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.facts = copy.deepcopy(FACTS)
        self.actions = []

    def of(self, name: str) -> dict[str, Any]:
        if name not in self.facts:
            raise ValueError(f"unknown target {name!r}")
        return self.facts[name]

    def latency(self, name: str, key: str) -> float:
        jitter = random.Random(f"{self.seed}:{name}:{key}").uniform(0.85, 1.15)
        return LATENCY[name] * jitter * self.scale

    async def wait(self, name: str, key: str) -> None:
        delay = self.latency(name, key)
        if delay > 0:
            await asyncio.sleep(delay)

    def act(self, action: str) -> None:
        self.actions.append(action)


WORLD = OpsWorld()


# --- reads ------------------------------------------------------------------------------------


@tool
async def disk_usage(host: str) -> dict[str, Any]:
    """Disk usage of a host: disk_pct (percent used) and largest_dir."""
    await WORLD.wait("disk_usage", host)
    f = WORLD.of(host)
    return {"host": host, "disk_pct": f["disk_pct"], "largest_dir": f["largest_dir"]}


@tool
async def service_health(host: str) -> dict[str, Any]:
    """Health of the services on a host: status and load average."""
    await WORLD.wait("service_health", host)
    f = WORLD.of(host)
    return {"host": host, "status": f["status"], "load": f["load"]}


@tool
async def error_rate(service: str) -> float:
    """The service's error rate over the last 15 minutes, in percent of requests."""
    await WORLD.wait("error_rate", service)
    return float(WORLD.of(service)["error_pct"])


@tool
async def recent_deploys(service: str) -> list[str]:
    """The service's deploys in the last 24 hours."""
    await WORLD.wait("recent_deploys", service)
    return list(WORLD.of(service).get("deploys", []))


@tool
async def read_log(service: str) -> str:
    """The most frequent error line in the service's log over the last 15 minutes."""
    await WORLD.wait("read_log", service)
    return str(WORLD.of(service)["log"])


@tool
async def deployed_version(service: str) -> str:
    """The version of the service running in production."""
    await WORLD.wait("deployed_version", service)
    return str(WORLD.of(service)["version"])


@tool
async def smoke_test(service: str) -> dict[str, Any]:
    """Run the service's smoke tests: passed (true/false) and the number of failures."""
    await WORLD.wait("smoke_test", service)
    return dict(WORLD.of(service)["smoke"])


@tool
async def replica_lag(replica: str) -> int:
    """Replication lag of a database replica, in seconds."""
    await WORLD.wait("replica_lag", replica)
    return int(WORLD.of(replica)["lag_s"])


@tool
async def primary_status(replica: str) -> str:
    """Status of the primary a replica follows."""
    await WORLD.wait("primary_status", replica)
    return str(WORLD.of(replica)["primary"])


@tool
async def cert_info(domain: str) -> dict[str, Any]:
    """The domain's TLS certificate: days_left until it expires, and its issuer."""
    await WORLD.wait("cert_info", domain)
    f = WORLD.of(domain)
    return {"domain": domain, "days_left": f["days_left"], "issuer": f["issuer"]}


@tool
async def resolve(domain: str, resolver: str) -> str:
    """The IP address a resolver ("8.8.8.8", "1.1.1.1" or "internal") gives for a domain."""
    await WORLD.wait("resolve", f"{domain}@{resolver}")
    ips = WORLD.of(domain)["ips"]
    if resolver not in ips:
        raise ValueError(f"unknown resolver {resolver!r}: 8.8.8.8, 1.1.1.1 or internal")
    return str(ips[resolver])


@tool
async def job_status(job: str) -> dict[str, Any]:
    """A batch job's last run: state, exit_code and attempts so far."""
    await WORLD.wait("job_status", job)
    f = WORLD.of(job)
    return {"job": job, "state": f["state"], "exit_code": f["exit_code"], "attempts": f["attempts"]}


@tool
async def job_logs(job: str) -> str:
    """The last error line of a batch job's last run."""
    await WORLD.wait("job_logs", job)
    return str(WORLD.of(job)["log"])


@tool
async def cache_stats(service: str) -> dict[str, Any]:
    """A service's cache: hit_rate (0 to 1) and the number of keys."""
    await WORLD.wait("cache_stats", service)
    f = WORLD.of(service)
    return {"service": service, "hit_rate": f["hit_rate"], "keys": f["keys"]}


@tool
async def memory_usage(service: str) -> int:
    """Memory used by a service's cache nodes, in percent."""
    await WORLD.wait("memory_usage", service)
    return int(WORLD.of(service)["memory_pct"])


@tool
async def latest_backup(database: str) -> dict[str, Any]:
    """A database's latest backup: age_h (hours since it was taken) and size_gb."""
    await WORLD.wait("latest_backup", database)
    f = WORLD.of(database)
    return {"database": database, "age_h": f["age_h"], "size_gb": f["size_gb"]}


@tool
async def backup_checksum(database: str) -> bool:
    """Verify the checksum of a database's latest backup: true when it matches."""
    await WORLD.wait("backup_checksum", database)
    return bool(WORLD.of(database)["checksum_ok"])


# --- actions ----------------------------------------------------------------------------------


@tool(side_effects=True)
async def rotate_logs(host: str) -> str:
    """Rotate and compress the logs on a host, freeing disk space."""
    await WORLD.wait("rotate_logs", host)
    f = WORLD.of(host)
    WORLD.act(f"rotate_logs {host}")
    f["disk_pct"] = 58
    return f"rotated logs on {host}; disk now 58%"


@tool(side_effects=True)
async def notify(channel: str, message: str) -> str:
    """Post a message to a chat channel such as "#ops"."""
    await WORLD.wait("notify", channel)
    WORLD.act(f"notify {channel}")
    return f"posted to {channel}"


@tool(side_effects=True)
async def restart_service(service: str) -> str:
    """Restart a service (rolling, one instance at a time)."""
    await WORLD.wait("restart_service", service)
    WORLD.act(f"restart_service {service}")
    return f"restarted {service}"


@tool(side_effects=True)
async def page_oncall(service: str, summary: str) -> str:
    """Page the on-call engineer for a service with a one-line summary."""
    await WORLD.wait("page_oncall", service)
    WORLD.act(f"page_oncall {service}")
    return f"paged on-call for {service}"


@tool(side_effects=True)
async def mark_release(service: str, version: str) -> str:
    """Mark a deployed release as verified."""
    await WORLD.wait("mark_release", service)
    WORLD.act(f"mark_release {service} {version}")
    return f"marked {service} {version} verified"


@tool(side_effects=True)
async def rollback(service: str) -> str:
    """Roll a service back to its previous release."""
    await WORLD.wait("rollback", service)
    WORLD.act(f"rollback {service}")
    return f"rolled {service} back"


@tool(side_effects=True)
async def restart_replication(replica: str) -> str:
    """Restart replication on a replica so it catches up with its primary."""
    await WORLD.wait("restart_replication", replica)
    WORLD.act(f"restart_replication {replica}")
    WORLD.of(replica)["lag_s"] = 2
    return f"restarted replication on {replica}"


@tool(side_effects=True)
async def renew_cert(domain: str) -> str:
    """Renew the TLS certificate of a domain (90 days)."""
    await WORLD.wait("renew_cert", domain)
    WORLD.act(f"renew_cert {domain}")
    WORLD.of(domain)["days_left"] = 90
    return f"renewed the certificate of {domain}; 90 days left"


@tool(side_effects=True)
async def rerun_job(job: str, memory_gb: int = 8) -> str:
    """Run a batch job again, with memory_gb of memory."""
    await WORLD.wait("rerun_job", job)
    WORLD.act(f"rerun_job {job} {memory_gb}")
    return f"rerunning {job} with {memory_gb} GB"


@tool(side_effects=True)
async def create_account(user: str) -> str:
    """Create a user's account in the directory."""
    await WORLD.wait("create_account", user)
    WORLD.act(f"create_account {user}")
    return f"created account {user}"


@tool(side_effects=True)
async def add_to_group(user: str, group: str) -> str:
    """Add a user to a directory group (a team's name)."""
    await WORLD.wait("add_to_group", user)
    WORLD.act(f"add_to_group {user} {group}")
    return f"added {user} to {group}"


@tool(side_effects=True)
async def create_mailbox(user: str) -> str:
    """Create a user's mailbox."""
    await WORLD.wait("create_mailbox", user)
    WORLD.act(f"create_mailbox {user}")
    return f"created mailbox {user}@example.com"


@tool(side_effects=True)
async def grant_repo_access(user: str) -> str:
    """Give a user access to the source repositories."""
    await WORLD.wait("grant_repo_access", user)
    WORLD.act(f"grant_repo_access {user}")
    return f"granted repository access to {user}"


@tool(side_effects=True)
async def send_welcome(user: str) -> str:
    """Send a user the welcome email."""
    await WORLD.wait("send_welcome", user)
    WORLD.act(f"send_welcome {user}")
    return f"sent the welcome email to {user}"


@tool(side_effects=True)
async def flush_cache(service: str) -> str:
    """Flush every key of a service's cache."""
    await WORLD.wait("flush_cache", service)
    WORLD.act(f"flush_cache {service}")
    return f"flushed the {service} cache"


@tool(side_effects=True)
async def warm_cache(service: str) -> str:
    """Warm a service's cache with its most requested keys."""
    await WORLD.wait("warm_cache", service)
    WORLD.act(f"warm_cache {service}")
    return f"warmed the {service} cache"


@tool(side_effects=True)
async def open_ticket(queue: str, summary: str) -> str:
    """Open a ticket in a team's queue (such as "network") with a one-line summary."""
    await WORLD.wait("open_ticket", queue)
    WORLD.act(f"open_ticket {queue}")
    return f"opened a ticket in {queue}"


@tool(side_effects=True)
async def run_backup(database: str) -> str:
    """Take a new full backup of a database now."""
    await WORLD.wait("run_backup", database)
    WORLD.act(f"run_backup {database}")
    return f"started a full backup of {database}"


@tool(side_effects=True)
async def mark_backup_verified(database: str) -> str:
    """Record that a database's latest backup is verified."""
    await WORLD.wait("mark_backup_verified", database)
    WORLD.act(f"mark_backup_verified {database}")
    return f"marked the latest {database} backup verified"


TOOLS: dict[str, Tool] = {t.name: t for t in list(globals().values()) if isinstance(t, Tool)}


def add_facts(part: str, facts: dict[str, dict[str, Any]], latency: dict[str, float]) -> None:
    """Add another part's facts (to `FACTS`, which every `WORLD.reset()` copies, and to the
    world as it is now) and its tools' latencies; a fact it would replace is an error."""
    for name in facts:
        if name in FACTS:
            raise RuntimeError(f"{part} fact {name!r} would replace one of tools.FACTS")
    FACTS.update(copy.deepcopy(facts))
    WORLD.facts.update(copy.deepcopy(facts))
    LATENCY.update(latency)


def add_tools(part: str, namespace: dict[str, Any]) -> dict[str, Tool]:
    """Add the tools a part's module defines (its `namespace`) to `TOOLS`, so that
    `tools_named` finds them; a tool it would replace is an error.  Returns them by name."""
    found = {t.name: t for t in list(namespace.values()) if isinstance(t, Tool)}
    for name in found:
        if name in TOOLS:
            raise RuntimeError(f"{part} tool {name!r} would replace one of tools.TOOLS")
    TOOLS.update(found)
    return found


def tools_named(names: list[str]) -> list[Tool]:
    return [TOOLS[n] for n in names]
