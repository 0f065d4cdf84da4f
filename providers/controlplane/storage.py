"""A tenant cluster's storage: flex.plane's CSI driver (``csi.flexplane.io``, :mod:`providers.csi`), installed
with the cluster as its network plugin is. Pure manifests.

Its two halves, as the driver's design has them (docs/kubernetes.md, "Storage"):

- **in the tenant cluster** (:func:`tenant_manifests`, with the provider's other tenant objects): the
  ``CSIDriver`` (attach required: a volume is a disk attached to the worker's VM); a ``StorageClass`` per
  storage profile of the FlexControlPlane's ``spec.storage`` (the VDC's profiles with storage in the
  cluster's zone, the first the default; ``WaitForFirstConsumer``, the zone as allowed topology,
  expansion allowed); Kubernetes' snapshot API (its CRDs) and the driver's default VolumeSnapshotClass
  (:mod:`.snapshots`); the node plugin's DaemonSet on every worker (``python -m providers.csi node``,
  privileged: it formats and mounts disks; kubelet's ``node-driver-registrar`` beside it); and what the
  controller's sidecars may do there (:func:`rbac`, their user :data:`.pki.CSI_CONTROLLER`);
- **beside the hosted control plane** (:func:`render_controller`, in its namespace): the controller
  (``python -m providers.csi controller``, as the cluster's service account, with the cloud controller's
  key) and its sidecars (external-provisioner, -attacher, -resizer, -snapshotter) with the
  snapshot-controller, which reach the tenant's API server with their own certificate. No Proxmox
  credential anywhere.

The sidecars, the snapshot-controller and the registrar are Kubernetes' own (SIG Storage's images, pinned
below, from the cluster's registry); the driver's halves run flex.plane's image.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from providers.controlplane import pki, snapshots
from providers.controlplane.cni import MANAGED_BY, NAMESPACE, RBAC
from providers.controlplane.cni import meta as meta_of
from providers.controlplane.model import (
    CloudController,
    ControlPlane,
    Manifest,
    b64,
    labels,
    meta,
    mount,
    pod_security,
    resources,
    security_context,
)
from providers.csi.identity import DRIVER
from providers.csi.rules import ZONE_KEY

NODE_PLUGIN = "flexplane-csi-node"
CONTROLLER = "csi-controller"
CONTROLLER_ROLE = "flexplane:csi-controller"
CONTROLLER_DIR = "/etc/flexplane/csi-controller"  # the controller's Secret, mounted whole
SOCKET_DIR = "/csi"
SOCKET = f"unix://{SOCKET_DIR}/csi.sock"
KUBELET_DIR = "/var/lib/kubelet"
PLUGIN_DIR = f"{KUBELET_DIR}/plugins/{DRIVER}"
DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
KEY_FILE = "key.json"
KUBECONFIG_FILE = "kubeconfig"
CA_FILE = "ca.crt"
# SIG Storage's sidecars (registry.k8s.io/sig-storage), each at a release that serves Kubernetes 1.33 and 1.34
# and CSI 1.x; each pulled at the digest the image lock holds for it (providers/images.py, `make pin-images`).
PROVISIONER = "sig-storage/csi-provisioner:v5.3.0"
ATTACHER = "sig-storage/csi-attacher:v4.10.0"
RESIZER = "sig-storage/csi-resizer:v1.14.0"
REGISTRAR = "sig-storage/csi-node-driver-registrar:v2.15.0"
# external-snapshotter's two (one release, built on Kubernetes 1.34's libraries and CSI 1.12): the sidecar,
# and the cluster's snapshot-controller. Their group snapshots are off (the CSIVolumeGroupSnapshot gate is
# off by default before v8.7): a later pin installs the groupsnapshot CRDs too, or turns that gate off.
SNAPSHOTTER = "sig-storage/csi-snapshotter:v8.4.0"
SNAPSHOT_CONTROLLER = "sig-storage/snapshot-controller:v8.4.0"
# Every image above: what the driver runs of Kubernetes' own (packaging/images.py declares them for pinning).
IMAGES = (PROVISIONER, ATTACHER, RESIZER, REGISTRAR, SNAPSHOTTER, SNAPSHOT_CONTROLLER)
# How long a sidecar waits for one call of the controller (an attach waits for Proxmox's task).
SIDECAR_TIMEOUT = "150s"


# ------------------------------------------------------------------------------------ the tenant's half


def csi_driver() -> Manifest:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": meta_of(DRIVER),
        "spec": {
            "attachRequired": True,
            "podInfoOnMount": False,
            "volumeLifecycleModes": ["Persistent"],
            "fsGroupPolicy": "File",
            "storageCapacity": False,
            "requiresRepublish": False,
        },
    }


def storage_classes(cp: ControlPlane) -> list[Manifest]:
    """One StorageClass per storage profile (named as the profile), the first the cluster's default."""
    classes = []
    for index, profile in enumerate(cp.storage_profiles):
        metadata = meta_of(profile)
        if index == 0:
            metadata["annotations"] = {DEFAULT_CLASS_ANNOTATION: "true"}
        body: Manifest = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": metadata,
            "provisioner": DRIVER,
            "parameters": {"storageProfile": profile, "csi.storage.k8s.io/fstype": "ext4"},
            "reclaimPolicy": "Delete",
            "allowVolumeExpansion": True,
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        if cp.zone:
            expression = {"key": ZONE_KEY, "values": [cp.zone]}
            body["allowedTopologies"] = [{"matchLabelExpressions": [expression]}]
        classes.append(body)
    return classes


def rbac() -> list[Manifest]:
    """What the controller's sidecars and the snapshot-controller (:data:`.pki.CSI_CONTROLLER`) may do: the
    provisioner's volumes, claims, classes, nodes' topology and events; the attacher's attachments; the
    resizer's claims' status; the snapshot API (the snapshot-controller binds snapshots to contents it makes,
    the snapshotter takes the contents' snapshots); their leader election's Leases in kube-system. Nothing
    else: no Secret, no Pod's spec."""
    read = ["get", "list", "watch"]
    snapshot_api = snapshots.GROUP
    rules = [
        {
            "apiGroups": [""],
            "resources": ["persistentvolumes"],
            "verbs": [*read, "create", "delete", "patch"],
        },
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": [*read, "update", "patch"]},
        {"apiGroups": [""], "resources": ["persistentvolumeclaims/status"], "verbs": ["patch", "update"]},
        {"apiGroups": [""], "resources": ["nodes", "pods"], "verbs": read},
        {"apiGroups": [""], "resources": ["events"], "verbs": [*read, "create", "update", "patch"]},
        {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses", "csinodes"], "verbs": read},
        {"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments"], "verbs": [*read, "patch"]},
        {"apiGroups": ["storage.k8s.io"], "resources": ["volumeattachments/status"], "verbs": ["patch"]},
        {"apiGroups": [snapshot_api], "resources": ["volumesnapshotclasses"], "verbs": read},
        {"apiGroups": [snapshot_api], "resources": ["volumesnapshots"], "verbs": [*read, "update", "patch"]},
        {
            "apiGroups": [snapshot_api],
            "resources": ["volumesnapshotcontents"],
            "verbs": [*read, "create", "update", "patch", "delete"],
        },
        {
            "apiGroups": [snapshot_api],
            "resources": ["volumesnapshots/status", "volumesnapshotcontents/status"],
            "verbs": ["update", "patch"],
        },
    ]
    leases = [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "verbs": [*read, "create", "update", "patch", "delete"],
        }
    ]
    subject = [{"apiGroup": RBAC, "kind": "User", "name": pki.CSI_CONTROLLER[0]}]
    return [
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": meta_of(CONTROLLER_ROLE),
            "rules": rules,
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta_of(CONTROLLER_ROLE),
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": CONTROLLER_ROLE},
            "subjects": subject,
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": meta_of(CONTROLLER_ROLE, NAMESPACE),
            "rules": leases,
        },
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": meta_of(CONTROLLER_ROLE, NAMESPACE),
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": CONTROLLER_ROLE},
            "subjects": subject,
        },
    ]


def node_plugin(cp: ControlPlane) -> list[Manifest]:
    """The node plugin on every worker: privileged (it formats, mounts and grows the volumes' disks), the
    kubelet's directory shared both ways (its mounts must reach the pods), with the registrar that tells
    the kubelet where its socket is. It holds no credential and reads no API."""
    plugin_dir = {"name": "plugin-dir", "hostPath": {"path": PLUGIN_DIR, "type": "DirectoryOrCreate"}}
    registration = {
        "name": "registration-dir",
        "hostPath": {"path": f"{KUBELET_DIR}/plugins_registry", "type": "Directory"},
    }
    kubelet = {"name": "kubelet-dir", "hostPath": {"path": KUBELET_DIR, "type": "Directory"}}
    devices = {"name": "dev", "hostPath": {"path": "/dev", "type": "Directory"}}
    env = [
        {"name": "CSI_ENDPOINT", "value": SOCKET},
        {"name": "FLEXPLANE_CSI_NODE_ID", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "FLEXPLANE_CSI_ZONE", "value": cp.zone},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    selector = {"app.kubernetes.io/name": NODE_PLUGIN}
    daemonset: Manifest = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": meta_of(NODE_PLUGIN, NAMESPACE, selector),
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {**MANAGED_BY, **selector}},
                "spec": {
                    "serviceAccountName": NODE_PLUGIN,
                    "automountServiceAccountToken": False,
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [
                        {
                            "name": "node-driver-registrar",
                            "image": cp.image(REGISTRAR),
                            "args": [
                                f"--csi-address={SOCKET_DIR}/csi.sock",
                                f"--kubelet-registration-path={PLUGIN_DIR}/csi.sock",
                            ],
                            "resources": resources("10m", "16Mi", "64Mi"),
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "readOnlyRootFilesystem": True,
                            },
                            "volumeMounts": [
                                {"name": "plugin-dir", "mountPath": SOCKET_DIR},
                                {"name": "registration-dir", "mountPath": "/registration"},
                            ],
                        },
                        {
                            "name": "csi-node",
                            "image": cp.flexplane_image(),
                            "command": ["python", "-m", "providers.csi", "node"],
                            "env": env,
                            "resources": resources("10m", "48Mi", "128Mi"),
                            "securityContext": {"privileged": True, "readOnlyRootFilesystem": True},
                            "volumeMounts": [
                                {"name": "plugin-dir", "mountPath": SOCKET_DIR},
                                {
                                    "name": "kubelet-dir",
                                    "mountPath": KUBELET_DIR,
                                    "mountPropagation": "Bidirectional",
                                },
                                {"name": "dev", "mountPath": "/dev"},
                            ],
                        },
                    ],
                    "volumes": [plugin_dir, registration, kubelet, devices],
                },
            },
        },
    }
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta_of(NODE_PLUGIN, NAMESPACE)}
    return [account, daemonset]


def tenant_manifests(cp: ControlPlane) -> list[Manifest]:
    """The tenant's half, in the order to create it (the snapshot class last: its CRD, first, is served by
    then); none for a cluster with no storage profile."""
    if not cp.storage_profiles:
        return []
    return [
        csi_driver(),
        *storage_classes(cp),
        *snapshots.crds(),
        *rbac(),
        *node_plugin(cp),
        snapshots.snapshot_class(),
    ]


# ---------------------------------------------------------------------------------- beside the control plane


def controller_files(
    cp: ControlPlane, cloud: CloudController, files: Mapping[str, bytes], key: bytes, server: str
) -> dict[str, bytes]:
    """The controller's Secret: the cluster's service account key, the sidecars' kubeconfig of the tenant's
    API server (their own certificate), and the CA bundle when one is set."""
    result = {
        KEY_FILE: key,
        KUBECONFIG_FILE: pki.leaf_kubeconfig(
            files, "csi-controller", pki.CSI_CONTROLLER[0], cluster=cp.cluster, server=server
        ),
    }
    if cloud.ca_bundle:
        result[CA_FILE] = cloud.ca_bundle.encode()
    return result


def render_controller(
    cp: ControlPlane, cloud: CloudController, files: Mapping[str, bytes], key: bytes, server: str
) -> list[Manifest]:
    """The controller with its sidecars and the tenant's snapshot-controller (one replica, recreated: they
    elect a leader in the tenant cluster all the same), and its Secret, in the control plane's namespace."""
    secret_files = controller_files(cp, cloud, files, key, server)
    component = {"app.kubernetes.io/component": CONTROLLER}
    match = {**component, "controlplane.flexplane.io/cluster": cp.cluster}
    env = {
        "CSI_ENDPOINT": SOCKET,
        "FLEXPLANE_URL": cloud.url,
        "FLEXPLANE_CSI_KEY": f"{CONTROLLER_DIR}/{KEY_FILE}",
        "FLEXPLANE_IDENTITY_URL": cloud.identity_url,
        "FLEXPLANE_PROJECT_ID": cloud.project_id,
        **({"FLEXPLANE_CA_FILE": f"{CONTROLLER_DIR}/{CA_FILE}"} if CA_FILE in secret_files else {}),
        "FLEXPLANE_CSI_VDC": cp.vdc,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
    }
    socket = {"name": "socket-dir", "mountPath": SOCKET_DIR}
    secret = mount(CONTROLLER, CONTROLLER_DIR)

    def tenant_controller(name: str, image: str, *extra: str) -> dict[str, Any]:
        """A controller of the tenant's objects, reaching its API server with the kubeconfig."""
        return {
            "name": name,
            "image": cp.image(image),
            "args": [
                f"--kubeconfig={CONTROLLER_DIR}/{KUBECONFIG_FILE}",
                "--leader-election",
                f"--leader-election-namespace={NAMESPACE}",
                *extra,
            ],
            "resources": resources("10m", "32Mi", "128Mi"),
            "securityContext": security_context(),
            "volumeMounts": [secret],
        }

    def sidecar(name: str, image: str, *extra: str) -> dict[str, Any]:
        """One of the driver's sidecars: a tenant controller that calls the driver on its socket."""
        container = tenant_controller(
            name, image, f"--csi-address={SOCKET_DIR}/csi.sock", f"--timeout={SIDECAR_TIMEOUT}", *extra
        )
        container["volumeMounts"] = [socket, secret]
        return container

    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": meta(cp, CONTROLLER),
            "data": {file: b64(secret_files[file]) for file in sorted(secret_files)},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta(cp, CONTROLLER, **component),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": match},
                "strategy": {"type": "Recreate"},
                "template": {
                    "metadata": {
                        "labels": {**labels(cp), **match},
                        "annotations": {
                            "controlplane.flexplane.io/csi-controller-digest": pki.digest(secret_files)
                        },
                    },
                    "spec": {
                        # It speaks to the tenant's API server and to flex.plane, never to this cluster's.
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "securityContext": pod_security(),
                        "containers": [
                            {
                                "name": CONTROLLER,
                                "image": cloud.image or cp.flexplane_image(),
                                "command": ["python", "-m", "providers.csi", "controller"],
                                "env": [{"name": k, "value": v} for k, v in env.items()],
                                "resources": resources("20m", "96Mi", "192Mi"),
                                "securityContext": security_context(),
                                "volumeMounts": [socket, secret],
                            },
                            sidecar(
                                "csi-provisioner",
                                PROVISIONER,
                                "--feature-gates=Topology=true",
                                "--extra-create-metadata",
                                "--default-fstype=ext4",
                            ),
                            sidecar("csi-attacher", ATTACHER),
                            sidecar("csi-resizer", RESIZER, "--handle-volume-inuse-error=false"),
                            sidecar("csi-snapshotter", SNAPSHOTTER, "--extra-create-metadata"),
                            tenant_controller("snapshot-controller", SNAPSHOT_CONTROLLER),
                        ],
                        "volumes": [
                            {"name": "socket-dir", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
                            {"name": CONTROLLER, "secret": {"secretName": CONTROLLER, "defaultMode": 0o440}},
                        ],
                    },
                },
            },
        },
    ]
