"""The async tests here run on asyncio and on trio, both on the cluster's virtual clock."""

import pytest

aio = pytest.importorskip("kraft_testkit.aio")


@pytest.fixture(params=aio.anyio_backends(), ids=lambda p: p[0])
def anyio_backend(request):
    return request.param
