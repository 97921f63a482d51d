"""Hosts guests run on: the lab file, SSH to remote hosts, pushing files, the guest pool."""
