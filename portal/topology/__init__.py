"""A VDC's topology ``/vdc/<vdc>/topology/``: its networks per zone, its edge gateway with public addresses
and forwards, its VMs and clusters on each network, drawn server-side as inline SVG.

- ``facts``: what the page reads, in one pass through the services the lists read (a zone that does not
  answer is said so, the rest is drawn);
- ``layout``: where each thing goes in a zone's drawing (pure);
- ``views``: the page.
"""
