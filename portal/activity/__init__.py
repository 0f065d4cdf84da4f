"""The portal's side of the audit trail (``orchestrator.services.audit``): each portal action's one
record (``trail``), the admin's Activity page and a VDC's recent activity on its dashboard (``views``)."""
