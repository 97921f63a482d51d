"""Benchmarks (`make bench`): each prints figures and never fails on a slow machine."""
