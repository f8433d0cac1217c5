"""`planweave serve`: the HTTP API (runs, their live events over SSE) and an OpenAI-compatible
endpoint, in front of one runtime.  Needs the `server` extra."""

try:
    import fastapi  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on what is installed
    raise ImportError(
        "planweave's server needs its extra: pip install 'planweave[server]'"
    ) from exc

from .app import ServerConfig, create_app, serve
from .live import Live
from .security import check_bind, is_loopback
from .service import RunService

__all__ = ["Live", "RunService", "ServerConfig", "check_bind", "create_app", "is_loopback", "serve"]
