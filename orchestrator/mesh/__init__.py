"""The mesh control server: the hub of the WireGuard mesh (:mod:`orchestrator.mesh.hub`), run as
``manage.py mesh_hub``; its state is :mod:`orchestrator.services.mesh`'s."""
