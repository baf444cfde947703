"""Run the server with uvicorn on a socket bound here (so port 0 picks a free port).

Owns binding (127.0.0.1 by default: the server has no authentication), the one startup line
that names the URL actually bound, and the uvicorn settings.
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Callable
from typing import Any

import uvicorn

from replyparse.server.app import ServerConfig, create_app

__all__ = ["bind_socket", "run", "uvicorn_server"]


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: any free port).

    Raises:
        OSError: the address is taken or not available.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)  # room for a burst of concurrent streams (1,000 in bench/run.py)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    """``http://host:port/v1`` of a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def _log_config(log_level: str) -> dict[str, Any]:
    """uvicorn's logging, every line stamped with the time, and the server's own logger
    (``replyparse``: recovered output, upstream failures) on the same handler."""
    settings: dict[str, Any] = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    settings["formatters"]["default"]["fmt"] = "%(asctime)s %(levelprefix)s %(message)s"
    settings["formatters"]["access"]["fmt"] = (
        '%(asctime)s %(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'
    )
    settings["handlers"]["access"]["stream"] = "ext://sys.stderr"  # stdout is for data
    settings["loggers"]["replyparse"] = {
        "handlers": ["default"],
        "level": log_level.upper(),
        "propagate": False,
    }
    return settings


def uvicorn_server(
    config: ServerConfig, *, log_level: str = "warning", stamped: bool = False
) -> uvicorn.Server:
    """A uvicorn server for ``config`` (not started). ``stamped``: configure logging as
    ``replyparse serve`` does (timestamps, the server's logger, an access line per request
    from ``log_level`` info down); otherwise uvicorn's own logging."""
    settings = uvicorn.Config(
        create_app(config),
        log_level=log_level,
        log_config=_log_config(log_level) if stamped else uvicorn.config.LOGGING_CONFIG,
        ws="none",
        lifespan="on",
        access_log=stamped and log_level in ("info", "debug", "trace"),
    )
    return uvicorn.Server(settings)


def run(
    config: ServerConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "warning",
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve until interrupted.

    Args:
        config: what to serve.
        host: the address to bind; 127.0.0.1 by default (loopback only).
        port: the port; 0 picks a free one.
        log_level: the log level: ``info`` and below add an access line per request;
            every line carries its time.
        announce: called once with the base URL (``http://127.0.0.1:8000/v1``) when bound.
    """
    sock = bind_socket(host, port)
    if announce is not None:
        announce(base_url(sock))
    uvicorn_server(config, log_level=log_level, stamped=True).run(sockets=[sock])
