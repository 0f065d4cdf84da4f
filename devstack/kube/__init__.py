"""The management-cluster stand-in: kmock's Kubernetes emulator with its gaps closed.

flex.plane keeps its catalog in ConfigMaps, locks quotas with Leases, and will keep Secrets and
Cluster API objects on the management cluster. In tests and the devstack that cluster is a
:class:`ClusterEmulator` served on loopback by a :class:`KubeServer`; product code reaches it with
the official ``kubernetes`` client (or kopf) and the kubeconfig from :meth:`KubeServer.write_kubeconfig`,
exactly as it reaches a real cluster. Whatever kmock lacks is closed here, never in product code.

The parts: :mod:`~devstack.kube.server` (the HTTP server and kubeconfig), :mod:`~devstack.kube.emulator`
(routing and the verbs), :mod:`~devstack.kube.store` (objects, resourceVersions, conflicts, the
event log), :mod:`~devstack.kube.watches`, :mod:`~devstack.kube.selectors`,
:mod:`~devstack.kube.patches`, :mod:`~devstack.kube.discovery` (``/version``, discovery, known
resources), :mod:`~devstack.kube.crds` (CustomResourceDefinitions, the scale subresource, Cluster API
core's CRDs), :mod:`~devstack.kube.objects` (what a write does to a body), :mod:`~devstack.kube.request`
and :mod:`~devstack.kube.errors`.

What the emulator does as a real API server does:

- ``metadata.uid``, ``creationTimestamp``, ``generation`` on create; one cluster-wide
  ``resourceVersion`` counter, bumped by every write. A write that changes nothing is not a write:
  it keeps the resourceVersion and sends no watch event (so a lock must change what it writes).
- Optimistic concurrency: a replace or patch whose result carries a ``resourceVersion`` other
  than the stored one answers 409 Conflict; so does a delete with stale preconditions.
- Create answers 201, ``generateName`` works, a duplicate answers 409 AlreadyExists, a missing
  object answers 404 NotFound: failures always carry a ``Status`` body.
- Label selectors (``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``, ``a in (x,y)``, ``a notin (x)``,
  ``a>1``, ``a<1``; commas are AND) and field selectors (``metadata.name``,
  ``metadata.namespace``, plus ``type`` for Secrets and ``status.phase`` for Namespaces) on
  list, watch and delete-collection; ``limit``/``continue`` paging; ``dryRun``.
- Watch: every event carries the object's namespace; ``timeoutSeconds`` ends the stream;
  ``resourceVersion`` resumes after that version (410 Expired once it left the event log); an
  object that stops matching a selector is reported DELETED, one that starts matching ADDED.
- ``/version``, ``/readyz``, ``/livez`` and ``/healthz`` (``ok``), discovery, and Namespaces:
  ``default``, ``kube-system`` and the other system namespaces exist from the start; creating an
  object in a namespace that does not exist answers 404 NotFound (``namespaces "x" not found``), as a
  real API server does. Deleting a namespace deletes everything in it at once.
- Secrets: ``stringData`` is folded into base64 ``data``.
- Finalizers: a delete only marks an object that has some (``deletionTimestamp``); it goes once they
  are removed.
- CustomResourceDefinitions (``apiextensions.k8s.io/v1``): creating one registers its served versions
  in discovery at once, before any object exists (kind, plural, singular, short names, categories,
  scope, and the ``status`` and ``scale`` subresources each version declares), and the CRD is
  answered ``Established``; its name must be ``<plural>.<group>``. Deleting it unregisters them and
  deletes their objects. A resource that is neither built in nor declared by a CRD answers 404, as
  do namespaced paths of a cluster-scoped resource and subresources a resource lacks.
  :meth:`KubeServer.install_crds` installs CRDs from test code (``kubectl apply``'s effect).
- A custom resource with a ``status`` subresource: create drops ``status``, writes to the object
  keep the stored status, ``/status`` writes change only status.
- The ``scale`` subresource of custom resources that declare it: GET, PUT and patches of an
  ``autoscaling/v1`` Scale, mapped through the CRD's ``specReplicasPath``, ``statusReplicasPath``
  and ``labelSelectorPath``.
- Lists and watches of a namespaced resource across all namespaces; Events in ``v1`` and
  ``events.k8s.io/v1``. This is all kopf needs: run it with ``settings.peering.standalone = True``
  (no peering CRDs here); CRD scanning works (it watches CRDs) and may also be disabled.
- HTTPS: :class:`KubeServer` serves TLS with a given certificate and key (PEM bytes or paths), still on
  loopback, e.g. as a tenant cluster's API server with the certificate its control plane provider made.

What it does not do: authentication (no client certificates, any token accepted), authorization,
admission, validation or pruning against a CRD's schema, defaulting, conversion between API versions
(each served version is stored apart), server-side apply (415), bookmarks, protobuf, the ``scale``
subresource of built-in resources. Strategic merge patches are applied as JSON merge patches (lists
are replaced, not merged by key); custom resources refuse them with 415, as a real cluster does.
``/status`` writes change only ``status``; writes to a built-in object itself change everything,
status included (a real server would keep the status of most kinds).

Tests may still use kmock's DSL on the emulator, e.g. ``kube.emulator["list v1/configmaps"] << 503``
to inject a fault: such reactions are consulted first; the stored objects answer the rest.
"""

from devstack.kube.emulator import ClusterEmulator
from devstack.kube.server import KubeServer

__all__ = ["ClusterEmulator", "KubeServer"]
