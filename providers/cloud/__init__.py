"""flex.plane's cloud controller for tenant clusters (``python -m providers.cloud``): what a cloud
provider's cloud-controller-manager does, for one cluster, through flex.plane's API.

- ``model``: what is wanted, as pure functions (the provider ID, labels, addresses, rules, forwards);
- ``nodes``: Nodes initialized from their VMs, and removed once their VM is gone;
- ``balancers``: Services of type LoadBalancer on the VDC's edge gateway;
- ``tenant``, ``vdc``: the tenant cluster's API server and flex.plane's API, the only two it talks to;
- ``controller``: the level-based loop (a full pass each interval, sooner on a watch event).
"""
