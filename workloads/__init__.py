"""One folder per workload (lkp-tests layout): workload.yaml, the tool (__init__.py), testdata/."""
