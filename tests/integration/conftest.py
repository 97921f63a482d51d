"""Real-guest and SSH-host fixtures for every integration test (vmhost.py, sshhost.py)."""

from tests.integration.sshhost import live_ssh_server, ssh_server  # noqa: F401
from tests.integration.vmhost import distro, launcher  # noqa: F401
