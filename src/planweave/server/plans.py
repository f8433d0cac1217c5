"""Named plans over REST (`runbooks`): anyone the guard lets in may list them, read one and run
one with its parameters (the run is theirs, as a question's is); only an admin (the operator
too) may store a new version from text.  A runbook is compiled with the CLI or the Python API:
that costs a planner call, which the server's users do not start."""

# No `from __future__ import annotations`: FastAPI reads the handlers' annotations.

from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, ConfigDict, Field

from ..runbooks import MAX_PLAN_CHARS, NamedPlan, NamedPlans
from .api import Caller
from .service import RunService

__all__ = ["plans_router"]


class PlanRunRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Each parameter's value: of its type, or text that reads as it ("90" for an int).
    params: dict[str, Any] = Field(default_factory=dict)
    version: int | None = Field(default=None, ge=1)


class PlanSaveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    plan: str = Field(min_length=1, max_length=MAX_PLAN_CHARS)
    # name -> type; none: the latest version's (or the plan's placeholders, typed by use)
    params: dict[str, Literal["str", "int", "float", "bool"]] | None = None


def plans_router(service: RunService) -> APIRouter:
    router = APIRouter()

    def store() -> NamedPlans:
        return service.runtime.named_plans_store()

    def found(name: str, version: int | None) -> NamedPlan:
        plans = store()
        if plans.table.get(name, version) is None:
            which = name if version is None else f"{name} version {version}"
            raise HTTPException(404, f"no named plan {which}")
        return plans.get(name, version)

    @router.get("/plans")
    async def list_plans(user: Caller) -> dict[str, Any]:
        """The named plans, each at its latest version, by name."""
        return {"plans": [p.to_dict() for p in store().all()]}

    @router.get("/plans/{name}")
    async def show_plan(
        name: str, user: Caller, version: Annotated[int | None, Query(ge=1)] = None
    ) -> dict[str, Any]:
        """One named plan (its latest version, or `version`), with its tasks for review."""
        plan = found(name, version)
        return plan.to_dict() | {"tasks": store().outline(plan)}

    @router.put("/plans/{name}", status_code=201)
    async def save_plan(name: str, request: PlanSaveRequest, user: Caller) -> dict[str, Any]:
        """Store `plan` as the next version of `name`, validated as a compiled one; admins
        only."""
        if not user.admin:
            raise HTTPException(403, "only an admin may store a named plan")
        return store().save(name, request.plan, params=request.params).to_dict()

    @router.post("/plans/{name}/runs", status_code=202)
    async def run_plan(name: str, request: PlanRunRequest, user: Caller) -> dict[str, Any]:
        """Run the named plan with `params` (no planner call), the caller's run; its id comes
        back once the journal has it.  A missing, unknown or mistyped parameter: 400."""
        plans = store()
        plan = found(name, request.version)
        plans.start(plan, request.params)  # refused here, before any run is recorded
        run_id = await service.start_plan(name, plan.version, request.params, user=user.name)
        return {"id": run_id, "status": "running", "plan": name, "version": plan.version}

    return router
