"""The measurement layer: kernels (a commit built with a recipe, a file, a stored image), guests
of them on the lab's slots running a workload (guests.PoolMeasurer), and the judge every search
calls (judge.Judge). The seam's types are in orchestrator/ports.py."""
