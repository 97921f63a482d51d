"""The SSH host fixtures for the end-to-end tests that bisect over two hosts (tests/integration/sshhost.py)."""

from tests.integration.sshhost import live_ssh_server, ssh_server  # noqa: F401
