"""The Kubernetes form and a new cluster's page in the browser (issue 37, item 5): the form starts inside
VDC demo's quota with its profiles' sizes and shows what the cluster would take of the quota as the fields
change; after the create, the cluster's page follows it and, once it is Ready, shows its endpoint and its
kubeconfig download without a reload; scaling its pool down asks first (issue 37, item 1).

Debian's chromium through Playwright, against the portal served in this process on the light world; the
tenant clusters' objects are in memory (``tenant_clusters``), where the test plays the providers
(``tests.portal.light.test_cluster_pages.made_ready``) while the page is open.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import yaml
from playwright.sync_api import Page, expect

from tests.apikit import Api
from tests.browser.conftest import LoginFn, shoot
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.light.test_cluster_pages import (
    ENDPOINT_HOST,
    NEW,
    cleaned,
    demo_network,
    made_ready,
    offered,
)

# The status part reads itself again every 2 s: a change shows within two reads.
LIVE_MS = 10_000


def test_alice_makes_a_cluster_that_fits_demo_and_its_page_offers_the_kubeconfig_once_ready(
    page: Page,
    signed_in: LoginFn,
    api: Api,
    tenant_clusters: FakeClusterApi,
    screenshots: Path,
    tmp_path: Path,
) -> None:
    offered(api)
    with demo_network(api) as network, cleaned(tenant_clusters, f"b{uuid.uuid4().hex[:8]}") as name:
        signed_in(page, "alice", NEW)
        expect(page.get_by_role("heading", level=1)).to_contain_text("New Kubernetes cluster")
        profile = page.get_by_label("Compute profile")
        count = page.get_by_label("Nodes", exact=True)
        quota = page.locator("#quota")
        # Inside the quota from the start: three of the smallest nodes, each profile with its size.
        expect(profile).to_have_value("small")
        expect(profile.locator("option:checked")).to_have_text("small: 1 vCPU, 1 GiB")
        expect(profile.locator('option[value="large"]')).to_have_text("large: 4 vCPU, 8 GiB")
        expect(page.get_by_label("Storage profile").locator("option:checked")).to_have_text(
            "standard: 20 GiB disk per node"
        )
        expect(count).to_have_value("3")
        expect(quota.get_by_role("columnheader", name="This cluster")).to_be_visible()
        expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("5")
        expect(quota.locator("[data-over]")).to_have_count(0)

        # The figures follow the fields: large nodes go over, fewer of them fit again.
        profile.select_option("large")
        expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("14")
        expect(quota.locator('[data-over="vcpus"]')).to_have_text(
            "This cluster needs more vCPUs than the quota has left."
        )
        expect(quota.locator('[data-quota="vcpus"]')).to_contain_text("(over)")
        shoot(page, screenshots, "item5-cluster-form-over")
        count.fill("1")
        expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("6")
        expect(quota.locator("[data-over]")).to_have_count(0)
        page.get_by_label("Control-plane replicas").fill("3")
        expect(quota.locator('[data-quota="memory_mib"] [data-asked]')).to_have_text(f"{3 * 1024 + 8192} MiB")
        page.get_by_label("Control-plane replicas").fill("2")
        profile.select_option("small")
        count.fill("3")
        expect(quota.locator('[data-quota="vcpus"] [data-asked]')).to_have_text("5")
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Network", exact=True).select_option(network)
        shoot(page, screenshots, "item5-cluster-form")

        page.get_by_role("button", name="Create cluster").click()
        page.wait_for_url(re.compile(rf"/vdc/demo/kubernetes/{name}/$"))
        expect(page.locator("#messages")).to_contain_text(f"Cluster {name} is created.")
        phase = page.locator("#cluster-status [data-cluster-phase]")
        expect(phase).to_have_attribute("data-cluster-phase", "Provisioning")
        expect(page.locator("[data-kubeconfig-pending]")).to_be_visible()
        expect(page.locator("[data-following]")).to_be_visible()
        shoot(page, screenshots, "item5-cluster-provisioning")

        made_ready(tenant_clusters, name)  # the providers' work, done while the page is open
        expect(phase).to_have_attribute("data-cluster-phase", "Ready", timeout=LIVE_MS)
        expect(page.locator("#cluster-status [data-cluster-endpoint]")).to_have_text(
            f"https://{ENDPOINT_HOST}:6443"
        )
        expect(page.locator("#cluster-status [data-cluster-nodes]")).to_have_text("3 of 3 ready")
        download = page.get_by_role("link", name=f"Download {name}.kubeconfig")
        expect(download).to_be_visible()
        expect(page.locator("[data-kubeconfig-pending]")).to_have_count(0)
        expect(page.locator("[data-following]")).to_have_count(0)
        shoot(page, screenshots, "item5-cluster-ready")

        with page.expect_download() as downloading:
            download.click()
        saved = tmp_path / downloading.value.suggested_filename
        downloading.value.save_as(saved)
        assert saved.name == f"{name}.kubeconfig"
        loaded = yaml.safe_load(saved.read_text())
        assert loaded["clusters"][0]["cluster"]["server"] == f"https://{ENDPOINT_HOST}:6443"

        # Fewer nodes take VMs away: the page asks first, Cancel keeps them.
        scale = page.locator("#scale-form")
        scale.get_by_label("Nodes").fill("1")
        scale.get_by_role("button", name="Scale").click()
        expect(page.get_by_role("heading", level=1)).to_have_text(
            f"Remove 2 nodes of pool workers of cluster {name}?"
        )
        expect(page.locator("#confirm-explanation")).to_contain_text("This cannot be undone.")
        shoot(page, screenshots, "confirm-cluster-scale-down")
        page.get_by_role("link", name="Cancel").click()
        expect(page.locator("#cluster-status [data-cluster-nodes]")).to_have_text("3 of 3 ready")
        scale.get_by_label("Nodes").fill("1")
        scale.get_by_role("button", name="Scale").click()
        page.get_by_role("button", name="Remove 2 nodes").click()
        expect(page.locator("#messages")).to_contain_text(
            f"Node pool workers of cluster {name} is being scaled to 1."
        )
