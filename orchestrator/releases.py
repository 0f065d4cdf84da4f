"""``/agent/releases/channel.json`` and ``/agent/releases/<file>``: the channel agents update from.

``channel.json`` answers the release to run, as its signed manifest, and whether an admin
pinned it::

    {"release": {"manifest": "...", "signature": "..."}, "version": "1.4.0", "pinned": false}

The manifest's ``url`` is relative to the channel, so the artifact is fetched from beside it.
When releases come from the site's registry, the channel names where to pull instead::

    {"registry": {"repository": "reg:5000/flexplane/agent", "digest": "sha256:..."}, "version": "1.4.0",
     "pinned": false}

An agent says in the query which host it is and how its last update went
(``?zone=&node=&running=&result=&to=&message=``): during a staged rollout the answer depends on it
(``orchestrator.services.rollouts``). The query carries no caller identity, so it is only a hint: a
report that would change the rollout (a failed health check halts it; a host running its version
counts toward the soak) is recorded only once that host's agent confirms it over the agents' mTLS
channel, in its own words, within the agents' call timeout. A forged report changes nothing.

No bearer token: agents are not OIDC clients, the files are not secret, and the signature, not
this endpoint, is what an agent trusts (``agent.update``). What to serve is decided in
``orchestrator.services.releases``; failures answer ``{"error": {code, message}}``.
"""

from __future__ import annotations

from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe

from orchestrator.errors import FlexPlaneError, NotFound, Unavailable
from orchestrator.services import releases, rollouts
from orchestrator.services.context import Sources, process_kube


def _error(exc: FlexPlaneError) -> JsonResponse:
    status = 404 if isinstance(exc, NotFound) else 503 if isinstance(exc, Unavailable) else 502
    return JsonResponse({"error": {"code": exc.code, "message": exc.message}}, status=status)


def _no_store(response: HttpResponse) -> HttpResponse:
    """The channel changes when a release is published or pinned: no cache may keep an old answer."""
    response["Cache-Control"] = "no-store"
    return response


@require_safe
def channel(request: HttpRequest) -> HttpResponse:
    report = rollouts.HostReport.from_query(request.GET)
    try:
        document = rollouts.channel_document(Sources(kube=process_kube()), report)
    except FlexPlaneError as exc:
        return _no_store(_error(exc))
    return _no_store(JsonResponse(document))


@require_safe
def release_file(request: HttpRequest, name: str) -> HttpResponseBase:
    try:
        path = releases.release_file(name)
    except FlexPlaneError as exc:
        return _error(exc)
    return FileResponse(path.open("rb"), content_type="application/octet-stream", filename=name)
