"""Coordinate-descent k-means kernels of [F3KM]: sweeps, statistics and fairness terms."""
