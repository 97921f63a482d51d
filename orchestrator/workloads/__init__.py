"""Workloads run inside a guest: definitions (workloads/*/workload.yaml), job rendering,
output parsers, system metrics and the runner that turns one run into named metrics."""
