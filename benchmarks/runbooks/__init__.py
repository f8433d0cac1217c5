"""The runbook benchmark's catalog: ten markdown runbooks (this folder, `part="tuned"`: the
compile prompts were tuned on them), five held out (`heldout/`, `part="heldout"`, tools in
`heldout_tools.py`) and five fresh ones (`fresh/`, `part="fresh"`, tools in `fresh_tools.py`:
written later by someone who never saw the compile prompts, for an honest measure of runbooks
nothing was tuned on), the tools each uses (`tools.py`), the plan a capable model would compile
from each (its gold plan, written in the plan language with `<param>` placeholders, branches
as `if` conditions), and per parameter set the known right outcome: the side effects that must
happen (no others) and what the answer must say.  The expected outcomes are written by hand
from the facts in `tools.FACTS` (and `heldout_tools.HELDOUT_FACTS`,
`fresh_tools.FRESH_FACTS`), not derived from the gold plans, so they also check that the gold
plans (and the runtime's branches) are right."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

# (registers the held-out and the fresh tools in tools.TOOLS)
from . import fresh2_tools, fresh_tools, heldout_tools  # noqa: F401

HERE = Path(__file__).parent
_PARAM = re.compile(r"<([a-z_]+)>")


@dataclass(frozen=True)
class Case:
    """One parameter set of a runbook and its right outcome: `actions` exactly (sorted),
    `answer_has` each a word the answer must contain (case aside; "a|b": either), `outcome` the
    answer a right run gives in words (what the oracle answers)."""

    params: dict[str, str]
    actions: tuple[str, ...]
    answer_has: tuple[str, ...]
    outcome: str
    side: str  # which side of the runbook's branch this case takes, for the table


@dataclass(frozen=True)
class Runbook:
    name: str
    tools: tuple[str, ...]
    gold: str  # the plan, with <param> placeholders
    cases: tuple[Case, ...]
    decide: bool = False  # the plan asks the LLM a decision (builtin decide)
    part: str = "tuned"  # "tuned" (the prompts were tuned on it), "heldout" or "fresh" (not)

    @property
    def path(self) -> Path:
        if self.part in ("heldout", "fresh", "fresh2"):
            return HERE / self.part / f"{self.name}.md"
        return HERE / f"{self.name}.md"

    @property
    def text(self) -> str:
        return self.path.read_text()

    @property
    def title(self) -> str:
        return self.text.splitlines()[0].removeprefix("# ").strip()

    def filled(self, params: dict[str, str], text: str | None = None) -> str:
        """The runbook (or `text`) with its parameters filled in."""
        return _PARAM.sub(lambda m: params[m.group(1)], self.text if text is None else text)

    def gold_plan(self, params: dict[str, str]) -> str:
        return self.filled(params, self.gold).strip() + "\n<END_OF_PLAN>"

    def placeholders(self) -> list[str]:
        return list(dict.fromkeys(_PARAM.findall(self.text)))


def _case(side: str, params: dict[str, str], actions: list[str], has: str, outcome: str) -> Case:
    return Case(params, tuple(sorted(actions)), tuple(has.split()), outcome, side)


RUNBOOKS: list[Runbook] = [
    Runbook(
        "disk_full",
        ("disk_usage", "service_health", "rotate_logs", "notify"),
        """
1. disk_usage("<host>")
2. service_health("<host>")
3. rotate_logs("<host>") if $1.disk_pct > 90
4. notify("#ops", "<host> disk at ${1.disk_pct}%, no action needed") if $1.disk_pct <= 90
5. join()
""",
        (
            _case(
                "over 90 %",
                {"host": "db-3"},
                ["rotate_logs db-3"],
                "db-3 rotat",
                "The disk of db-3 was 94% full, so its logs were rotated; it is now at 58%.",
            ),
            _case(
                "90 % or less",
                {"host": "db-7"},
                ["notify #ops"],
                "db-7 71",
                "db-7's disk is at 71%, under 90%, so nothing was rotated; #ops was told.",
            ),
        ),
    ),
    Runbook(
        "incident_triage",
        ("error_rate", "recent_deploys", "read_log", "restart_service", "page_oncall"),
        """
1. error_rate("<service>")
2. recent_deploys("<service>")
3. read_log("<service>")
4. decide("Is the failure a timeout or a crash?", $3, options=["timeout", "crash"])
5. restart_service("<service>") if $4 == "timeout"
6. page_oncall("<service>", "<service> is crashing: ${3}") if $4 == "crash"
7. join()
""",
        (
            _case(
                "timeout",
                {"service": "checkout"},
                ["restart_service checkout"],
                "checkout restart",
                "checkout's errors are upstream timeouts (7.4% errors), so checkout was restarted.",
            ),
            _case(
                "crash",
                {"service": "search"},
                ["page_oncall search"],
                "search pag",
                "search is crashing (segmentation fault, 12.9% errors): on-call was paged.",
            ),
        ),
        decide=True,
    ),
    Runbook(
        "deploy_check",
        ("deployed_version", "smoke_test", "error_rate", "mark_release", "rollback"),
        """
1. deployed_version("<service>")
2. smoke_test("<service>")
3. error_rate("<service>")
4. mark_release("<service>", "<version>") if $1 == "<version>" and $2.passed and $3 < 1
5. rollback("<service>") if not ($1 == "<version>" and $2.passed and $3 < 1)
6. join()
""",
        (
            _case(
                "verified",
                {"service": "api", "version": "v2.4.1"},
                ["mark_release api v2.4.1"],
                "api v2.4.1 verified",
                "api v2.4.1 is running, its smoke tests passed and errors are 0.2%: "
                "the release is marked verified.",
            ),
            _case(
                "rolled back",
                {"service": "billing", "version": "v1.9.0"},
                ["rollback billing"],
                "billing roll",
                "billing v1.9.0 failed 3 smoke tests (3.8% errors), so billing was rolled back.",
            ),
        ),
    ),
    Runbook(
        "replica_lag",
        ("replica_lag", "primary_status", "restart_replication", "notify"),
        """
1. replica_lag("<replica>")
2. primary_status("<replica>")
3. restart_replication("<replica>") if $1 > 30
4. replica_lag("<replica>") if $3 != None
5. notify("#db", "<replica> lag ${1}s, within limits") if $1 <= 30
6. join()
""",
        (
            _case(
                "over 30 s",
                {"replica": "pg-replica-1"},
                ["restart_replication pg-replica-1"],
                "pg-replica-1 restart",
                "pg-replica-1 was 118 s behind, so replication was restarted; its lag is now 2 s.",
            ),
            _case(
                "30 s or less",
                {"replica": "pg-replica-2"},
                ["notify #db"],
                "pg-replica-2 4",
                "pg-replica-2 is 4 s behind, within limits; #db was told.",
            ),
        ),
    ),
    Runbook(
        "cert_expiry",
        ("cert_info", "resolve", "renew_cert", "notify"),
        """
1. cert_info("<domain>")
2. resolve("<domain>", "8.8.8.8")
3. renew_cert("<domain>") if $1.days_left < 14
4. notify("#ops", "<domain> certificate valid for ${1.days_left} more days") if $1.days_left >= 14
5. join()
""",
        (
            _case(
                "under 14 days",
                {"domain": "shop.example.com"},
                ["renew_cert shop.example.com"],
                "shop.example.com renew",
                "The shop.example.com certificate had 6 days left and was renewed for 90 days.",
            ),
            _case(
                "14 days or more",
                {"domain": "docs.example.com"},
                ["notify #ops"],
                "docs.example.com 74",
                "The docs.example.com certificate is valid for 74 more "
                "days; nothing was renewed and #ops was told.",
            ),
        ),
    ),
    Runbook(
        "failed_job",
        ("job_status", "job_logs", "rerun_job", "page_oncall"),
        """
1. job_status("<job>")
2. job_logs("<job>")
3. rerun_job("<job>", memory_gb=16) if $1.exit_code == 137
4. page_oncall("<job>", "<job> failed 3 times: ${2}") if $1.exit_code != 137 and $1.attempts >= 3
5. rerun_job("<job>") if $1.exit_code != 137 and $1.attempts < 3
6. join()
""",
        (
            _case(
                "exit 137",
                {"job": "nightly-etl"},
                ["rerun_job nightly-etl 16"],
                "nightly-etl 16",
                "nightly-etl was killed for memory (exit 137) and is rerunning with 16 GB.",
            ),
            _case(
                "3 attempts",
                {"job": "report-build"},
                ["page_oncall report-build"],
                "report-build pag",
                "report-build failed 3 times (KeyError: 'region'); "
                "on-call was paged and it was not rerun.",
            ),
            _case(
                "plain rerun",
                {"job": "cleanup-tmp"},
                ["rerun_job cleanup-tmp 8"],
                "cleanup-tmp rerun",
                "cleanup-tmp failed once (exit 1) and is rerunning with 8 GB.",
            ),
        ),
    ),
    Runbook(
        "onboarding",
        ("create_account", "create_mailbox", "add_to_group", "grant_repo_access", "send_welcome"),
        """
1. create_account("<user>")
2. create_mailbox("<user>")
3. add_to_group("<user>", "<team>")
4. grant_repo_access("<user>") if "<team>" == "engineering"
5. send_welcome("<user>")
6. join()
""",
        (
            _case(
                "engineering",
                {"user": "alice", "team": "engineering"},
                [
                    "create_account alice",
                    "create_mailbox alice",
                    "add_to_group alice engineering",
                    "grant_repo_access alice",
                    "send_welcome alice",
                ],
                "alice repo",
                "alice has an account, a mailbox, the engineering group, repository access "
                "and the welcome email.",
            ),
            _case(
                "other team",
                {"user": "bob", "team": "sales"},
                [
                    "create_account bob",
                    "create_mailbox bob",
                    "add_to_group bob sales",
                    "send_welcome bob",
                ],
                "bob sales",
                "bob has an account, a mailbox, the sales group and the welcome email; "
                "no repository access.",
            ),
        ),
    ),
    Runbook(
        "cache_flush",
        ("cache_stats", "memory_usage", "flush_cache", "warm_cache", "notify"),
        """
1. cache_stats("<service>")
2. memory_usage("<service>")
3. flush_cache("<service>") if $1.hit_rate < 0.5
4. warm_cache("<service>") if $3 != None
5. notify("#ops", "<service> cache healthy, hit rate ${1.hit_rate}") if $1.hit_rate >= 0.5
6. join()
""",
        (
            _case(
                "hit rate under 0.5",
                {"service": "catalog"},
                ["flush_cache catalog", "warm_cache catalog"],
                "catalog flush",
                "The catalog cache hit rate was 0.31, so it was flushed and warmed.",
            ),
            _case(
                "healthy",
                {"service": "sessions"},
                ["notify #ops"],
                "sessions 0.92",
                "The sessions cache is healthy (hit rate 0.92); it was not flushed.",
            ),
        ),
    ),
    Runbook(
        "dns_check",
        ("resolve", "open_ticket", "notify"),
        """
1. resolve("<domain>", "8.8.8.8")
2. resolve("<domain>", "1.1.1.1")
3. resolve("<domain>", "internal")
4. open_ticket("network", "<domain> resolvers disagree: ${1}, ${2}, ${3}") if $1 != $2 or $2 != $3
5. notify("#ops", "<domain> resolves to ${1} everywhere") if $1 == $2 and $2 == $3
6. join()
""",
        (
            _case(
                "consistent",
                {"domain": "api.example.com"},
                ["notify #ops"],
                "api.example.com 198.51.100.7",
                "api.example.com resolves to 198.51.100.7 on every resolver; #ops was told.",
            ),
            _case(
                "inconsistent",
                {"domain": "legacy.example.com"},
                ["open_ticket network"],
                "legacy.example.com 10.0.8.15",
                "legacy.example.com resolves to "
                "198.51.100.40 publicly but 10.0.8.15 internally: a network ticket was opened.",
            ),
        ),
    ),
    Runbook(
        "backup_verify",
        ("latest_backup", "backup_checksum", "run_backup", "mark_backup_verified", "open_ticket"),
        """
1. latest_backup("<database>")
2. backup_checksum("<database>")
3. run_backup("<database>") if $1.age_h > 24
4. mark_backup_verified("<database>") if $1.age_h <= 24 and $2
5. open_ticket("dba", "<database> backup checksum mismatch") if $1.age_h <= 24 and not $2
6. join()
""",
        (
            _case(
                "fresh, good checksum",
                {"database": "orders"},
                ["mark_backup_verified orders"],
                "orders verified",
                "The orders backup is 5 hours old and its checksum matches: marked verified.",
            ),
            _case(
                "stale",
                {"database": "users"},
                ["run_backup users"],
                "users backup",
                "The users backup was 41 hours old, so a new full backup was started.",
            ),
        ),
    ),
]

# The held-out runbooks (`heldout/*.md`, tools in `heldout_tools.py`): written after the
# compile prompts were tuned on the ten above, and not to be tuned on; `--part heldout`.
RUNBOOKS += [
    Runbook(
        "consumer_lag",
        ("consumer_lag", "consumer_group_state", "topic_rate", "restart_consumers", "notify"),
        """
1. consumer_lag("<group>", "<topic>")
2. consumer_group_state("<group>")
3. topic_rate("<topic>")
4. restart_consumers("<group>") if $1 > 10000 and not $2.running
5. notify("#data-eng", "<group> lag ${1} on <topic>, ${2.members} up") if $1 <= 10000 or $2.running
6. join()
""",
        (
            _case(
                "behind, not running",
                {"group": "invoice-writer", "topic": "invoices"},
                ["restart_consumers invoice-writer"],
                "invoice-writer restart",
                "invoice-writer was 48,210 messages behind on invoices with no consumers "
                "running, so its consumers were restarted.",
            ),
            _case(
                "behind, running",
                {"group": "clickstream-etl", "topic": "page-views"},
                ["notify #data-eng"],
                "clickstream-etl 23950|23,950",
                "clickstream-etl is 23,950 messages behind on page-views with 6 consumers "
                "running; nothing was restarted and #data-eng was told.",
            ),
        ),
        part="heldout",
    ),
    Runbook(
        "rollout_stuck",
        ("rollout_status", "pod_events", "undo_rollout", "open_ticket", "notify"),
        """
1. rollout_status("<deployment>", "<namespace>")
2. pod_events("<deployment>", "<namespace>")
3. undo_rollout("<deployment>", "<namespace>") if $1.ready < $1.desired
4. open_ticket("platform", "<deployment> revision ${1.revision} stuck: ${2}") if $3 != None
5. notify("#deploys", "<deployment> revision ${1.revision} rolled out") if $1.ready >= $1.desired
6. join()
""",
        (
            _case(
                "replicas missing",
                {"deployment": "checkout-web", "namespace": "prod"},
                ["undo_rollout prod/checkout-web", "open_ticket platform"],
                "checkout-web roll",
                "Only 2 of 6 checkout-web replicas were ready (revision 41 could not pull its "
                "image), so checkout-web was rolled back to revision 40 and a platform ticket "
                "was opened.",
            ),
            _case(
                "all ready",
                {"deployment": "ledger-api", "namespace": "payments"},
                ["notify #deploys"],
                "ledger-api 17",
                "ledger-api revision 17 is fully rolled out (4 of 4 replicas ready); nothing "
                "was rolled back and #deploys was told.",
            ),
        ),
        part="heldout",
    ),
    Runbook(
        "key_rotation",
        (
            "api_key_info",
            "leak_scan",
            "create_api_key",
            "store_secret",
            "revoke_api_key",
            "notify",
        ),
        """
1. api_key_info("<service>", "<provider>")
2. leak_scan("<service>", "<provider>")
3. create_api_key("<service>", "<provider>") if $2 or $1.age_days > 90
4. store_secret("<service>/<provider>", $3) if $3 != None
5. revoke_api_key("<service>", "<provider>", $1.key_id) if $4 != None
6. notify("#security", "<service> key ${1.age_days} days old") if not $2 and $1.age_days <= 90
7. join()
""",
        (
            _case(
                "leaked",
                {"service": "payments", "provider": "stripe"},
                [
                    "create_api_key payments stripe",
                    "store_secret payments/stripe sk_live_9d1e",
                    "revoke_api_key payments stripe sk_live_4f2a",
                ],
                "payments revok",
                "The payments Stripe key sk_live_4f2a was found leaked, so a new key "
                "(sk_live_9d1e) was created and stored in the vault, and the old key was revoked.",
            ),
            _case(
                "clean, 64 days",
                {"service": "mailer", "provider": "sendgrid"},
                ["notify #security"],
                "mailer 64",
                "The mailer SendGrid key is 64 days old and was not found leaked; it was not "
                "rotated and #security was told.",
            ),
        ),
        part="heldout",
    ),
    Runbook(
        "conn_pool",
        ("pool_stats", "longest_query", "kill_query", "restart_service", "notify"),
        """
1. pool_stats("<service>")
2. longest_query("<database>")
3. kill_query("<database>", $2.pid) if $2.seconds > 300
4. restart_service("<service>") if $2.seconds <= 300
5. notify("#db", "<service> pool ${1.in_use}/${1.max} in use, ${1.waiting} waiting")
6. join()
""",
        (
            _case(
                "long query",
                {"service": "invoicing", "database": "billing-db"},
                ["kill_query billing-db 48113", "notify #db"],
                "billing-db 48113 terminat|kill",
                "A query on billing-db (pid 48113) had been running for 1,840 s while "
                "invoicing's pool was full (50/50 in use, 312 waiting): it was terminated and "
                "#db was told.",
            ),
            _case(
                "no long query",
                {"service": "profile-api", "database": "accounts-db"},
                ["restart_service profile-api", "notify #db"],
                "profile-api restart",
                "No query on accounts-db ran long (the longest 12 s), so profile-api was "
                "restarted to release its leaked connections (40/40 in use, 87 waiting); #db "
                "was told.",
            ),
        ),
        part="heldout",
    ),
    Runbook(
        "bucket_public",
        (
            "bucket_access",
            "bucket_classification",
            "block_public_access",
            "anonymous_reads",
            "open_ticket",
            "notify",
        ),
        """
1. bucket_access("<bucket>")
2. bucket_classification("<bucket>")
3. block_public_access("<bucket>") if $1.public and $2 != "public"
4. anonymous_reads("<bucket>") if $3 != None
5. open_ticket("security", "<bucket> public, owner ${1.owner}, ${4} anonymous reads") if $3 != None
6. notify("#security", "<bucket> access matches ${2}") if not ($1.public and $2 != "public")
7. join()
""",
        (
            _case(
                "confidential, public",
                {"bucket": "hr-exports"},
                ["block_public_access hr-exports", "open_ticket security"],
                "hr-exports block 1372|1,372",
                "hr-exports is confidential but was readable by anyone (1,372 anonymous reads "
                "in 24 h): public access was blocked and a security ticket was opened for "
                "people-ops.",
            ),
            _case(
                "meant to be public",
                {"bucket": "press-kit"},
                ["notify #security"],
                "press-kit public",
                "press-kit is classified public and allows anonymous reads as intended; "
                "nothing was changed and #security was told.",
            ),
        ),
        part="heldout",
    ),
]

# The fresh runbooks (`fresh/*.md`, tools in `fresh_tools.py`): written after the held-out
# ones by someone who never saw the compile prompts, in new domains; not to be tuned on;
# `--part fresh`.
RUNBOOKS += [
    Runbook(
        "dlq_backlog",
        ("dlq_stats", "dlq_top_error", "redrive_dlq", "open_ticket"),
        """
1. dlq_stats("<queue>")
2. dlq_top_error("<queue>")
3. redrive_dlq("<queue>") if $2.retryable
4. dlq_stats("<queue>") if $3 != None
5. open_ticket($1.owner, "<queue> DLQ: ${1.messages} stuck: ${2.error}") if not $2.retryable
6. join()
""",
        (
            _case(
                "retryable",
                {"queue": "payment-callbacks"},
                ["redrive_dlq payment-callbacks"],
                "payment-callbacks redriv",
                "payment-callbacks had 3,412 dead-lettered messages, nearly all HTTP 503 from "
                "ledger-api (retryable), so they were redriven onto the queue; 18 are left in "
                "the DLQ.",
            ),
            _case(
                "not retryable",
                {"queue": "email-outbound"},
                ["open_ticket comms"],
                "email-outbound ticket",
                "email-outbound has 781 dead-lettered messages failing validation (to is not a "
                "valid address), which a retry would not fix: nothing was redriven and a "
                "ticket was opened for comms.",
            ),
        ),
        part="fresh",
    ),
    Runbook(
        "budget_alert",
        ("budget_status", "top_cost_driver", "stop_resource", "notify"),
        """
1. budget_status("<account>")
2. top_cost_driver("<account>")
3. stop_resource("<account>", $2.resource_id) if $1.forecast_pct > 100 and $2.env == "sandbox"
4. notify("#finops", "<account> at ${1.forecast_pct}%, top ${2.resource_id} (${2.env})")
5. join()
""",
        (
            _case(
                "over budget, sandbox",
                {"account": "ml-research"},
                ["stop_resource ml-research i-0a7f3c9e21b4d5f60", "notify #finops"],
                "ml-research stop",
                "ml-research is forecast at 148% of its $40,000 budget; its top cost, the "
                "sandbox instance i-0a7f3c9e21b4d5f60 ($786.40 a day), was stopped and #finops "
                "was told.",
            ),
            _case(
                "over budget, production",
                {"account": "retail-core"},
                ["notify #finops"],
                "retail-core 112",
                "retail-core is forecast at 112% of its budget, but its top cost "
                "(db-retail-orders-2) is production, so nothing was stopped; #finops was told.",
            ),
        ),
        part="fresh",
    ),
    Runbook(
        "stale_flag",
        ("get_flag", "flag_code_refs", "mark_flag_stale", "open_ticket", "notify"),
        """
1. get_flag("<project>", "<flag>")
2. flag_code_refs("<project>", "<flag>")
3. mark_flag_stale("<project>", "<flag>") if $1.rollout_pct == 0 or $1.rollout_pct == 100
4. open_ticket($1.owner, "remove <flag> from code: ${2} references") if $3 != None
5. notify("#flags", "<flag> at ${1.rollout_pct}%") if $1.rollout_pct > 0 and $1.rollout_pct < 100
6. join()
""",
        (
            _case(
                "fully rolled out",
                {"flag": "new-tax-engine", "project": "checkout"},
                ["mark_flag_stale checkout/new-tax-engine", "open_ticket checkout"],
                "new-tax-engine stale",
                "new-tax-engine has served 100% of checkout for 143 days, so it was marked "
                "stale and the checkout team got a ticket to remove its 7 code references.",
            ),
            _case(
                "partial rollout",
                {"flag": "semantic-ranking", "project": "search"},
                ["notify #flags"],
                "semantic-ranking 35",
                "semantic-ranking is still at a 35% rollout after 97 days, so it was left "
                "alone and #flags was told it belongs to search-relevance.",
            ),
        ),
        part="fresh",
    ),
    Runbook(
        "lb_unhealthy",
        (
            "target_health",
            "instance_status_checks",
            "deregister_target",
            "terminate_instance",
            "restart_unit",
        ),
        """
1. target_health("<pool>", "<instance>")
2. instance_status_checks("<instance>")
3. deregister_target("<pool>", "<instance>") if $2.system_status == "impaired"
4. terminate_instance("<instance>") if $3 != None
5. restart_unit("<instance>", "web") if $2.system_status != "impaired"
6. join()
""",
        (
            _case(
                "host impaired",
                {"instance": "i-0b5e7a19c3d2f8e41", "pool": "web-public"},
                [
                    "deregister_target web-public i-0b5e7a19c3d2f8e41",
                    "terminate_instance i-0b5e7a19c3d2f8e41",
                ],
                "i-0b5e7a19c3d2f8e41 terminat",
                "i-0b5e7a19c3d2f8e41 sat on an impaired host (unhealthy for 14 minutes, "
                "Target.Timeout), so it was deregistered from web-public and terminated for "
                "the autoscaling group to replace.",
            ),
            _case(
                "host ok",
                {"instance": "i-07d3c2b8a6e1f0954", "pool": "api-internal"},
                ["restart_unit i-07d3c2b8a6e1f0954 web"],
                "i-07d3c2b8a6e1f0954 restart",
                "i-07d3c2b8a6e1f0954 passes its status checks (its target fails with "
                "Target.ResponseCodeMismatch), so the web unit was restarted on it; it stays "
                "in api-internal.",
            ),
        ),
        part="fresh",
    ),
    Runbook(
        "account_lockout",
        ("idp_user", "failed_signins", "open_ticket", "unlock_user", "reset_mfa"),
        """
1. idp_user("<user>")
2. failed_signins("<user>", hours=1)
3. open_ticket("security", "<user>: ${2.attempts} fails, ${2.distinct_ips} IPs") if $2.attempts > 20
4. unlock_user("<user>") if $2.attempts <= 20
5. reset_mfa("<user>") if $2.attempts <= 20
6. join()
""",
        (
            _case(
                "own lockout",
                {"user": "dchen"},
                ["unlock_user dchen", "reset_mfa dchen"],
                "dchen unlock",
                "dchen had only 3 failed sign-ins in the last hour, from one IP, so the account "
                "was unlocked and MFA was reset for the new device.",
            ),
            _case(
                "suspected attack",
                {"user": "rkapoor"},
                ["open_ticket security"],
                "rkapoor 214",
                "rkapoor had 214 failed sign-ins from 37 IPs in the last hour: the account "
                "stays locked, MFA was left alone and a security ticket was opened.",
            ),
        ),
        part="fresh",
    ),
]

# The second fresh part (`fresh2/*.md`, tools in `fresh2_tools.py`): written after the fresh
# ones by a helper who read none of the compiler's code, in new domains; not to be tuned on;
# `--part fresh2`.
RUNBOOKS += [
    Runbook(
        "ci_runner_stuck",
        ("ci_runner_status", "ci_queued_jobs", "cancel_ci_job", "restart_runner_agent", "notify"),
        """
1. ci_runner_status("<runner>")
2. ci_queued_jobs("<runner>")
3. cancel_ci_job($1.job_id) if $1.job_minutes > 120
4. restart_runner_agent("<runner>") if $3 != None
5. notify("#ci", "<runner> ${1.job_id}: ${1.job_minutes}m, ${2} queued") if $1.job_minutes <= 120
6. join()
""",
        (
            _case(
                "over 120 min",
                {"runner": "gha-linux-07"},
                ["cancel_ci_job 88123", "restart_runner_agent gha-linux-07"],
                "gha-linux-07 cancel",
                "gha-linux-07 had been on job 88123 for 214 minutes, so the job was cancelled "
                "and the runner agent restarted; 37 jobs were queued behind it.",
            ),
            _case(
                "120 min or less",
                {"runner": "gha-arm-02"},
                ["notify #ci"],
                "gha-arm-02 18",
                "gha-arm-02 has been on job 88391 for only 18 minutes, so nothing was "
                "cancelled; #ci was told, with 12 jobs queued.",
            ),
        ),
        part="fresh2",
    ),
    Runbook(
        "missed_cron",
        ("last_cron_run", "crond_state", "start_crond", "run_cron_job_now", "open_ticket"),
        """
1. last_cron_run("<host>", "<job>")
2. crond_state("<host>")
3. start_crond("<host>") if $2 != "active"
4. run_cron_job_now("<host>", "<job>") if $3 != None
5. open_ticket($1.owner, "<job>@<host>: ${1.hours_ago} h, exit ${1.exit_code}") if $2 == "active"
6. join()
""",
        (
            _case(
                "crond down",
                {"job": "invoice-reminders", "host": "batch-2"},
                ["start_crond batch-2", "run_cron_job_now batch-2 invoice-reminders"],
                "batch-2 invoice-reminders start",
                "crond was inactive on batch-2 (invoice-reminders last ran 31 hours ago), so "
                "it was started again and invoice-reminders was run by hand.",
            ),
            _case(
                "crond active",
                {"job": "ledger-export", "host": "etl-1"},
                ["open_ticket finance-data"],
                "ledger-export ticket",
                "crond is active on etl-1, so cron is not the problem: ledger-export last ran "
                "52 hours ago (exit code 2); nothing was changed on the host and a ticket was "
                "opened for finance-data.",
            ),
        ),
        part="fresh2",
    ),
    Runbook(
        "noisy_alert",
        ("alert_fire_history", "alert_rule", "create_silence", "open_ticket", "notify"),
        """
1. alert_fire_history("<alert>", days=7)
2. alert_rule("<alert>")
3. create_silence("<alert>", days=7) if $1.fires > 30
4. open_ticket($2.owner, "tune <alert>: ${1.fires} fires, over ${2.threshold}") if $1.fires > 30
5. notify("#alerting", "<alert>: ${1.fires} fires in 7d, ${1.acked_pct}% acked") if $1.fires <= 30
6. join()
""",
        (
            _case(
                "over 30 fires",
                {"alert": "orders-api-gc-pause"},
                ["create_silence orders-api-gc-pause 7", "open_ticket orders"],
                "orders-api-gc-pause 142 silenc",
                "orders-api-gc-pause fired 142 times in 7 days (6% acknowledged), so it was "
                "silenced for 7 days and the orders team got a ticket to tune its 0.2 s "
                "threshold.",
            ),
            _case(
                "30 fires or fewer",
                {"alert": "ceph-osd-latency-p99"},
                ["notify #alerting"],
                "ceph-osd-latency-p99 14",
                "ceph-osd-latency-p99 fired 14 times in 7 days (86% acknowledged), within "
                "budget: nothing was silenced and #alerting was told.",
            ),
        ),
        part="fresh2",
    ),
    Runbook(
        "data_export",
        (
            "customer_profile",
            "customer_data_footprint",
            "start_dsar_export",
            "email_export_link",
            "reply_to_request",
            "register_privacy_request",
        ),
        """
1. customer_profile("<customer>")
2. customer_data_footprint("<customer>")
3. start_dsar_export("<customer>") if $1.identity_verified
4. email_export_link("<customer>", $3) if $3 != None
5. reply_to_request("<request>", "Please verify your identity first") if not $1.identity_verified
6. register_privacy_request("<request>", "<customer>", $2.total_gb)
7. join()
""",
        (
            _case(
                "verified",
                {"request": "PRIV-1931", "customer": "cus_8842"},
                [
                    "start_dsar_export cus_8842",
                    "email_export_link cus_8842 exp_5c19",
                    "register_privacy_request PRIV-1931",
                ],
                "cus_8842 export",
                "cus_8842's identity is verified, so a full export of their 3.4 GB of data "
                "(exp_5c19) was started and its download link emailed to them; PRIV-1931 was "
                "recorded in the privacy register.",
            ),
            _case(
                "not verified",
                {"request": "PRIV-1944", "customer": "cus_2207"},
                ["reply_to_request PRIV-1944", "register_privacy_request PRIV-1944"],
                "cus_2207 verif",
                "cus_2207's identity is not verified, so nothing was exported: PRIV-1944 was "
                "answered asking them to verify their identity first, and recorded in the "
                "privacy register (0.8 GB held).",
            ),
        ),
        part="fresh2",
    ),
    Runbook(
        "crashloop",
        (
            "workload_restarts",
            "previous_container_logs",
            "set_memory_limit",
            "rollout_restart",
            "page_oncall",
        ),
        """
1. workload_restarts("<ns>", "<app>")
2. previous_container_logs("<ns>", "<app>")
3. set_memory_limit("<ns>", "<app>", "2Gi") if $1.last_reason == "OOMKilled"
4. rollout_restart("<ns>", "<app>") if $3 != None
5. page_oncall("<app>", "<app> crashlooping in <ns>: ${2}") if $1.last_reason != "OOMKilled"
6. join()
""",
        (
            _case(
                "OOMKilled",
                {"app": "thumbnailer", "ns": "media"},
                ["set_memory_limit media/thumbnailer 2Gi", "rollout_restart media/thumbnailer"],
                "thumbnailer 2Gi",
                "thumbnailer was OOMKilled (47 restarts at a 512Mi limit), so its memory limit "
                "was raised to 2Gi and its pods were restarted in media.",
            ),
            _case(
                "other crash",
                {"app": "quote-engine", "ns": "pricing"},
                ["page_oncall quote-engine"],
                "quote-engine pag",
                "quote-engine keeps crashing with exit code 1 (panic: PRICING_DB_URL is not "
                "set), which more memory would not fix: its memory limit was left alone and "
                "its on-call was paged.",
            ),
        ),
        part="fresh2",
    ),
]

BY_NAME = {r.name: r for r in RUNBOOKS}
