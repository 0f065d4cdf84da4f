"""The capi-control-plane-provider: ``FlexControlPlane``, a tenant's control plane hosted as pods.

Pure parts first (:mod:`.pki`, :mod:`.render`), then the steps that make the world match them
(:mod:`.steps`), then kopf's registrations (:mod:`.handlers`).
"""
