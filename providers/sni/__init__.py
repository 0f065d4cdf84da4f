"""The SNI router: every tenant control plane behind one address and port, routed by TLS SNI.

A process of its own (``python -m providers.sni``, :mod:`.__main__`): :mod:`.hello` reads the server name
of a connection's ClientHello, :mod:`.routes` follows which name goes to which control plane's Service,
:mod:`.router` splices each connection to its backend without terminating TLS.
"""
