"""Worked examples of plugging your own code into nomad-eval; each is also a usable baseline."""
