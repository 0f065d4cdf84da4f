from __future__ import annotations

import requests

from devstack.world import World


def test_the_home_page_points_at_the_api(world: World) -> None:
    response = requests.get(f"{world.url}/", timeout=10)
    assert response.status_code == 200
    assert "/graphql" in response.text
    assert response.headers["X-Frame-Options"] == "DENY"
