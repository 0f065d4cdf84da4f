"""A test-only stand-in for Cluster API core's controllers and the kubeadm bootstrap provider (CABPK).

Never shipped: on a real management cluster ``clusterctl init`` installs Cluster API core and CABPK (here
the release :data:`devstack.kube.crds.CLUSTER_API_VERSION`, CRDs labelled with the v1beta2 contract), and
flex.plane's providers (``providers/``) work with those. Here, where neither can run, :class:`CapiCore`
plays their part against the devstack's Kubernetes emulator, through the API only (the official client and
a kubeconfig), following Cluster API's v1beta2 contracts field by field:

- Cluster (core's cluster controller): finalizer ``cluster.cluster.x-k8s.io``; owns its infrastructure
  cluster and control plane (ownerReferences); copies ``spec.controlPlaneEndpoint`` from them; reports
  ``status.initialization.infrastructureProvisioned`` / ``controlPlaneInitialized``, ``failureDomains``,
  ``phase`` and the control plane's and workers' replica counts. Deleting it deletes its MachineDeployments
  and Machines, then the control plane, then the infrastructure cluster, each gone before the next, and
  only then lets the Cluster go.
- MachineDeployment (core's MachineDeployment and MachineSet controllers, without MachineSets: the Machines
  are owned by the MachineDeployment directly): Machines ``<md>-<random5>`` labelled
  ``cluster.x-k8s.io/cluster-name`` and ``cluster.x-k8s.io/deployment-name``, spread across the Cluster's
  failure domains; the infrastructure machine cloned from the ProxmoxMachineTemplate and the KubeadmConfig
  from the KubeadmConfigTemplate (``cluster.x-k8s.io/cloned-from-name`` / ``-groupkind``), both named after
  and owned by the Machine. Scaling down deletes Machines annotated ``cluster.x-k8s.io/delete-machine``
  first, then by ``spec.deletion.order`` (``Random`` unless set, as core's default). A changed version
  or template rolls the Machines with maxSurge 1 and maxUnavailable 0: a new Machine up, then an old one down.
- Machine (core's machine controller): finalizer ``machine.cluster.x-k8s.io``; copies the bootstrap
  ``dataSecretName``, the infrastructure machine's ``spec.providerID``, ``status.addresses`` and
  ``failureDomain``; ``phase`` Pending, Provisioning, Provisioned, Deleting. Deleting a Machine deletes
  its KubeadmConfig and infrastructure machine and waits until they are gone (the infrastructure
  provider's finalizer removes the VM first).
- Templates: the Cluster becomes an owner of the templates its MachineDeployments use, as core does.
- Garbage collection, which the emulator lacks: an object whose owners (ownerReferences) are all gone is
  deleted, as Kubernetes' garbage collector does.
- ``watch_filter``: as core's ``--watch-filter``, only objects labelled ``cluster.x-k8s.io/watch-filter``
  with that value are seen, and what it makes carries the label (a test's own, beside others' objects).
- CABPK (:mod:`devstack.capi_bootstrap`): a worker's bootstrap Secret once the control plane is initialized.

- Pausing: a Cluster with ``spec.paused`` or the ``cluster.x-k8s.io/paused`` annotation is left alone, with
  its MachineDeployments, Machines and KubeadmConfigs, as is any of those so annotated (a restore, a
  ``clusterctl move``); the garbage collection, Kubernetes' own, goes on.

What it does NOT do: MachineSets, MachinePools, ClusterClass/topology, MachineHealthChecks, control-plane
Machines (the hosted control plane has none), draining or deleting Nodes (no kubelet runs here, so no
Machine ever has a ``nodeRef`` or reaches ``Running``: ``Provisioned`` is the last phase, and a Machine
counts as available once provisioned), remediation, in-place updates, conversion of older API versions,
webhooks (no defaulting or validation of the objects), or refreshing bootstrap tokens.

It runs in the process that starts it, as threads (:class:`devstack.controller_loop.ControllerLoop`):
watches of its kinds mark a namespace dirty, one worker reconciles the namespace, every 5 s a resync.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import time
from collections.abc import Hashable, Iterable
from pathlib import Path

from kubernetes.config import new_client_from_config

from devstack import capi_bootstrap
from devstack.capi_kube import (
    BOOTSTRAP_GROUP,
    CORE_GROUP,
    CORE_VERSION,
    Body,
    Kube,
    conditions,
    meta,
    owner_reference,
    ref_of,
)
from devstack.controller_loop import ControllerLoop, Watched
from orchestrator.sources.kube_objects import (
    CLUSTER,
    CLUSTER_NAME_LABEL,
    DEPLOYMENT_NAME_LABEL,
    FLEX_CONTROL_PLANE,
    KUBEADM_CONFIG,
    KUBEADM_CONFIG_TEMPLATE,
    MACHINE,
    MACHINE_DEPLOYMENT,
    PAUSED_ANNOTATION,
    PROXMOX_CLUSTER,
    PROXMOX_MACHINE,
    PROXMOX_MACHINE_TEMPLATE,
    VDC_LABEL,
)

log = logging.getLogger(__name__)

TEMPLATE_HASH_LABEL = "machine-template-hash"
CLONED_FROM_NAME = "cluster.x-k8s.io/cloned-from-name"
CLONED_FROM_GROUPKIND = "cluster.x-k8s.io/cloned-from-groupkind"
DELETE_MACHINE = "cluster.x-k8s.io/delete-machine"
CLUSTER_FINALIZER = "cluster.cluster.x-k8s.io"
MACHINE_FINALIZER = "machine.cluster.x-k8s.io"
# The lower-case letters and digits Kubernetes' random name suffixes use (no vowels, no look-alikes).
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# The stand-in's own: when it made a Machine, in nanoseconds. creationTimestamp has whole seconds, and a
# test makes several Machines a second: their order (for deletion.order Newest/Oldest) is this one's.
CREATED_ANNOTATION = "devstack.flexplane.io/created-ns"

WATCHED = [
    Watched(r.group, r.version, r.plural)
    for r in (
        CLUSTER,
        MACHINE_DEPLOYMENT,
        MACHINE,
        KUBEADM_CONFIG,
        PROXMOX_CLUSTER,
        PROXMOX_MACHINE,
        FLEX_CONTROL_PLANE,
    )
]


class CapiCore:
    """Cluster API core's controllers and CABPK for the namespaces that hold Clusters (see the module)."""

    def __init__(
        self, kubeconfig: Path | str, *, resync: float = 5.0, watch_filter: str | None = None
    ) -> None:
        self._api = new_client_from_config(config_file=str(kubeconfig))
        self.kube = Kube(self._api, watch_filter)
        self.loop = ControllerLoop(
            "capi-core", self._api, WATCHED, self._namespace_of, self._reconcile, resync=resync
        )

    def start(self) -> CapiCore:
        self.kube.install_core_crds()
        self.loop.start()
        return self

    def stop(self) -> None:
        self.loop.stop()
        self._api.close()

    @staticmethod
    def _namespace_of(obj: Body) -> Hashable | None:
        namespace: str | None = obj.get("metadata", {}).get("namespace")
        return namespace

    def _reconcile(self, key: Hashable) -> None:
        assert isinstance(key, str)
        Namespace(self.kube, key).reconcile()


class Namespace:
    """One pass over a namespace: its Clusters, MachineDeployments, Machines and CABPK's KubeadmConfigs."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.ns = namespace
        self.clusters = kube.list_objects(
            CORE_GROUP, "clusters", namespace
        )  # only the watch filter's, if any
        self.deployments = kube.list_objects(CORE_GROUP, "machinedeployments", namespace)
        self.machines = kube.list_objects(CORE_GROUP, "machines", namespace)
        self.configs = kube.list_objects(BOOTSTRAP_GROUP, "kubeadmconfigs", namespace)

    def reconcile(self) -> None:
        """Every object of the namespace; a step that waits (:class:`Pending`) does not hold up the others.
        A paused cluster's objects, and any paused object, are left alone."""
        waiting: list[Pending] = []
        paused = {meta(c)["name"] for c in self.clusters if _paused(c) or (c.get("spec") or {}).get("paused")}
        self.deployments = [d for d in self.deployments if not _paused(d)]
        for cluster in self.clusters:
            if meta(cluster)["name"] in paused:
                continue
            try:
                if meta(cluster).get("deletionTimestamp"):
                    self.delete_cluster(cluster)
                else:
                    self.reconcile_cluster(cluster)
            except Pending as pending:
                waiting.append(pending)
        for machine in self.machines:
            if _paused(machine) or machine.get("spec", {}).get("clusterName") in paused:
                continue
            try:
                self.reconcile_machine(machine)
            except Pending as pending:
                waiting.append(pending)
        for config in self.configs:
            if _paused(config) or (meta(config).get("labels") or {}).get(CLUSTER_NAME_LABEL) in paused:
                continue
            capi_bootstrap.reconcile_config(self.kube, config, self.machines, self.clusters)
        self.collect_garbage()
        if waiting:
            raise waiting[0]  # the loop comes back shortly

    # ------------------------------------------------------------------ Cluster

    def reconcile_cluster(self, cluster: Body) -> None:
        name = meta(cluster)["name"]
        if CLUSTER_FINALIZER not in meta(cluster).get("finalizers", []):
            finalizers = [*meta(cluster).get("finalizers", []), CLUSTER_FINALIZER]
            cluster = self.kube.patch(
                CORE_GROUP, "clusters", self.ns, name, {"metadata": {"finalizers": finalizers}}
            )
        spec = cluster.get("spec", {})
        infra = self.kube.get_ref(self.ns, spec.get("infrastructureRef"))
        control_plane = self.kube.get_ref(self.ns, spec.get("controlPlaneRef"))
        for obj, ref in (
            (infra, spec.get("infrastructureRef")),
            (control_plane, spec.get("controlPlaneRef")),
        ):
            if obj is not None and ref is not None:
                self.kube.ensure_owner(obj, ref, cluster)
        for deployment in self.deployments_of(name):
            self.kube.ensure_owner(deployment, ref_of(deployment), cluster)

        endpoint = _endpoint(infra) or _endpoint(control_plane)
        if endpoint and spec.get("controlPlaneEndpoint") != endpoint:
            cluster = self.kube.patch(
                CORE_GROUP, "clusters", self.ns, name, {"spec": {"controlPlaneEndpoint": endpoint}}
            )

        infra_status = (infra or {}).get("status", {})
        cp_status = (control_plane or {}).get("status", {})
        provisioned = bool(infra_status.get("initialization", {}).get("provisioned"))
        initialized = bool(cp_status.get("initialization", {}).get("controlPlaneInitialized"))
        workers = [m for m in self.machines if m.get("spec", {}).get("clusterName") == name]
        available = [m for m in workers if _available(m)]
        status: Body = {
            "initialization": {
                "infrastructureProvisioned": provisioned,
                "controlPlaneInitialized": initialized,
            },
            "phase": "Provisioned" if provisioned and endpoint else ("Provisioning" if infra else "Pending"),
            "controlPlane": {
                "desiredReplicas": (control_plane or {}).get("spec", {}).get("replicas"),
                "replicas": cp_status.get("replicas"),
                "readyReplicas": cp_status.get("readyReplicas"),
                "availableReplicas": cp_status.get("availableReplicas"),
                "upToDateReplicas": cp_status.get("upToDateReplicas"),
            },
            "workers": {
                "desiredReplicas": sum(_replicas(d) for d in self.deployments_of(name)),
                "replicas": len(workers),
                "readyReplicas": len(available),
                "availableReplicas": len(available),
            },
            "conditions": conditions(
                cluster,
                InfrastructureReady=(provisioned, "Provisioned" if provisioned else "NotProvisioned"),
                ControlPlaneInitialized=(initialized, "Initialized" if initialized else "NotInitialized"),
                ControlPlaneAvailable=(_is_true(cp_status, "Available"), "FromControlPlane"),
            ),
            "observedGeneration": meta(cluster).get("generation"),
        }
        if "failureDomains" in infra_status:
            status["failureDomains"] = infra_status["failureDomains"]
        self.kube.patch_status(cluster, status)
        cluster["status"] = {**cluster.get("status", {}), **status}

        for deployment in self.deployments_of(name):
            if not meta(deployment).get("deletionTimestamp"):
                self.reconcile_deployment(cluster, deployment)

    def delete_cluster(self, cluster: Body) -> None:
        """Core's order: workers, then the control plane, then the infra cluster, then the Cluster."""
        name = meta(cluster)["name"]
        self.kube.patch_status(cluster, {"phase": "Deleting"})
        deployments = self.deployments_of(name)
        workers = [m for m in self.machines if m.get("spec", {}).get("clusterName") == name]
        for obj in (*deployments, *workers):
            self.kube.delete_object(obj)
        if deployments or workers:
            raise Pending(f"cluster {name}: waiting for its workers to go")
        spec = cluster.get("spec", {})
        for ref in (spec.get("controlPlaneRef"), spec.get("infrastructureRef")):
            part = self.kube.get_ref(self.ns, ref)
            if part is not None:
                self.kube.delete_object(part)
                raise Pending(f"cluster {name}: waiting for its {part['kind']} to go")
        finalizers = [f for f in meta(cluster).get("finalizers", []) if f != CLUSTER_FINALIZER]
        self.kube.patch(CORE_GROUP, "clusters", self.ns, name, {"metadata": {"finalizers": finalizers}})

    def deployments_of(self, cluster: str) -> list[Body]:
        return [d for d in self.deployments if d.get("spec", {}).get("clusterName") == cluster]

    # ------------------------------------------------------------------ MachineDeployment

    def reconcile_deployment(self, cluster: Body, deployment: Body) -> None:
        md = meta(deployment)["name"]
        # Core makes the Cluster an owner of the templates a MachineDeployment uses: they go with it.
        template_spec = deployment["spec"]["template"]["spec"]
        for ref in (template_spec["infrastructureRef"], template_spec["bootstrap"]["configRef"]):
            template = self.kube.get_ref(self.ns, ref)
            if template is not None:
                self.kube.ensure_owner(template, ref, cluster)
        desired = _replicas(deployment)
        template_hash = _template_hash(deployment)
        mine = [m for m in self.machines if _owned_by(m, deployment)]
        live = [m for m in mine if not meta(m).get("deletionTimestamp")]
        new = [m for m in live if meta(m).get("labels", {}).get(TEMPLATE_HASH_LABEL) == template_hash]
        old = [m for m in live if m not in new]
        ready = bool(cluster.get("status", {}).get("initialization", {}).get("infrastructureProvisioned"))

        if ready and old:  # rolling: maxSurge 1, maxUnavailable 0
            if len(new) < desired and len(live) < desired + 1:
                live.append(self.create_machine(cluster, deployment, template_hash, live))
            available = [m for m in live if _available(m)]
            unavailable_old = [m for m in old if not _available(m)]
            if unavailable_old:
                self.kube.delete_object(unavailable_old[0])
            elif len(available) > desired or (len(new) >= desired and all(_available(m) for m in new)):
                self.kube.delete_object(_deletion_order(deployment, old)[0])
        elif ready and len(live) < desired:
            for _ in range(desired - len(live)):
                live.append(self.create_machine(cluster, deployment, template_hash, live))
        elif len(live) > desired:
            for machine in _deletion_order(deployment, live)[: len(live) - desired]:
                self.kube.delete_object(machine)
                live.remove(machine)

        available = [m for m in live if _available(m)]
        up_to_date = [m for m in live if meta(m).get("labels", {}).get(TEMPLATE_HASH_LABEL) == template_hash]
        rolling = len(up_to_date) < len(live)
        if len(live) < desired:
            phase = "ScalingUp"
        elif len(live) > desired:
            phase = "ScalingDown"
        else:
            phase = "Running"
        status = {
            "replicas": len(live),
            "readyReplicas": len(available),
            "availableReplicas": len(available),
            "upToDateReplicas": len(up_to_date),
            "phase": phase,
            "selector": ",".join(f"{k}={v}" for k, v in sorted(_selector(deployment).items())),
            "observedGeneration": meta(deployment).get("generation"),
            "conditions": conditions(
                deployment,
                Available=(
                    len(available) >= desired,
                    "Available" if len(available) >= desired else "NotAvailable",
                ),
                RollingOut=(rolling, "RollingOut" if rolling else "NotRollingOut"),
                ScalingUp=(len(live) < desired, "ScalingUp" if len(live) < desired else "NotScalingUp"),
                ScalingDown=(len(live) > desired, "ScalingDown" if len(live) > desired else "NotScalingDown"),
            ),
        }
        self.kube.patch_status(deployment, status)
        log.debug("machinedeployment %s/%s: %s", self.ns, md, status)

    def create_machine(self, cluster: Body, deployment: Body, template_hash: str, live: list[Body]) -> Body:
        """A Machine of the deployment, then its infra machine and KubeadmConfig cloned from templates."""
        md = meta(deployment)["name"]
        template = deployment["spec"]["template"]
        name = f"{md}-{''.join(random.choices(SUFFIX_ALPHABET, k=5))}"  # noqa: S311 - a name, no secret
        labels = {
            **template.get("metadata", {}).get("labels", {}),
            CLUSTER_NAME_LABEL: deployment["spec"]["clusterName"],
            DEPLOYMENT_NAME_LABEL: md,
            TEMPLATE_HASH_LABEL: template_hash,
            **self.kube.filter_labels,
        }
        if VDC_LABEL in meta(deployment).get("labels", {}):
            labels[VDC_LABEL] = meta(deployment)["labels"][VDC_LABEL]
        spec = template["spec"]
        infra_template_ref = spec["infrastructureRef"]
        bootstrap_template_ref = spec["bootstrap"]["configRef"]
        failure_domain = spec.get("failureDomain") or _spread(cluster, live)
        machine_spec: Body = {
            "clusterName": deployment["spec"]["clusterName"],
            "version": spec.get("version"),
            "bootstrap": {
                "configRef": {"apiGroup": BOOTSTRAP_GROUP, "kind": "KubeadmConfig", "name": name},
            },
            "infrastructureRef": {
                "apiGroup": infra_template_ref["apiGroup"],
                "kind": infra_template_ref["kind"].removesuffix("Template"),
                "name": name,
            },
        }
        if failure_domain:
            machine_spec["failureDomain"] = failure_domain
        machine = self.kube.create(
            CORE_GROUP,
            "machines",
            self.ns,
            {
                "apiVersion": f"{CORE_GROUP}/{CORE_VERSION}",
                "kind": "Machine",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {
                        **template.get("metadata", {}).get("annotations", {}),
                        CREATED_ANNOTATION: str(time.time_ns()),
                    },
                    "ownerReferences": [owner_reference(deployment, controller=True)],
                    "finalizers": [MACHINE_FINALIZER],
                },
                "spec": machine_spec,
            },
        )
        self.machines.append(machine)
        self.clone(machine, infra_template_ref, labels)
        self.clone(machine, bootstrap_template_ref, labels)
        return machine

    def clone(self, machine: Body, template_ref: Body, labels: dict[str, str]) -> None:
        """The object a Machine references, cloned from its template (the template's ``spec.template``)."""
        template = self.kube.get_ref(self.ns, template_ref)
        if template is None:
            raise Pending(f"{template_ref['kind']} {template_ref['name']} not found")
        group, kind = template_ref["apiGroup"], template_ref["kind"]
        inner = template.get("spec", {}).get("template", {})
        body = {
            "apiVersion": template["apiVersion"],
            "kind": kind.removesuffix("Template"),
            "metadata": {
                "name": meta(machine)["name"],
                "labels": {**inner.get("metadata", {}).get("labels", {}), **labels},
                "annotations": {
                    **inner.get("metadata", {}).get("annotations", {}),
                    CLONED_FROM_NAME: template_ref["name"],
                    CLONED_FROM_GROUPKIND: f"{kind}.{group}",
                },
                "ownerReferences": [owner_reference(machine, controller=True)],
            },
            "spec": json.loads(json.dumps(inner.get("spec", {}))),
        }
        self.kube.create(group, self.kube.plural(group, body["kind"]), self.ns, body, exist_ok=True)

    # ------------------------------------------------------------------ Machine

    def reconcile_machine(self, machine: Body) -> None:
        spec = machine.get("spec", {})
        name = meta(machine)["name"]
        config = self.kube.get_ref(self.ns, spec.get("bootstrap", {}).get("configRef"))
        infra = self.kube.get_ref(self.ns, spec.get("infrastructureRef"))
        if meta(machine).get("deletionTimestamp"):
            self.kube.patch_status(machine, {"phase": "Deleting"})
            for obj in (config, infra):
                if obj is not None:
                    self.kube.delete_object(obj)
            if config is not None or infra is not None:
                return  # back when they are gone (their watches mark the namespace)
            finalizers = [f for f in meta(machine).get("finalizers", []) if f != MACHINE_FINALIZER]
            self.kube.patch(CORE_GROUP, "machines", self.ns, name, {"metadata": {"finalizers": finalizers}})
            return
        patch: Body = {}
        data_secret = (config or {}).get("status", {}).get("dataSecretName")
        if data_secret and spec.get("bootstrap", {}).get("dataSecretName") != data_secret:
            patch["bootstrap"] = {"dataSecretName": data_secret}
        infra_spec = (infra or {}).get("spec", {})
        infra_status = (infra or {}).get("status", {})
        if infra_spec.get("providerID") and spec.get("providerID") != infra_spec["providerID"]:
            patch["providerID"] = infra_spec["providerID"]
        if infra_status.get("failureDomain") and not spec.get("failureDomain"):
            patch["failureDomain"] = infra_status["failureDomain"]
        if patch:
            machine = self.kube.patch(CORE_GROUP, "machines", self.ns, name, {"spec": patch})
            spec = machine["spec"]
        bootstrapped = bool(spec.get("bootstrap", {}).get("dataSecretName"))
        provisioned = bool(infra_status.get("initialization", {}).get("provisioned"))
        if provisioned and spec.get("providerID"):
            phase = "Provisioned"
        elif bootstrapped:
            phase = "Provisioning"
        else:
            phase = "Pending"
        status: Body = {
            "phase": phase,
            "initialization": {
                "bootstrapDataSecretCreated": bootstrapped,
                "infrastructureProvisioned": provisioned,
            },
            "observedGeneration": meta(machine).get("generation"),
            "conditions": conditions(
                machine,
                BootstrapConfigReady=(
                    bootstrapped,
                    "DataSecretAvailable" if bootstrapped else "WaitingForDataSecret",
                ),
                InfrastructureReady=(
                    provisioned,
                    "Provisioned" if provisioned else _reason(infra, "NotProvisioned"),
                ),
                NodeReady=(False, "NodeDoesNotExist"),
                Available=(
                    phase == "Provisioned",
                    "Provisioned" if phase == "Provisioned" else "NotProvisioned",
                ),
            ),
        }
        if "addresses" in infra_status:
            status["addresses"] = infra_status["addresses"]
        self.kube.patch_status(machine, status)
        machine["status"] = {**machine.get("status", {}), **status}

    # ------------------------------------------------------------------ garbage collection

    def collect_garbage(self) -> None:
        """Delete what the emulator's missing garbage collector would: objects whose owners are all gone.

        An owner is checked by a read of its own before its dependant goes (it may be newer than the
        lists this pass read).
        """
        candidates: list[Body] = [*self.machines, *self.configs, *self.deployments]
        for resource in (
            KUBEADM_CONFIG_TEMPLATE,
            PROXMOX_MACHINE_TEMPLATE,
            PROXMOX_MACHINE,
            PROXMOX_CLUSTER,
            FLEX_CONTROL_PLANE,
        ):
            candidates.extend(self.kube.list_objects(resource.group, resource.plural, self.ns))
        candidates.extend(self.kube.list_secrets(self.ns))
        known = {meta(obj)["uid"] for obj in (*self.clusters, *candidates)}
        for obj in candidates:
            owners = meta(obj).get("ownerReferences") or []
            if not owners or meta(obj).get("deletionTimestamp"):
                continue
            if any(owner["uid"] in known for owner in owners):
                continue
            if all(not self.kube.owner_exists(self.ns, owner) for owner in owners):
                log.info("garbage collection: %s %s/%s", obj.get("kind"), self.ns, meta(obj)["name"])
                self.kube.delete_object(obj)


class Pending(Exception):
    """A step waits for something else to happen first: the namespace is reconciled again shortly."""


def _paused(obj: Body) -> bool:
    """Cluster API's pause of one object: its ``cluster.x-k8s.io/paused`` annotation."""
    return PAUSED_ANNOTATION in (meta(obj).get("annotations") or {})


def _endpoint(obj: Body | None) -> Body | None:
    endpoint = (obj or {}).get("spec", {}).get("controlPlaneEndpoint") or {}
    if endpoint.get("host") and endpoint.get("port"):
        return {"host": endpoint["host"], "port": int(endpoint["port"])}
    return None


def _replicas(deployment: Body) -> int:
    value = deployment.get("spec", {}).get("replicas")
    return 1 if value is None else int(value)


def _selector(deployment: Body) -> dict[str, str]:
    selected: dict[str, str] = deployment.get("spec", {}).get("selector", {}).get("matchLabels") or {}
    return selected or {
        CLUSTER_NAME_LABEL: deployment["spec"]["clusterName"],
        DEPLOYMENT_NAME_LABEL: meta(deployment)["name"],
    }


def _template_hash(deployment: Body) -> str:
    """What makes a Machine up to date: the template's version and the templates it points at."""
    spec = deployment["spec"]["template"]["spec"]
    identity = [
        spec.get("version"),
        spec["infrastructureRef"].get("name"),
        spec["bootstrap"]["configRef"].get("name"),
        spec.get("failureDomain"),
    ]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:10]


def _owned_by(obj: Body, owner: Body) -> bool:
    return any(ref.get("uid") == meta(owner)["uid"] for ref in meta(obj).get("ownerReferences") or [])


def _available(machine: Body) -> bool:
    return machine.get("status", {}).get("phase") in ("Provisioned", "Running")


def _is_true(status: Body, condition: str) -> bool:
    return any(
        c.get("type") == condition and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _reason(obj: Body | None, default: str) -> str:
    for condition in (obj or {}).get("status", {}).get("conditions") or []:
        if condition.get("type") == "Ready" and condition.get("reason"):
            return str(condition["reason"])
    return default


def _spread(cluster: Body, live: Iterable[Body]) -> str | None:
    """The worker failure domain with the fewest of the deployment's Machines (ties: by name)."""
    domains = sorted(
        domain["name"]
        for domain in cluster.get("status", {}).get("failureDomains") or []
        if not domain.get("controlPlane")
    )
    if not domains:
        return None
    counts = {domain: 0 for domain in domains}
    for machine in live:
        domain = machine.get("spec", {}).get("failureDomain")
        if domain in counts:
            counts[domain] += 1
    return min(domains, key=lambda domain: (counts[domain], domain))


def _deletion_order(deployment: Body, machines: list[Body]) -> list[Body]:
    """Which Machines go first: annotated ``delete-machine``, then by ``spec.deletion.order`` (core's
    default: Random)."""
    order = deployment.get("spec", {}).get("deletion", {}).get("order") or "Random"

    def key(machine: Body) -> tuple[str, int, str]:
        created = int((meta(machine).get("annotations") or {}).get(CREATED_ANNOTATION, 0))
        return (meta(machine).get("creationTimestamp", ""), created, meta(machine)["name"])

    ranked = sorted(machines, key=key)
    marked = [m for m in ranked if DELETE_MACHINE in (meta(m).get("annotations") or {})]
    rest = [m for m in ranked if m not in marked]
    if order == "Newest":
        rest.reverse()
    elif order == "Random":
        random.shuffle(rest)
    return marked + rest
