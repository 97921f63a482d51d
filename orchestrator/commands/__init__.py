"""One module per `vmbisect` subcommand: each has `add_parser(sub)` and `run(args) -> int`.

Commands return an exit code and raise VmbisectError subclasses for failures; cli.py turns
those into one-line messages and exit codes.
"""
