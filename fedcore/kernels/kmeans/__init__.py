"""k-means kernels: distances, D^2 (k-means++) sampling, the Lloyd loop and its exact replay."""
