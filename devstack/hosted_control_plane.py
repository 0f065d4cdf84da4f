"""Test-only stand-ins for what runs a hosted control plane on a real management cluster: the LoadBalancer
controller, and the control plane's pods (their kubelet, and the Deployment controller's status), and
its etcd restore's Jobs (the Job controller's status).

Never shipped. In a namespace ``fpcp-*`` (the control-plane provider's, one per tenant cluster):

- a Service of type LoadBalancer gets ``status.loadBalancer.ingress[0].ip``: a loopback address of the
  world's own (``address_prefix`` + 1..254), free when given, kept for the namespace's life;
- a Deployment with a ``kube-apiserver`` container is "run": the tenant cluster's API server is a
  devstack Kubernetes emulator (:class:`devstack.kube.KubeServer`) served over HTTPS on that address,
  port 6443, with the serving certificate and key the container would read (its ``--tls-cert-file`` and
  ``--tls-private-key-file`` flags, followed through its volume mounts to the Secret and keys that hold
  them, as the kubelet mounts them). It answers what the provider checks and installs (``/version``,
  ``kube-public/cluster-info``, RBAC, the konnectivity-agent DaemonSet...) as real HTTPS calls. It has no
  authentication (client certificates are not checked): a stand-in on loopback only;
- the Deployment's status is what the Deployment controller would report once the pods are ready:
  ``observedGeneration``, ``replicas``, ``readyReplicas``, ``updatedReplicas``, ``availableReplicas``.
  A changed pod template (an upgrade's new images) rolls: one pod more (maxSurge 1), then one updated
  replica after another, a step per pass, the tenant's API server (and its objects, as its etcd would
  keep them) staying up throughout;
- a StatefulSet (the datastore, etcd) gets the status its controller would report once every member is
  ready: ``observedGeneration``, ``replicas``, ``readyReplicas``, ``currentReplicas``,
  ``updatedReplicas``, ``availableReplicas``;
- the etcd snapshots' CronJob (``etcd-backup``) runs when a test says (:meth:`HostedControlPlanes.snapshot`),
  not on its schedule: the tenant's API server's objects (:meth:`devstack.kube.ClusterEmulator.snapshot`,
  as its etcd would hold them) sealed into the bucket by the code its ``seal`` container runs
  (``backup_dump``'s ``store_dump``), with the bucket, name, key and credentials that container is given;
- an etcd restore's Job (label ``app.kubernetes.io/component=etcd-restore``, the control-plane provider's)
  runs its ``fetch`` container's step (``fetch_dump``'s code, with that container's bucket address, key and
  credentials) and gets the status the Job controller writes once its pod succeeded: ``succeeded`` 1,
  ``startTime``, ``completionTime`` and the conditions ``SuccessCriteriaMet`` and ``Complete`` (or
  ``Failed`` with the fetch's error). The snapshot fetched is the etcd data a new tenant API server of the
  namespace starts with (a control plane made anew by a platform restore); a tenant API server already
  running keeps its objects (the in-place restore's stop and start are not played);
- the workers' kubelets (:mod:`devstack.tenant_kubelets`): each provisioned Machine of the control
  plane's cluster (in its VDC's namespace, found by the namespace's ``flexplane.io/vdc`` and
  ``cluster.x-k8s.io/cluster-name`` labels) is a Node of the tenant's API server, NotReady with the
  kubelet's "network plugin not ready" until a network plugin's DaemonSet would run on it; a Machine
  gone, its Node goes (as core's Machine controller deletes it). The stand-in reaches the tenant's API
  server over TLS verified with the cluster's CA (``ca.crt`` of the ``pki`` Secret), as a kubelet does;
- the namespace deleted, its API server stops and its address goes back to the pool.

What it does NOT do: run any container (no controller-manager, scheduler, Konnectivity or etcd: the
StatefulSet's status says its members are ready, not that an etcd answers), DaemonSets in the tenant
cluster (its ``konnectivity-agent`` DaemonSet gets no status: no agent connects; a network plugin's
DaemonSet makes the Nodes Ready, no more), NodePort Services
(only LoadBalancer ones get an address), pod readiness probes, or authentication and authorization in
the tenant's API server.

It runs as threads of the process that starts it (:class:`devstack.controller_loop.ControllerLoop`).
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import hashlib
import json
import logging
import socket
import tempfile
import threading
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.config import new_client_from_config, new_client_from_config_dict

from devstack import tenant_kubelets
from devstack.controller_loop import ControllerLoop, Watched
from devstack.kube import ClusterEmulator, KubeServer
from orchestrator.errors import FlexPlaneError
from orchestrator.services.backup.dumps import fetch_dump, store_dump
from orchestrator.services.backup.sealed import BackupError, parse_key
from orchestrator.services.backup.stores import DUMP_SUFFIX, S3Settings, S3Store
from orchestrator.sources.kube_objects import CLUSTER_NAME_LABEL, VDC_LABEL

log = logging.getLogger(__name__)

Body = dict[str, Any]

NAMESPACE_PREFIX = "fpcp-"
APISERVER_PORT = 6443
APISERVER_CONTAINER = "kube-apiserver"
ROLL_STEP = 0.2  # seconds between two steps of a rollout's status
NODES_STEP = 1.0  # seconds between two looks at a NotReady node's network (the tenant's DaemonSets)
MACHINES = ("cluster.x-k8s.io", "v1beta2", "machines")
VDC_NAMESPACE_PREFIX = "vdc-"
PKI_SECRET = "pki"  # the control plane's PKI Secret
ETCD_RESTORE = "etcd-restore"  # the app.kubernetes.io/component of an etcd restore's Jobs
ETCD_BACKUP = "etcd-backup"  # the etcd snapshots' CronJob and Secret

WATCHED = [
    Watched("", "v1", "namespaces"),
    Watched("", "v1", "services"),
    Watched("apps", "v1", "deployments"),
    Watched("apps", "v1", "statefulsets"),
    Watched("batch", "v1", "jobs"),  # an etcd restore's, completed
    Watched(*MACHINES),  # the workers (Cluster API core's Machines): their kubelets register Nodes
]


class HostedControlPlanes:
    """The LoadBalancer controller and the control planes' pods, for every ``fpcp-*`` namespace."""

    def __init__(self, kubeconfig: Path | str, address_prefix: str, *, resync: float = 5.0) -> None:
        self._api = new_client_from_config(config_file=str(kubeconfig))
        self._core: Any = client.CoreV1Api(self._api)
        self._apps: Any = client.AppsV1Api(self._api)
        self._batch: Any = client.BatchV1Api(self._api)
        self._custom: Any = client.CustomObjectsApi(self._api)
        self._prefix = address_prefix  # e.g. "127.30.9.": addresses prefix + 1..254
        self._addresses: dict[str, str] = {}  # namespace -> its LoadBalancer address
        self._servers: dict[str, tuple[KubeServer, str]] = {}  # namespace -> (its API server, cert digest)
        self._rolled: dict[tuple[str, str], str] = {}  # (namespace, deployment) -> pod template digest
        self._stepped: dict[tuple[str, str], float] = {}  # (namespace, deployment) -> its last step's time
        self._restored: dict[str, bytes] = {}  # namespace -> the etcd snapshot its restore Jobs fetched
        self._lock = threading.Lock()
        self.loop = ControllerLoop(
            "hosted-cp", self._api, WATCHED, _namespace_key, self._reconcile, resync=resync
        )

    def start(self) -> HostedControlPlanes:
        self.loop.start()
        return self

    def stop(self) -> None:
        self.loop.stop()
        with self._lock:
            servers = [server for server, _ in self._servers.values()]
            self._servers.clear()
        for server in servers:
            with contextlib.suppress(Exception):
                server.stop()
        self._api.close()

    def server(self, namespace: str) -> KubeServer | None:
        """The tenant cluster's API server of a control plane's namespace, while it runs."""
        with self._lock:
            entry = self._servers.get(namespace)
        return entry[0] if entry else None

    @property
    def servers(self) -> dict[str, KubeServer]:
        with self._lock:
            return {namespace: server for namespace, (server, _) in self._servers.items()}

    # ------------------------------------------------------------------ reconcile

    def _reconcile(self, key: Hashable) -> None:
        assert isinstance(key, str)
        namespace = key
        try:
            ns = self._core.read_namespace(namespace)
        except client.ApiException as error:
            if error.status != 404:
                raise
            ns = None
        if ns is None or ns.metadata.deletion_timestamp is not None:
            self._release(namespace)
            self.loop.forget(namespace)
            return
        for service in self._list(self._core.list_namespaced_service, namespace):
            self._ensure_load_balancer(namespace, service)
        for deployment in self._list(self._apps.list_namespaced_deployment, namespace):
            self._run(namespace, deployment)
        for statefulset in self._list(self._apps.list_namespaced_stateful_set, namespace):
            self._report_members(namespace, statefulset)
        for job in self._list(self._batch.list_namespaced_job, namespace):
            self._complete_restore(namespace, job)
        self._kubelets(namespace, ns.metadata.labels or {})

    @staticmethod
    def _list(call: Any, namespace: str) -> list[Body]:
        items: list[Body] = json.loads(call(namespace, _preload_content=False).data)["items"]
        return items

    def _ensure_load_balancer(self, namespace: str, service: Body) -> None:
        if service.get("spec", {}).get("type") != "LoadBalancer":
            return
        address = self._address(namespace)
        ingress = service.get("status", {}).get("loadBalancer", {}).get("ingress") or []
        if ingress and ingress[0].get("ip") == address:
            return
        self._core.patch_namespaced_service_status(
            service["metadata"]["name"],
            namespace,
            {"status": {"loadBalancer": {"ingress": [{"ip": address}]}}},
        )
        log.info("LoadBalancer %s/%s: %s", namespace, service["metadata"]["name"], address)

    def _address(self, namespace: str) -> str:
        with self._lock:
            if namespace in self._addresses:
                return self._addresses[namespace]
            taken = set(self._addresses.values())
        for host in range(1, 255):
            address = f"{self._prefix}{host}"
            if address not in taken and _free(address, APISERVER_PORT):
                with self._lock:
                    self._addresses[namespace] = address
                return address
        raise RuntimeError(f"no free address left in {self._prefix}0/24")

    def _run(self, namespace: str, deployment: Body) -> None:
        """The Deployment's pods: the tenant's API server (if it has one), and the status they make."""
        containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
        apiserver = next((c for c in containers if c.get("name") == APISERVER_CONTAINER), None)
        if apiserver is not None and not self._serve(namespace, deployment, apiserver):
            return  # its certificate is not there yet: no pod would start
        self._report(namespace, deployment)

    def _serve(self, namespace: str, deployment: Body, container: Body) -> bool:
        pems = self._serving_pair(namespace, deployment, container)
        if pems is None:
            return False
        digest = hashlib.sha256(pems[0] + pems[1]).hexdigest()
        with self._lock:
            running = self._servers.get(namespace)
        if running is not None and running[1] == digest:
            return True
        if running is not None:  # a new certificate: the pods restart with it, the data stays
            emulator = running[0].emulator
            running[0].stop()
        else:
            emulator = ClusterEmulator()
            with self._lock:
                restored = self._restored.pop(namespace, None)
            if restored is not None:  # its etcd, made from a snapshot before it first started
                emulator.load(restored)
        server = KubeServer.start(self._address(namespace), APISERVER_PORT, emulator=emulator, tls=pems)
        with self._lock:
            self._servers[namespace] = (server, digest)
        log.info("tenant API server of %s: %s", namespace, server.url)
        return True

    def _serving_pair(self, namespace: str, deployment: Body, container: Body) -> tuple[bytes, bytes] | None:
        """The serving certificate and key, as the container would find them in its mounted Secrets."""
        flags = dict(
            arg.removeprefix("--").split("=", 1)
            for arg in container.get("args") or []
            if arg.startswith("--")
        )
        volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"].get("volumes") or []}
        found = []
        for flag in ("tls-cert-file", "tls-private-key-file"):
            path = flags.get(flag)
            if path is None:
                return None
            data = self._mounted_file(namespace, container, volumes, path)
            if data is None:
                return None
            found.append(data)
        return found[0], found[1]

    def _mounted_file(
        self, namespace: str, container: Body, volumes: dict[str, Body], path: str
    ) -> bytes | None:
        for mount in container.get("volumeMounts") or []:
            directory = mount["mountPath"].rstrip("/") + "/"
            if not path.startswith(directory):
                continue
            source = volumes.get(mount["name"], {}).get("secret")
            if source is None:
                continue
            relative = path[len(directory) :]
            items = source.get("items")
            key = next((i["key"] for i in items if i["path"] == relative), None) if items else relative
            if key is None:
                continue
            try:
                secret = self._core.read_namespaced_secret(source["secretName"], namespace)
            except client.ApiException as error:
                if error.status == 404:
                    return None
                raise
            value = (secret.data or {}).get(key)
            return base64.b64decode(value) if value else None
        return None

    def _report(self, namespace: str, deployment: Body) -> None:
        """The Deployment controller's status once pods are ready; a new pod template rolls, a step a pass."""
        name = deployment["metadata"]["name"]
        replicas = int(deployment.get("spec", {}).get("replicas", 1))
        generation = deployment["metadata"].get("generation", 1)
        template = hashlib.sha256(
            json.dumps(deployment["spec"].get("template", {}), sort_keys=True).encode()
        ).hexdigest()
        status = deployment.get("status") or {}
        rolled = self._rolled.get((namespace, name))
        if rolled is None or status.get("observedGeneration") is None:
            updated = replicas  # the first pods: all of the current template
        elif rolled != template:
            updated = 0  # a new template: the rollout starts
        else:
            updated = min(replicas, int(status.get("updatedReplicas") or 0))
            if updated < replicas:  # a pod replaced every ROLL_STEP, however often the Deployment is seen
                wait = self._stepped.get((namespace, name), 0.0) + ROLL_STEP - time.monotonic()
                if wait > 0:
                    self.loop.enqueue(namespace, wait)
                    return
                updated += 1
        self._rolled[(namespace, name)] = template
        self._stepped[(namespace, name)] = time.monotonic()
        surge = 1 if updated < replicas else 0
        wanted = {
            "observedGeneration": generation,
            "replicas": replicas + surge,
            "updatedReplicas": updated,
            "readyReplicas": replicas,
            "availableReplicas": replicas,
            "unavailableReplicas": 0,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                {
                    "type": "Progressing",
                    "status": "True",
                    "reason": "NewReplicaSetAvailable" if not surge else "ReplicaSetUpdated",
                },
            ],
        }
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        self._apps.patch_namespaced_deployment_status(name, namespace, {"status": wanted})
        if surge:
            self.loop.enqueue(namespace, ROLL_STEP)

    def _report_members(self, namespace: str, statefulset: Body) -> None:
        """The StatefulSet controller's status once every member's pod is ready (no rollout is played)."""
        replicas = int(statefulset.get("spec", {}).get("replicas", 1))
        wanted = {
            "observedGeneration": statefulset["metadata"].get("generation", 1),
            "replicas": replicas,
            "readyReplicas": replicas,
            "currentReplicas": replicas,
            "updatedReplicas": replicas,
            "availableReplicas": replicas,
        }
        status = statefulset.get("status") or {}
        if all(status.get(k) == v for k, v in wanted.items()):
            return
        name = statefulset["metadata"]["name"]
        self._apps.patch_namespaced_stateful_set_status(name, namespace, {"status": wanted})

    def _complete_restore(self, namespace: str, job: Body) -> None:
        """An etcd restore's Job, as the Job controller reports it once its one pod succeeded."""
        labels = (job.get("metadata") or {}).get("labels") or {}
        status = job.get("status") or {}
        ended = {c.get("type") for c in status.get("conditions") or () if c.get("status") == "True"}
        if labels.get("app.kubernetes.io/component") != ETCD_RESTORE or ended & {"Complete", "Failed"}:
            return
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            fetched = self._fetch(namespace, job)
        except (BackupError, FlexPlaneError, KeyError, ValueError) as error:
            failed = {
                "type": "Failed",
                "status": "True",
                "reason": "BackoffLimitExceeded",
                "message": str(error),
            }
            failure = {"startTime": status.get("startTime") or now, "failed": 1, "conditions": [failed]}
            self._batch.patch_namespaced_job_status(job["metadata"]["name"], namespace, {"status": failure})
            return
        with self._lock:
            self._restored[namespace] = fetched
        done = [
            {"type": kind, "status": "True", "reason": "CompletionsReached", "lastTransitionTime": now}
            for kind in ("SuccessCriteriaMet", "Complete")
        ]
        wanted = {"startTime": status.get("startTime") or now, "completionTime": now, "succeeded": 1}
        self._batch.patch_namespaced_job_status(
            job["metadata"]["name"], namespace, {"status": {**wanted, "conditions": done}}
        )

    # ------------------------------------------------------------------ etcd snapshots

    def snapshot(self, namespace: str) -> str:
        """The etcd-backup CronJob's run, now: the tenant's API server's objects sealed into the bucket as
        its ``seal`` container would (its bucket, name and retention, the key and credentials it is given);
        where the snapshot went."""
        server = self.server(namespace)
        if server is None:
            raise RuntimeError(f"{namespace} has no tenant API server: there is no etcd to snapshot")
        cronjob = json.loads(
            self._batch.read_namespaced_cron_job(ETCD_BACKUP, namespace, _preload_content=False).data
        )
        seal = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
        flags = _flags(seal.get("args") or [])
        store, key = self._bucket(namespace, seal, flags["s3"])
        with tempfile.TemporaryDirectory(prefix="etcd-snapshot-") as folder:
            taken = Path(folder) / "snapshot.db"
            taken.write_bytes(server.emulator.snapshot())
            sealed = store_dump(taken, store, key, name=flags["name"], keep=int(flags.get("keep") or 0))
        log.info("etcd snapshot of %s: %s", namespace, sealed.where)
        return sealed.where

    def _fetch(self, namespace: str, job: Body) -> bytes:
        """A restore Job's ``fetch`` step: the snapshot its bucket address names, opened with its key."""
        spec = job["spec"]["template"]["spec"]
        fetch = next(c for c in spec.get("initContainers") or [] if c["name"] == "fetch")
        address = _flags(fetch["command"])["s3"]
        store, key = self._bucket(namespace, fetch, address)
        with tempfile.TemporaryDirectory(prefix="etcd-restore-") as folder:
            opened = Path(folder) / "snapshot.db"
            fetch_dump(store, opened, key)
            return opened.read_bytes()

    def _bucket(self, namespace: str, container: Body, address: str) -> tuple[S3Store, bytes]:
        """The bucket (at ``address``) and the backup key a snapshot container is given: its environment,
        its Secret references and its key file's Secret (``etcd-backup``), as the kubelet resolves them."""
        secret = self._core.read_namespaced_secret(ETCD_BACKUP, namespace)
        data = {name: base64.b64decode(value).decode() for name, value in (secret.data or {}).items()}
        env: dict[str, str] = {}
        for variable in container.get("env") or []:
            reference = (variable.get("valueFrom") or {}).get("secretKeyRef")
            env[variable["name"]] = data[reference["key"]] if reference else str(variable.get("value", ""))
        settings = S3Settings(
            endpoint=env.get("FLEXPLANE_BACKUP_S3_ENDPOINT") or None,
            region=env.get("FLEXPLANE_BACKUP_S3_REGION") or "us-east-1",
            access_key=env.get("FLEXPLANE_BACKUP_S3_ACCESS_KEY") or None,
            secret_key=env.get("FLEXPLANE_BACKUP_S3_SECRET_KEY") or None,
        )
        return S3Store(address, settings.client(), DUMP_SUFFIX), parse_key(data["key"])

    def _kubelets(self, namespace: str, labels: dict[str, str]) -> None:
        """The workers' Nodes in the tenant's API server, Ready once a network plugin would run there."""
        server = self.server(namespace)
        vdc, cluster = labels.get(VDC_LABEL), labels.get(CLUSTER_NAME_LABEL)
        if server is None or not vdc or not cluster:
            return
        machines = [m for m in self._machines(vdc, cluster) if tenant_kubelets.joined(m)]
        tenant = self._tenant_client(namespace, server)
        if tenant is None:
            return
        try:
            waiting = _register_nodes(client.CoreV1Api(tenant), client.AppsV1Api(tenant), machines)
        finally:
            tenant.close()
        if waiting:  # a plugin applied later makes them Ready without any watch of the tenant's objects
            self.loop.enqueue(namespace, NODES_STEP)

    def _machines(self, vdc: str, cluster: str) -> list[Body]:
        try:
            answer = self._custom.list_namespaced_custom_object(
                *MACHINES[:2],
                f"{VDC_NAMESPACE_PREFIX}{vdc}",
                MACHINES[2],
                label_selector=f"{CLUSTER_NAME_LABEL}={cluster}",
            )
        except client.ApiException as error:
            if error.status == 404:  # no Cluster API here: no workers
                return []
            raise
        items: list[Body] = answer["items"]
        return items

    def _tenant_client(self, namespace: str, server: KubeServer) -> client.ApiClient | None:
        """A client of the tenant's API server, verifying it with the cluster's CA (None: no CA yet)."""
        try:
            secret = self._core.read_namespaced_secret(PKI_SECRET, namespace)
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        ca = (secret.data or {}).get("ca.crt")
        if not ca:
            return None
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "t", "cluster": {"server": server.url, "certificate-authority-data": ca}}],
            "users": [{"name": "t", "user": {}}],
            "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
            "current-context": "t",
        }
        api: client.ApiClient = new_client_from_config_dict(kubeconfig)
        return api

    def _release(self, namespace: str) -> None:
        with self._lock:
            entry = self._servers.pop(namespace, None)
            self._addresses.pop(namespace, None)
            for key in [k for k in self._rolled if k[0] == namespace]:
                del self._rolled[key]
                self._stepped.pop(key, None)
        if entry is not None:
            entry[0].stop()
            log.info("tenant API server of %s stopped", namespace)


def _register_nodes(core: Any, apps: Any, machines: list[Body]) -> bool:
    """Each joined worker's Node registered, its readiness as its kubelet would report it, the Nodes of
    Machines gone removed; whether a Node is still waiting for its network."""
    nodes = {
        n["metadata"]["name"]: n for n in json.loads(core.list_node(_preload_content=False).data)["items"]
    }
    wanted = {m["metadata"]["name"]: m for m in machines}
    for name in set(nodes) - set(wanted):
        core.delete_node(name)
    daemonsets = json.loads(apps.list_daemon_set_for_all_namespaces(_preload_content=False).data)["items"]
    waiting = False
    for name, machine in wanted.items():
        node = nodes.get(name)
        if node is None:
            node = json.loads(core.create_node(tenant_kubelets.node(machine), _preload_content=False).data)
        ready = tenant_kubelets.is_ready(node) or tenant_kubelets.network_ready(node, daemonsets)
        if ready and not tenant_kubelets.is_ready(node):
            taints = tenant_kubelets.without_not_ready((node.get("spec") or {}).get("taints") or [])
            core.patch_node(name, {"spec": {"taints": taints}})
        if ready != tenant_kubelets.is_ready(node) or not (node.get("status") or {}).get("conditions"):
            now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            condition = tenant_kubelets.ready_condition(ready, now)
            core.patch_node_status(name, {"status": {"conditions": [condition]}})
        waiting = waiting or not ready
    return waiting


def _namespace_key(obj: Body) -> Hashable | None:
    metadata = obj.get("metadata", {})
    labels = metadata.get("labels") or {}
    machine_namespace = str(metadata.get("namespace") or "")
    if obj.get("kind") == "Machine" and machine_namespace.startswith(VDC_NAMESPACE_PREFIX):
        cluster = labels.get(CLUSTER_NAME_LABEL)  # its control plane's namespace: fpcp-<vdc>-<cluster>
        vdc = machine_namespace.removeprefix(VDC_NAMESPACE_PREFIX)
        return f"{NAMESPACE_PREFIX}{vdc}-{cluster}" if cluster else None
    namespace = metadata.get("namespace") or (
        metadata.get("name") if obj.get("kind") == "Namespace" else None
    )
    if namespace is None and "namespace" not in metadata:
        namespace = metadata.get("name")  # a Namespace's events carry no kind in some lists
    if isinstance(namespace, str) and namespace.startswith(NAMESPACE_PREFIX):
        return namespace
    return None


def _flags(args: list[str]) -> dict[str, str]:
    """A command's ``--name=value`` flags."""
    return dict(arg.removeprefix("--").split("=", 1) for arg in args if arg.startswith("--") and "=" in arg)


def _free(address: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((address, port))
        except OSError:
            return False
    return True
