"""The Cluster API providers: kopf operators on the management cluster, one process (``python -m providers``).

- :mod:`providers.infrastructure`: the capi-infrastructure-provider (``ProxmoxCluster``,
  ``ProxmoxMachine``, ``ProxmoxMachineTemplate``): a machine is a VM of the VDC, made through the
  orchestrator's own create path as the service identity ``flexplane-capi``.
- :mod:`providers.controlplane`: the capi-control-plane-provider (``FlexControlPlane``): a tenant's
  control plane hosted as pods.
- :mod:`providers.common`: what both share: the CRDs, conditions, the typed layer over the
  Kubernetes client for our kinds and Cluster API's, and running a provider's kopf operator.
- :mod:`providers.leader`: leader election on a coordination.k8s.io/v1 Lease: one replica reconciles.

The contract between the parts (groups, kinds, fields, who writes what) is Cluster API's v1beta2
provider contracts; kopf's handlers only register, the work is in plain ``ensure_*`` functions.
"""
