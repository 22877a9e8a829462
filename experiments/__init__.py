"""Reproductions of the seed papers' tables and figures: ``python -m experiments NAME``."""
