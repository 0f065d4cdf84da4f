# Copyright: flex.plane contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options every flexplane.cloud module takes: where the API is, which VDC, and as whom."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  url:
    description:
      - The flex.plane API's origin (its GraphQL endpoint is C(/graphql) under it).
      - Taken from E(FLEXPLANE_URL) when not given.
    type: str
    required: true
  vdc:
    description:
      - The VDC the module acts in (the C(FlexPlane-VDC-ID) header).
      - Taken from E(FLEXPLANE_VDC) when not given.
    type: str
    required: true
  token:
    description:
      - A bearer token, sent as it is. Exactly one of O(token) and O(service_account_key) is given.
      - Taken from E(FLEXPLANE_TOKEN) when not given.
    type: str
  service_account_key:
    description:
      - A service account's key file (C(createServiceAccount)'s C(key), saved as a file), exchanged at
        O(issuer) for access tokens, each renewed before it expires.
      - Taken from E(FLEXPLANE_SERVICE_ACCOUNT_KEY) when not given.
    type: path
  issuer:
    description:
      - The identity provider's issuer URL (Zitadel's instance); O(service_account_key) is exchanged for
        tokens at the token endpoint of its origin.
      - Taken from E(FLEXPLANE_ISSUER) when not given. Needed with O(service_account_key).
    type: str
  project_id:
    description:
      - flex.plane's project in the identity provider, the audience of the tokens asked for.
      - Taken from E(FLEXPLANE_PROJECT_ID) when not given. Needed with O(service_account_key).
    type: str
  ca_file:
    description:
      - A PEM file of the CA that signed the API's and the identity provider's certificates (a private CA).
      - Taken from E(FLEXPLANE_CA_FILE) when not given.
    type: path
  validate_certs:
    description:
      - Whether the certificates of the API and the identity provider are checked. Only for a test platform.
      - Taken from E(FLEXPLANE_VALIDATE_CERTS) when not given.
    type: bool
    default: true
  timeout:
    description:
      - Seconds one request to the API may take.
    type: float
    default: 30
  poll_interval:
    description:
      - Seconds between two reads of a task the module waits for (the API offers no subscription to tasks).
    type: float
    default: 1
requirements:
  - Python 3.11 or later where the module runs.
  - The C(flexplane-client) distribution (flex.plane's Python client, C(apiclient)) where the module runs.
notes:
  - The modules run where the task runs; delegated to C(localhost) (or on a local connection) that is the
    controller, which then needs flexplane-client.
  - Every failure the API answers fails the task with its C(code), C(field) and C(message), and every
    error of the answer in C(problems).
"""

    # The attributes of the _info modules, which read and change nothing.
    INFO_MODULE = r"""
attributes:
  check_mode:
    description: Changes nothing, in check mode or not.
    support: full
  diff_mode:
    description: Changes nothing, so has no diff.
    support: none
"""
