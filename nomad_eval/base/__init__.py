"""Foundations every layer may use: errors, console, atomic files, locks, paths."""
