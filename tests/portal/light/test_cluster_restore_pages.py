"""A cluster's etcd snapshots on its page, and a restore from one, as a browser does it: the snapshots listed
with a "Restore…" link each, a confirmation saying what a restore does, the request written on the
FlexControlPlane once confirmed, and the status part following the restore until it ended.

Served and signed in as in test_cluster_pages.py; no provider runs: the test writes what the control-plane
provider writes in the FlexControlPlane's status (its snapshots listed, the restore's phases).
"""

from __future__ import annotations

import html
import re
from typing import Any

import requests

from orchestrator.models.clusters import CLUSTER_NAME_LABEL, FLEX_CONTROL_PLANE, namespace_of
from tests.orchestrator.fakekube import FakeClusterApi
from tests.portal.light.test_cluster_pages import created, network
from tests.portal.pagekit import HTMX, get, post
from tests.portal.served import LightPortal

__all__ = ["network"]  # the module's fixture: a network of VDC demo for the clusters' nodes

OLDER, NEWER = "20261201T100000Z-a1b2c3.fpdump", "20261201T110000Z-d4e5f6.fpdump"
SNAPSHOTS = {
    "listedAt": "2026-12-01T11:02:00Z",
    "snapshots": [
        {"name": NEWER, "time": "2026-12-01T11:00:00Z", "size": 40960},
        {"name": OLDER, "time": "2026-12-01T10:00:00Z", "size": 36864},
    ],
}


def text(page: str) -> str:
    """The page's words, as read."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def provider_writes(clusters: FakeClusterApi, name: str, status: dict[str, Any]) -> None:
    clusters.patch(FLEX_CONTROL_PLANE, namespace_of("demo"), name, {"status": status})


def asked_restore(clusters: FakeClusterApi, name: str) -> dict[str, Any]:
    [plane] = clusters.list(FLEX_CONTROL_PLANE, namespace_of("demo"), f"{CLUSTER_NAME_LABEL}={name}")
    return dict(plane.spec.get("restore") or {})


def test_the_page_lists_the_snapshots_and_a_restore_asks_first_then_is_followed_to_its_end(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    with created(site, alice, network, tenant_clusters) as name:
        path = f"/vdc/demo/kubernetes/{name}/"
        assert "data-no-snapshots" in get(alice, site, path).text
        provider_writes(tenant_clusters, name, {"etcdBackup": SNAPSHOTS})

        page = get(alice, site, path).text
        rows = re.findall(r'<tr [^>]*data-snapshot="([^"]+)"', page)
        assert rows == [NEWER, OLDER]  # newest first
        assert "2026-12-01 10:00:00" in page
        assert "36.0\xa0KB" in html.unescape(page)
        link = f'href="{path}restore/?snapshot={OLDER}"'
        assert link in page

        asked = get(alice, site, f"{path}restore/?snapshot={OLDER}")
        assert asked.status_code == 200
        said = text(asked.text)
        assert f"Restore cluster {name} to 2026-12-01 10:00:00?" in said
        assert "Its control plane stops while the snapshot is restored" in said
        assert "Its nodes and the pods on them are not touched" in said
        assert "what was made or changed since is lost" in said
        assert f'name="snapshot" value="{OLDER}"' in asked.text
        assert f'href="{path}"' in asked.text  # Cancel: back to the cluster, nothing sent
        assert asked_restore(tenant_clusters, name) == {}

        done = post(alice, site, f"{path}restore/", {"snapshot": OLDER, "confirm": "yes"})
        assert done.status_code == 303
        assert done.headers["Location"] == path
        request = asked_restore(tenant_clusters, name)
        assert request["snapshot"] == OLDER

        polled = get(alice, site, path, **HTMX, **{"HX-Target": "cluster-status"})
        assert 'data-restore="Requested"' in polled.text
        assert "hx-trigger=" in polled.text  # a restore under way: the part keeps reading itself
        assert 'data-action-link="restore"' not in polled.text  # no second restore meanwhile

        again = post(alice, site, f"{path}restore/", {"snapshot": NEWER, "confirm": "yes"})
        assert again.status_code == 409
        assert "under way" in text(again.text)

        running = {"id": request["id"], "snapshot": OLDER, "phase": "Restoring"}
        running |= {
            "message": "restoring etcd: 0 of 1 member(s) restored",
            "startedAt": "2026-12-01T11:05:00Z",
        }
        provider_writes(tenant_clusters, name, {"restore": running})
        polled = get(alice, site, path, **HTMX, **{"HX-Target": "cluster-status"})
        assert 'data-restore="Restoring"' in polled.text
        assert "0 of 1 member(s) restored" in polled.text

        ended = running | {
            "phase": "Succeeded",
            "message": "etcd restored",
            "finishedAt": "2026-12-01T11:09:00Z",
        }
        provider_writes(tenant_clusters, name, {"restore": ended})
        polled = get(alice, site, path, **HTMX, **{"HX-Target": "cluster-status"})
        assert 'data-restore="Succeeded"' in polled.text
        assert "ended 2026-12-01 11:09:00" in polled.text
        assert "hx-trigger=" not in polled.text  # Ready, and the restore ended: it stops asking
        assert 'data-action-link="restore"' in polled.text


def test_a_snapshot_no_longer_listed_is_refused_on_the_confirmation_page(
    site: LightPortal, alice: requests.Session, network: str, tenant_clusters: FakeClusterApi
) -> None:
    with created(site, alice, network, tenant_clusters) as name:
        provider_writes(tenant_clusters, name, {"etcdBackup": SNAPSHOTS})
        path = f"/vdc/demo/kubernetes/{name}/restore/"

        refused = post(alice, site, path, {"snapshot": "20200101T000000Z-000000.fpdump", "confirm": "yes"})

        assert refused.status_code == 400
        assert "has no snapshot" in text(refused.text)
        assert asked_restore(tenant_clusters, name) == {}
