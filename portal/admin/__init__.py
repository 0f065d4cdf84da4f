"""The portal's admin area (``/admin/``): catalog, hosts and VDCs, for ADMIN only."""
