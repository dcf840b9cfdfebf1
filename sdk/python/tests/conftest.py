from __future__ import annotations

from collections.abc import Iterator

import pytest

from .mock_providers import MockProvider
from .support import FaultProxy, Product, api_url, new_product


@pytest.fixture
def product() -> Product:
    return new_product(api_url())


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    p = FaultProxy(api_url())
    yield p
    p.close()


@pytest.fixture
def provider() -> Iterator[MockProvider]:
    p = MockProvider()
    yield p
    p.close()
