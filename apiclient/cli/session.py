"""One run of ``flexplane``: the profile it acts with, the consoles it prints on, and the API client it
opens (once, on first use), as the commands share them through typer's context (``ctx.obj``).

``Environment`` is what a run reaches outside itself: the config folder, the network to the API (a test
gives an in-process ``httpx.WSGITransport``), how often a task is polled, and where output goes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import typer
from rich.console import Console

from apiclient.cli.config import DEFAULT_PROFILE, Profile, Store
from apiclient.cli.output import Column, Output, show
from apiclient.cli.signin import StoredLogin
from apiclient.client import FlexPlane


@dataclass
class Environment:
    store: Store = field(default_factory=Store)
    transport: httpx.BaseTransport | None = None
    poll_interval: float = 1.0
    sleep: Callable[[float], None] = time.sleep
    # The answers' console (stdout) and the rest's (stderr); None: the process's own, when printed.
    out: Console | None = None
    err: Console | None = None


@dataclass
class Session:
    env: Environment
    profile_name: str = DEFAULT_PROFILE
    vdc_override: str | None = None
    _api: FlexPlane | None = None
    _identity: httpx.Client | None = None

    @property
    def out(self) -> Console:
        return self.env.out or Console(soft_wrap=True)

    @property
    def err(self) -> Console:
        return self.env.err or Console(stderr=True, soft_wrap=True)

    @property
    def store(self) -> Store:
        return self.env.store

    def show(self, answer: Any, output: Output, columns: Sequence[Column]) -> None:
        """A command's answer on stdout (all the rest goes to stderr, so a script can pipe it)."""
        show(self.out, answer, output, columns)

    def profile(self) -> Profile:
        return self.store.profile(self.profile_name)

    def verify(self, profile: Profile) -> Any:
        """httpx's ``verify``: the profile's CA file, else the system's trust store."""
        return profile.ca_file or True

    def identity_http(self, profile: Profile) -> httpx.Client:
        """The client the identity provider is called with (tokens, their renewal)."""
        if self._identity is None:
            self._identity = httpx.Client(timeout=30, verify=self.verify(profile))
        return self._identity

    def api(self) -> FlexPlane:
        """The API as the profile's login, in the VDC given (``--vdc``) or the profile's."""
        if self._api is None:
            profile = self.profile()
            if not profile.url:
                raise typer.BadParameter(
                    f"profile {self.profile_name} names no API: run `flexplane login --url https://...`",
                    param_hint="--profile",
                )
            auth = StoredLogin(self.store, self.profile_name, profile, self.identity_http(profile))
            self._api = FlexPlane(
                profile.url,
                auth,
                vdc=self.vdc_override or profile.vdc,
                transport=self.env.transport,
                verify=self.verify(profile),
                poll_interval=self.env.poll_interval,
            )
        return self._api

    def close(self) -> None:
        if self._api is not None:
            self._api.close()
        if self._identity is not None:
            self._identity.close()


def session_of(ctx: typer.Context) -> Session:
    found = ctx.find_object(Session)
    if found is None:
        raise RuntimeError("a command ran outside flexplane's root command")
    return found
