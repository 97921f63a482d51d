"""The campaign file every kind shares: its keys, parsed and checked, and the workload and
metric it chooses."""
