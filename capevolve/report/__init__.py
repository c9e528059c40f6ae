"""Reports written from stored data only."""
