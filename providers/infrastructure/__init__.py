"""The capi-infrastructure-provider: ``ProxmoxCluster`` and ``ProxmoxMachine`` (and the templates Cluster
API clones machines from), on the VDCs' Proxmox zones.

- :mod:`.spec`: pure: the objects' specs parsed, the provider ID, the statuses written;
- :mod:`.clusters`: ``ensure_cluster`` (the VDC and its network found; its zones as failure domains);
- :mod:`.machines`: ``ensure_machine`` (the VM made through the orchestrator's create path, as
  ``flexplane-capi``, with the bootstrap data as cloud-init user data) and ``ensure_machine_deleted``;
- :mod:`.handlers`: kopf's registrations, nothing else.
"""
