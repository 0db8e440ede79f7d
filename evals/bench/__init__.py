"""Speed benchmarks: synthetic data roots, timed; commands (`memory bench ...`), never tests."""
