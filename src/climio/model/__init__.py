"""Model output: gathering and writing domain-decomposed fields (seeds 002, 003, 004)."""
