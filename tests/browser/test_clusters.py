"""Kubernetes in the browser: alice creates a cluster, watches it become ready, scales a pool and downloads
its kubeconfig; every page she saw is saved at a desktop's size and a 390 px phone's, where it must not
scroll sideways.

Debian's chromium through Playwright, against the world's portal. The world runs no providers here: the
test plays them (tests.portal.clusterkit), writing the statuses they would write once their work is done,
while the page, polling, shows the cluster get there.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes.config import new_client_from_config
from playwright.sync_api import Page, expect

from devstack.world import World
from orchestrator.models.clusters import MACHINE_DEPLOYMENT
from tests.apikit import GraphQL
from tests.browser.conftest import LoginFn, shoot
from tests.portal.clusterkit import (
    VERSIONS,
    Management,
    cleaned,
    control_plane_up,
    nodes_up,
    prepare,
    self_signed_ca,
    vdc_network,
)

ENDPOINT_HOST = "198.51.100.8"
# The status part reads itself again every 2 s: a change shows within two reads.
LIVE_MS = 10_000


@pytest.fixture(scope="module")
def network(world: World, api: GraphQL) -> Iterator[str]:
    prepare(world, api)
    with vdc_network(api) as made:
        yield made


def test_alice_creates_a_cluster_watches_it_become_ready_scales_a_pool_and_downloads_its_kubeconfig(
    page: Page, login: LoginFn, world: World, network: str, screenshots: Path, tmp_path: Path
) -> None:
    management = Management(world)
    with cleaned(management, "demo", f"b{uuid.uuid4().hex[:8]}") as name:
        login(page, "alice", "/vdc/demo/")
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Kubernetes").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text("Kubernetes")
        page.get_by_role("link", name="Create a cluster").click()
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Kubernetes version").select_option(VERSIONS[0])
        page.get_by_label("Network", exact=True).select_option(network)
        expect(page.get_by_label("Pool name")).to_have_value("workers")
        page.get_by_label("Nodes", exact=True).fill("3")
        page.get_by_label("Compute profile").select_option("small")
        shoot(page, screenshots, "cluster-create")
        page.get_by_role("button", name="Create cluster").click()

        page.wait_for_url(re.compile(rf"/vdc/demo/kubernetes/{name}/$"))
        expect(page.get_by_role("heading", level=1)).to_contain_text(name)
        phase = page.locator("#cluster-status [data-cluster-phase]")
        expect(phase).to_have_attribute("data-cluster-phase", "Provisioning")
        expect(page.locator("[data-kubeconfig-pending]")).to_be_visible()

        ca, key = self_signed_ca(name)  # the providers' work, done
        control_plane_up(management, "demo", name, ENDPOINT_HOST, ca, key)
        nodes_up(management, "demo", name)
        expect(phase).to_have_attribute("data-cluster-phase", "Ready", timeout=LIVE_MS)
        expect(page.locator("#cluster-status [data-cluster-nodes]")).to_have_text("3 of 3 ready")
        expect(page.locator("#cluster-status [data-cluster-endpoint]")).to_have_text(
            f"https://{ENDPOINT_HOST}:6443"
        )
        # The kubeconfig's link shows once the cluster has an endpoint, without a reload.
        expect(page.get_by_role("link", name=f"Download {name}.kubeconfig")).to_be_visible()
        expect(page.locator("[data-kubeconfig-pending]")).to_have_count(0)
        shoot(page, screenshots, "cluster-ready")

        page.get_by_label("Node pool", exact=True).select_option("workers")
        page.get_by_label("Nodes", exact=True).fill("5")
        page.get_by_role("button", name="Scale", exact=True).click()
        expect(page.locator("#messages")).to_contain_text(
            f"Node pool workers of cluster {name} is being scaled to 5."
        )
        expect(phase).to_have_attribute("data-cluster-phase", "Scaling")
        [deployment] = management.objects(MACHINE_DEPLOYMENT, "demo", name)
        assert deployment["spec"]["replicas"] == 5
        nodes_up(management, "demo", name)
        expect(phase).to_have_attribute("data-cluster-phase", "Ready", timeout=LIVE_MS)
        expect(page.locator('#cluster-status tr[data-pool="workers"] [data-pool-nodes]')).to_have_text(
            "5 of 5 ready"
        )

        with page.expect_download() as downloading:
            page.get_by_role("link", name=f"Download {name}.kubeconfig").click()
        download = downloading.value
        assert download.suggested_filename == f"{name}.kubeconfig"
        path = tmp_path / download.suggested_filename
        download.save_as(path)
        loaded = new_client_from_config(config_file=str(path))
        assert loaded.configuration.host == f"https://{ENDPOINT_HOST}:6443"

        page.get_by_role("navigation", name="Main").get_by_role("link", name="Kubernetes").click()
        row = page.locator(f'tr[data-cluster="{name}"]')
        expect(row.locator("[data-cluster-phase]")).to_have_attribute("data-cluster-phase", "Ready")
        expect(row.locator("[data-cluster-nodes]")).to_have_text("5 of 5 ready")
        shoot(page, screenshots, "cluster-list")
