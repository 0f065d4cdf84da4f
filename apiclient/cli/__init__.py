"""``flexplane``: flex.plane's API from a terminal, on the typed client (``apiclient``).

    flexplane login                                  # a browser approves this terminal (RFC 8628)
    flexplane login --service-account-key key.json   # a script, as a service account
    flexplane vms create web-3 -c small -s standard -i debian-12 --wait
    flexplane vms list -o json | jq -r '.[].name'

Installed with the client's distribution (distributions/flexplane-client), without Django. The commands
are in apiclient/cli/app.py (exit codes, login), compute.py, network.py and clusters.py.
"""

from apiclient.cli.app import app, main

__all__ = ["app", "main"]
