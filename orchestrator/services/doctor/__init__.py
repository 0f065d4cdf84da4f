"""The management plane's preflight (``manage.py doctor``, and the flextenant chart's doctor Job): what the
platform needs of the management cluster and its neighbours, each finding with what to do.

An operator runs it before installing (is this cluster fit?) and after (is it wired?). Each check is a
function of a :class:`Probe` (the settings, and the management cluster's API) returning a
:class:`Finding`; :func:`examine` runs them all at once, each under the same deadline, so a neighbour
that does not answer costs its own check only. A **blocker** is something the platform cannot run
without, or a part that is there but wrong; a **warning** is a part that is missing but not needed until
a feature uses it, or that cannot be seen from here. The command exits 1 on any blocker, never on
warnings.

- ``kubernetes``: the API server answers, version 1.30 or newer (blocker). The chart's admission fence
  is a ValidatingAdmissionPolicy, ``admissionregistration.k8s.io/v1``, which Kubernetes serves from
  1.30; turning the fence off (``rbac.fence=false``) would leave the orchestrator able to bind itself
  to its VDC role, which reads Secrets, in any namespace.
- ``cluster-api``: Cluster API core's CRDs serve v1beta2, the contract the orchestrator and the providers
  write (blocker when present but older); the clusterctl Provider object names core's version, 1.11 or
  newer (the first with v1beta2). Core missing altogether is a warning: VMs and networks work without
  it, tenant Kubernetes clusters wait for ``clusterctl init``.
- ``cert-manager``: its CRDs (blocker: the documented install issues the agents' client certificates
  with it, and their rotation relies on its renewals), the platform CA's Issuer (missing: a warning,
  step 5 of the install makes it; not Ready: a blocker) and, if named, the ClusterIssuer of the
  Ingress's certificates.
- ``load-balancer``: a Service of type LoadBalancer with an address (the mesh hub's and the hosted
  control planes' Services need one); Services waiting for an address with none given anywhere is a
  blocker, no such Service yet a warning. ``--no-load-balancer`` (the NodePort path) skips it.
- ``ingress-class``: an IngressClass for the portal's Ingress (a warning when none).
- ``storage``: a default StorageClass (Zitadel's PostgreSQL and the tenant clusters' etcds claim volumes
  of the default class): blocker.
- ``dns``: the host names in the settings resolve from here; a blocker for those the orchestrator dials
  (the issuer, Zitadel, the agent registry, the mesh proxy), a warning for those nodes and users dial
  (the portal's hosts, the enrollment URL, the hub's endpoint), which may resolve differently there.
- ``oidc-issuer``: the issuer's discovery document answers (blocker: ``/readyz`` waits for it).
- ``zitadel``: the service user's key is accepted and it can read the project (blocker; no key
  configured is a warning: access management then answers UNAVAILABLE).
- ``agent-registry``: the agent releases' repository answers the nodes' pull account (blocker when
  configured).
"""

from __future__ import annotations

from orchestrator.services.doctor.cluster import (
    cert_manager,
    cluster_api,
    ingress_class,
    kubernetes,
    load_balancer,
    storage,
)
from orchestrator.services.doctor.examine import CHECKS, DEADLINE, as_json, blockers, examine, run_one, table
from orchestrator.services.doctor.findings import (
    DEFAULT_ISSUER,
    Finding,
    Probe,
    Site,
    Status,
    blocker,
    ok,
    url_host,
    warning,
)
from orchestrator.services.doctor.neighbours import agent_registry, dns, oidc_issuer, zitadel

__all__ = [
    "CHECKS",
    "DEADLINE",
    "DEFAULT_ISSUER",
    "Finding",
    "Probe",
    "Site",
    "Status",
    "agent_registry",
    "as_json",
    "blocker",
    "blockers",
    "cert_manager",
    "cluster_api",
    "dns",
    "examine",
    "ingress_class",
    "kubernetes",
    "load_balancer",
    "oidc_issuer",
    "ok",
    "run_one",
    "storage",
    "table",
    "url_host",
    "warning",
    "zitadel",
]
