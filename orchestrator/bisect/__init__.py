"""The bisection: statistics (pure), verdicts (pure), and the engine that drives the ports."""
