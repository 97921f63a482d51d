"""Real-guest and SSH-host fixtures for every integration test (vmhost.py, sshhost.py)."""

import pytest

from tests.integration.pgserver import postgres_url  # noqa: F401
from tests.integration.sshhost import live_ssh_server, ssh_server  # noqa: F401
from tests.integration.vmhost import distro, launcher  # noqa: F401


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that restart libvirtd (marker `libvirtd_restart`) run after every other test: the
    restart cuts the session launcher's libvirt connection (tests/integration/libvirtd.py)."""
    items.sort(key=lambda item: item.get_closest_marker("libvirtd_restart") is not None)
