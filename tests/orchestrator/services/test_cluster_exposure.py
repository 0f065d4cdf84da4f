"""How a cluster's control plane is reached (``controlPlane.exposure``), through the services against the
world's management cluster: behind the installation's shared address (the providers' SNI router) where it
has one, which is then the default, or a load balancer of the cluster's own. What the control-plane
provider makes of each: ``tests/providers/controlplane/test_sni_mode.py``; the router and the nodes'
path: ``tests/providers/sni/test_router.py``.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from kubernetes import client

from orchestrator.errors import ValidationFailed
from orchestrator.services import clusters
from orchestrator.services.clusters.inputs import exposures
from tests.orchestrator.services.clusterkit import alice, objects_in, spec, written
from tests.orchestrator.services.conftest import MakeContext


def service_type(custom: client.CustomObjectsApi, name: str) -> str:
    [control_plane] = objects_in(custom, "demo", name)["FlexControlPlane"]
    return str(control_plane["spec"]["serviceType"])


def test_without_a_shared_address_each_control_plane_gets_a_load_balancer_of_its_own(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    made = clusters.create_cluster(ctx, spec(ctx, "own"))
    assert made.control_plane.exposure == "loadBalancer"
    assert service_type(custom, "own") == "LoadBalancer"


@override_settings(FLEXPLANE_CONTROL_PLANE_SHARED_PORT="7443")
def test_with_a_shared_address_it_is_the_default_and_a_load_balancer_stays_a_choice(
    make_context: MakeContext, custom: client.CustomObjectsApi, clean: None
) -> None:
    ctx = alice(make_context)
    shared = clusters.create_cluster(ctx, spec(ctx, "shared"))
    own = clusters.create_cluster(ctx, spec(ctx, "own", control_plane_exposure="loadBalancer"))
    assert (shared.control_plane.exposure, own.control_plane.exposure) == ("shared", "loadBalancer")
    assert (service_type(custom, "shared"), service_type(custom, "own")) == ("SNI", "LoadBalancer")
    assert clusters.get_cluster(ctx, "shared").control_plane.exposure == "shared"


@pytest.mark.parametrize(
    ("port", "exposure", "says"),
    [
        ("", "shared", "this installation has no shared control-plane address"),
        ("7443", "nodePort", "it is not offered (offered: shared, loadBalancer)"),
        ("", "SNI", "it is not offered (offered: loadBalancer)"),
    ],
)
def test_an_exposure_not_offered_is_refused_naming_the_field_and_writes_nothing(
    make_context: MakeContext,
    custom: client.CustomObjectsApi,
    clean: None,
    port: str,
    exposure: str,
    says: str,
) -> None:
    ctx = alice(make_context)
    before = written(custom, "demo")  # what other tests of this world left
    with (
        override_settings(FLEXPLANE_CONTROL_PLANE_SHARED_PORT=port),
        pytest.raises(ValidationFailed) as refused,
    ):
        clusters.create_cluster(ctx, spec(ctx, "refused", control_plane_exposure=exposure))
    assert refused.value.field == "control_plane.exposure"
    assert says in refused.value.message
    assert written(custom, "demo") == before  # nothing of this create


@pytest.mark.parametrize("port", ["https", "0", "70000"])
def test_a_shared_port_that_is_no_port_is_a_configuration_error_naming_the_setting(port: str) -> None:
    with (
        override_settings(FLEXPLANE_CONTROL_PLANE_SHARED_PORT=port),
        pytest.raises(ImproperlyConfigured, match="FLEXPLANE_CONTROL_PLANE_SHARED_PORT"),
    ):
        exposures()
