"""Real-guest fixtures for every integration test (defined in vmhost.py)."""

from tests.integration.vmhost import distro, launcher  # noqa: F401
