"""How `mvp serve` meets the network, in one validated model (docs/security.md, "Deployment"): which
proxies' forwarded headers are believed, which host names the server answers to, and the per-user
bounds on concurrent requests and slow clients. Read from the environment once at start (`from_env`);
a bad value stops the start with one line."""
from __future__ import annotations

import ipaddress
import os
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mvp_core.errors import UserError

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")
WILDCARD_BINDS = ("0.0.0.0", "::", "")
_HOST_RE = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$|^\[[0-9a-f:.]+\]$")


class ServeSettings(BaseModel):
    """The server's network settings. Environment variables: MVP_TRUSTED_PROXIES, MVP_ALLOWED_HOSTS
    (comma-separated), and MVP_<FIELD> for the numbers (e.g. MVP_HEADER_TIMEOUT_S=5)."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    trusted_proxies: tuple[str, ...] = Field(
        (), description="addresses or networks (CIDR) whose X-Forwarded-For/-Proto are believed; empty: "
                        "nobody's (a local client could otherwise pick the address its logins count against)")
    allowed_hosts: tuple[str, ...] = Field(
        LOCAL_HOSTS, description="host names (Host header, without port) the server answers to; others get "
                                 "400, so a DNS-rebinding page cannot talk to it under its own name. "
                                 "`*.example.org` allows subdomains; IPv6 in brackets")
    max_requests_per_user: int = Field(
        8, ge=1, le=1000, description="requests one user (or, logged out, one address) may have in flight; more "
                                      "wait up to `queue_wait_s`, then get 429")
    max_body_bytes_per_user: int = Field(
        8 * 1024 * 1024, ge=64 * 1024, description="request-body bytes one user may have in flight at once "
                                                    "(declared Content-Length, or 2 MiB for a chunked body)")
    max_queued_bytes_per_user: int = Field(
        8 * 1024 * 1024, ge=64 * 1024, description="request-body bytes of the Gradio events one user has "
                                                    "joined and that have not finished (they wait in the "
                                                    "page's queue with their payload); a join over it waits "
                                                    "up to `queue_wait_s`, then gets 429")
    queue_wait_s: float = Field(10.0, ge=0, le=300, description="how long a request over the per-user "
                                                                "bounds waits for a slot before its 429")
    header_timeout_s: float = Field(10.0, gt=0, le=300, description="a connection must send its request "
                                                                    "headers within this; else it is closed")
    body_timeout_s: float = Field(30.0, gt=0, le=600, description="longest pause between two chunks of a "
                                                                  "request body; a stalled upload gets 408")

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v):
        for item in v:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an address or network (e.g. 127.0.0.1, 10.0.0.0/8)") from None
        return v

    @field_validator("allowed_hosts")
    @classmethod
    def _hosts(cls, v):
        out = tuple(h.strip().lower() for h in v)
        for h in out:
            if h != "*" and not _HOST_RE.match(h):
                raise ValueError(f"{h!r} is not a host name (no scheme, no port, no path: e.g. studio.example.org)")
        if not out:
            raise ValueError("at least one host name is needed")
        return out

    @classmethod
    def from_env(cls, bind_host: str = "127.0.0.1", env: dict | None = None) -> "ServeSettings":
        """The settings from MVP_TRUSTED_PROXIES and MVP_ALLOWED_HOSTS; without the latter, the local
        names plus the host `mvp serve --host` binds to (when it is one address, not a wildcard)."""
        env = os.environ if env is None else env

        def listed(name: str) -> tuple[str, ...]:
            return tuple(x.strip() for x in env.get(name, "").split(",") if x.strip())
        hosts = listed("MVP_ALLOWED_HOSTS")
        if not hosts:
            bind = f"[{bind_host}]" if ":" in bind_host else bind_host
            hosts = LOCAL_HOSTS + (() if bind_host in WILDCARD_BINDS or bind in LOCAL_HOSTS else (bind,))
        numbers = {k: env[f"MVP_{k.upper()}"] for k in cls.model_fields
                   if k not in ("trusted_proxies", "allowed_hosts") and env.get(f"MVP_{k.upper()}", "").strip()}
        try:
            return cls(trusted_proxies=listed("MVP_TRUSTED_PROXIES"), allowed_hosts=hosts, **numbers)
        except ValidationError as e:
            err = e.errors()[0]
            raise UserError(f"MVP_{str(err['loc'][0]).upper()}: {err['msg'].removeprefix('Value error, ')}") from None

    def host_allowed(self, host: str) -> bool:
        """Is `host` (a Host header's host part, lower case) one of the allowed names?"""
        return any(p == "*" or host == p or (p.startswith("*.") and host.endswith(p[1:])) for p in self.allowed_hosts)
