"""Fixtures of the GraphQL suites."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from devstack.world import World
from tests.apikit import GraphQL
from tests.vmkit import vm_names


@pytest.fixture
def vm_name(api: GraphQL, world: World) -> Iterator[Callable[[str], str]]:
    with vm_names(api, world) as name:
        yield name
