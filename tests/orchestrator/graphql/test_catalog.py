from __future__ import annotations

from tests.support import GraphQL


def test_zones_list_their_hosts_and_whether_each_is_online(api: GraphQL) -> None:
    answer = api("{ zones { id name hosts { name online cordoned } } }", user="alice")
    assert answer.errors == []
    zones = {z["id"]: z for z in answer.data["zones"]}
    assert set(zones) == {"zone-a", "zone-b"}
    assert zones["zone-a"]["name"] == "Zone A"
    assert zones["zone-a"]["hosts"] == [
        {"name": f"pve{n}", "online": True, "cordoned": False} for n in (1, 2, 3)
    ]
