"""Running the preflight's checks (:mod:`orchestrator.services.doctor`): all at once, each under the same
deadline, and saying what they found as a table or JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from kubernetes.client.exceptions import ApiException

from orchestrator.services.doctor.cluster import (
    cert_manager,
    cluster_api,
    ingress_class,
    kubernetes,
    load_balancer,
    storage,
)
from orchestrator.services.doctor.findings import (
    Check,
    ClusterUnreachable,
    Finding,
    Probe,
    Status,
    blocker,
)
from orchestrator.services.doctor.neighbours import agent_registry, dns, oidc_issuer, zitadel
from orchestrator.sources.kube import status_message

# Seconds each check may take, all running at once.
DEADLINE = 15.0

CHECKS: tuple[tuple[str, Check], ...] = (
    ("kubernetes", kubernetes),
    ("cluster-api", cluster_api),
    ("cert-manager", cert_manager),
    ("load-balancer", load_balancer),
    ("ingress-class", ingress_class),
    ("storage", storage),
    ("dns", dns),
    ("oidc-issuer", oidc_issuer),
    ("zitadel", zitadel),
    ("agent-registry", agent_registry),
)


# ------------------------------------------------------------------------------------ running


def run_one(name: str, check: Check, probe: Probe) -> Finding:
    """A check's finding; a failure it did not expect is a blocker naming it (the cluster's message)."""
    try:
        return check(probe)
    except ApiException as exc:
        said = status_message(exc.body) or f"{exc.status} {exc.reason}"
        return blocker(
            name, f"the management cluster refused: {said}", "check the doctor's RBAC, or the kubeconfig"
        )
    except ClusterUnreachable as exc:
        if name != "kubernetes":  # which says why, once
            return blocker(
                name, "not checked: no client for the management cluster", "see the kubernetes check"
            )
        return blocker(
            name, exc.message, "set FLEXPLANE_KUBECONFIG, or run in the cluster with a ServiceAccount"
        )
    except Exception as exc:  # any other failure is the check's finding, never a crash
        return blocker(name, f"{type(exc).__name__}: {exc}", "an unexpected failure: see its message")


def examine(
    probe: Probe, checks: Sequence[tuple[str, Check]] = CHECKS, deadline: float = DEADLINE
) -> list[Finding]:
    """Every check at once, in their order; one that takes longer than ``deadline`` is a blocker."""
    pool = ThreadPoolExecutor(max_workers=max(1, len(checks)), thread_name_prefix="doctor")
    started = time.monotonic()
    futures = [(name, pool.submit(run_one, name, check, probe)) for name, check in checks]
    findings = []
    for name, future in futures:
        try:
            findings.append(future.result(timeout=max(0.0, started + deadline - time.monotonic())))
        except FutureTimeout:
            findings.append(
                blocker(
                    name,
                    f"no answer within {deadline:g} s",
                    "what it asks answers too slowly: see the others",
                )
            )
    # A check past its deadline is left to finish on its own: the command is done with it.
    pool.shutdown(wait=False, cancel_futures=True)
    return findings


def blockers(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.status is Status.BLOCKER]


def table(findings: Sequence[Finding]) -> str:
    """The findings as the command prints them: check, status, what was found, and what to do."""
    width = max([len(f.check) for f in findings] + [5])
    lines = [f"{'CHECK':<{width}}  STATUS   FOUND"]
    for f in findings:
        lines.append(f"{f.check:<{width}}  {f.status.upper():<7}  {f.found}")
        if f.todo and f.status is not Status.OK:
            lines.append(f"{'':<{width}}           do: {f.todo}")
    return "\n".join(lines)


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps(
        {"findings": [f.as_json() for f in findings], "blockers": len(blockers(findings))}, indent=2
    )
